"""``OUT/report.html``: one self-contained page (inline CSS, PNG figures as data URIs, no URLs),
rendered by jinja2 with autoescape from ``templates/report.html.j2``.

Built from the typed report alone (:class:`~benchsuite.results.schema.Analysis`); every text is
escaped by the template engine, the captions are in :mod:`.captions`. The page gives the answer
first (the headline, then the mixer x track verdict matrix), then the details. The same figures
are written to ``OUT/plots/*.png`` for pasting into papers. docs/report.md explains each section.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from markupsafe import Markup

from benchsuite.output import captions, numbers
from benchsuite.output.canvas import Plot, css_pixels, data_uri, slug
from benchsuite.output.costs import cost_rows
from benchsuite.output.headline import (
    SUITE_COLUMNS,
    Line,
    headline,
    line_interval,
    ratio,
    suite_caption,
    suite_headline,
    suite_headline_rows,
    suite_interval,
    time_text,
    tracks_text,
)
from benchsuite.output.left_out import left_out_header, left_out_rows
from benchsuite.output.numbers import finite, num, options_text, pct, summary
from benchsuite.output.palette import verdict
from benchsuite.output.plots import heatmap_order, make_plots, write_plots
from benchsuite.output.tables import by_suite_effect
from benchsuite.output.track_tables import (
    axes_section,
    choice,
    improvement,
    in_points,
    p_text,
    resolution_text,
    rows_by_effect,
)
from benchsuite.results.cell_schema import TrackResult
from benchsuite.results.flags import track_reasons
from benchsuite.results.schema import Analysis
from benchsuite.results.summaries import budget_words
from benchsuite.vocabulary import Problem, Scale

FILENAME = "report.html"
SCALING_PAGE = "scaling.html"  # written by benchsuite scale (output/scaling.py)


@cache
def environment() -> Any:
    """The pages' jinja2 environment (``templates/``): autoescape on, so every value is escaped
    unless a template builds the markup itself; an undefined name is an error; the number
    filters are the tables' (:mod:`.numbers`). jinja2 is imported on first use."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("benchsuite.output", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        num=num, pct=pct, config=numbers.config, slug=slug, data_uri=data_uri, css_px=css_pixels
    )
    env.globals.update(
        captions=captions,
        verdict_look=verdict,
        improvement=improvement,
        in_points=in_points,
        p_text=p_text,
        config_choice=choice,
    )
    return env


def render(template: str, **context: Any) -> str:
    """``templates/<template>`` rendered with ``context``."""
    return environment().get_template(template).render(**context)


def scale_text(entry: TrackResult) -> str:
    """How the improvement, CI and MDE columns of a track are scaled."""
    text = captions.PAGE_SCALE[Scale(entry.facts.scale)]
    return (
        f"{text}; {captions.POINTS_NOTE}"
        if entry.facts.scale != Scale.LOG and entry.in_points()
        else text
    )


def family_text(report: Analysis) -> str:
    """The Holm family and alpha the verdicts use, as report.json records them."""
    design = report.design
    partial = (
        f" (partial: {design.finished} of {design.comparisons} finished)" if design.partial else ""
    )
    needs = (
        f"; no per-track verdict: the run plans the claims across tracks, per-track verdicts "
        f"need at least {design.min_seeds_for_significance} seeds (--design per-track into the "
        f"same --out plans {design.per_track_seeds}: one discordant seed allowed)"
        if design.suite_claims() and design.seeds < design.min_seeds_for_significance
        else ""
    )
    return (
        f"Holm over {design.comparisons} comparisons{partial}; MDE and first Holm step at "
        f"α = {num(design.verdict_alpha, 2)}{needs}"
    )


def first_alpha(entry: TrackResult) -> float | None:
    """The alpha of the track's verdicts (every comparison of a run shares it)."""
    first = entry.fullest()
    return first.comparison.alpha if first else None


def mde_text(entry: TrackResult) -> str:
    """The median MDE of a track's comparisons, with its range."""
    values = [
        v for c in entry.comparisons.values() if (v := finite(c.comparison.mde_rel_pct)) is not None
    ]
    first = entry.fullest()
    if first is not None and first.comparison.detectable is False:
        return "none (the seeds cannot reach α)"
    if not values:
        return "–"
    if len(values) == 1:
        return pct(values[0], signed=False)
    return (
        f"{pct(statistics.median(values), signed=False)} (range "
        f"{pct(min(values), signed=False)}–{pct(max(values), signed=False)})"
    )


def resolution_sentence(entry: TrackResult) -> str:
    """The track's resolving power as a sentence of its table's caption ("" without one)."""
    text = resolution_text(entry)
    return f" {text[:1].upper()}{text[1:]}." if text else ""


def _facts(report: Analysis) -> list[tuple[str, Any]]:
    env, settings = report.environment, report.settings
    rows = [
        ("date", env.date),
        ("versions", ", ".join(f"{k} {v}" for k, v in env.versions.items())),
        ("python", env.python),
        ("git revision", env.git_revision),
        ("platform", env.platform),
        (
            "device",
            f"{env.device or '–'} ({env.cpus or '–'} CPUs, "
            f"{env.threads_per_job or '–'} threads per job)",
        ),
        ("preset", settings.preset),
        ("budget overrides", ", ".join(f"{k}={v}" for k, v in settings.budget.items()) or "none"),
        ("mixer options", options_text({m: o for m, o in settings.mixer_options.items() if o})),
        ("baseline", report.baseline),
        ("mixers", ", ".join(settings.mixers or ())),
        ("tracks", ", ".join(settings.tracks or ())),
        ("evaluation seeds", settings.seeds),
        ("tuning", "each evaluation seed chooses its config on its own validation split"),
        ("equivalence margin", pct(100 * (finite(settings.margin) or 0), signed=False)),
        ("family size (Holm)", report.design.comparisons),
        ("min seeds for Holm significance", report.design.min_seeds_for_significance),
    ]
    return [(k, "–" if v is None or v == "" else str(v)) for k, v in rows]


def _datasets(report: Analysis) -> list[tuple[str, ...]]:
    rows = []
    for track, entry in report.tracks.items():
        rows.append(
            (
                track,
                entry.facts.dataset,
                "yes" if entry.facts.verified else "no",
                f"{entry.facts.metric} ({entry.facts.direction})",
                str(entry.facts.tokens),
                budget_words(entry.facts.budget),
                str(len(entry.facts.grid)),
                mde_text(entry),
                num(entry.resolution.resolving_power, 3) if entry.resolution else "–",
                entry.facts.budget_signature,
            )
        )
    return rows


def _headline_rows(report: Analysis, lines: list[Line]) -> list[tuple[str, ...]]:
    return [
        (
            line.mixer,
            tracks_text(line.better),
            tracks_text(line.worse),
            tracks_text(line.equivalent),
            tracks_text(
                line.inconclusive + [f"{track} (needs more seeds)" for track in line.undecided]
            ),
            f"{num(line.suite_effect, 3)} {line_interval(line, 3)}",
            line.suite_verdict or "–",
            ratio(line.params_ratio),
            time_text(line),
        )
        for line in lines
    ]


def _across_rows(report: Analysis) -> list[tuple[str, ...]]:
    across = report.across_tracks
    if across is None:
        return []
    rows = []
    for mixer in by_suite_effect(across):
        row = across.mixers[mixer]
        counts = "/".join(
            "–" if v is None else str(v)
            for v in (
                row.tracks_won,
                row.tracks_lost,
                row.tracks_equivalent,
                row.tracks_inconclusive,
                row.tracks_needing_seeds,
            )
        )
        rows.append(
            (
                mixer,
                str(row.n_tracks),
                f"{num(row.suite_effect, 3)} "
                + suite_interval(row.suite_effect_ci95, row.suite_test.p_holm, across.alpha, 3),
                f"{num(row.suite_test.p_value, 3)} ({num(row.suite_test.p_holm, 3)})",
                row.shown_verdict(),
                summary(row.iqm, row.iqm_ci95, 3),
                summary(row.iqm_diff, row.iqm_diff_ci95, 3),
                summary(row.prob_improvement, row.prob_improvement_ci95, 2),
                counts,
                num(across.ranks.average_rank.get(mixer), 3),
            )
        )
    return rows


def _problems(report: Analysis) -> list[tuple[str, ...]]:
    rows = [(s.track, s.mixer, Problem.SKIPPED, "", s.said, "") for s in report.skipped]
    rows += [
        (f.track, f.mixer, Problem.FAILED, str(f.seed), f.reason or "", f.traceback or "")
        for f in report.failures
    ]
    rows += [
        (u.track, u.mixer, Problem.UNDERTRAINED, "", u.reason, "")
        for u in report.learning_curves.undertrained
    ]
    return rows


def flag_rows(entry: TrackResult) -> list[tuple[str, str, str]]:
    """Every raised flag of a track's comparisons, with its one-line reason."""
    return [
        (mixer, flag, track_reasons(entry, mixer).get(flag, ""))
        for mixer, cell in entry.comparisons.items()
        for flag in cell.comparison.flags
    ]


def signature_rows(entry: TrackResult) -> list[tuple[str, ...]]:
    """Predicted vs observed probe values of each mixer's signature, and the baseline's."""
    return [
        (
            mixer,
            probe,
            num(predicted, 6),
            num(sig.observed.get(probe), 6),
            num(sig.baseline_observed.get(probe), 6),
            num(sig.tolerance, 3),
            "yes" if sig.confirmed else "no",
        )
        for mixer, cell in entry.comparisons.items()
        if (sig := cell.signature)
        for probe, predicted in sig.predicted.items()
    ]


def swept_mixers(entry: TrackResult) -> list[str]:
    """The mixers with a stored sweep, the baseline first."""
    return [n for n in entry.ordered() if entry.mixers[n].sweep]


def render_html(report: Analysis, plots: Sequence[Plot], scaling_page: str | None = None) -> str:
    """The whole page as text (``scaling_page``: the scaling page beside it, linked if given)."""
    tracks, mixers = heatmap_order(report)
    lines = headline(report)
    cost_names, cost_cells = cost_rows(report)
    axes = Markup(axes_section(report))  # escaped where it is built (track_tables.py)
    nav = [
        ("headline", "Headline"),
        ("matrix", "Verdict matrix"),
        ("summary", "Summary"),
        *[(f"track-{slug(t)}", f"Track {t}") for t in report.tracks],
        *([("axes", "Track variants side by side")] if axes else []),
        ("across", "Across tracks"),
        ("costs", "Cost per mixer"),
        ("problems", "Skipped, failed and undertrained"),
    ]
    return render(
        "report.html.j2",
        report=report,
        plots={(p.section, p.kind): p for p in plots},
        lines=lines,
        headline_rows=_headline_rows(report, lines),
        suite_headline=suite_headline(report),
        suite_columns=SUITE_COLUMNS,
        suite_rows=[
            (*row[:-1], time_text(line))
            for line, row in zip(lines, suite_headline_rows(lines, digits=3), strict=True)
        ]
        if suite_headline(report)
        else [],
        suite_caption=suite_caption(report) if suite_headline(report) else "",
        matrix_tracks=tracks,
        matrix_mixers=mixers,
        nav=nav,
        scaling_page=scaling_page,
        facts=_facts(report),
        datasets=_datasets(report),
        family=family_text(report),
        scale_text=scale_text,
        resolution_sentence=resolution_sentence,
        first_alpha=first_alpha,
        rows_by_effect=rows_by_effect,
        flag_rows=flag_rows,
        track_reasons=track_reasons,
        signature_rows=signature_rows,
        swept_mixers=swept_mixers,
        across_rows=_across_rows(report),
        left_out_header=left_out_header(report.across_tracks) if report.across_tracks else [],
        left_out_rows=left_out_rows(report.across_tracks, digits=3),
        cost_keys=cost_names,
        cost_rows=cost_cells,
        cost_caption=captions.costs(cost_names),
        problems=_problems(report),
        axes=axes,
    )


def write_html(report: Analysis, out: Path | str) -> Path:
    """Write ``OUT/report.html`` and ``OUT/plots/*.png`` from a report; returns the HTML path.
    The page links ``OUT/scaling.html`` when ``benchsuite scale`` wrote one there."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots = make_plots(report)
    write_plots(plots, out)
    page = SCALING_PAGE if (out / SCALING_PAGE).is_file() else None
    path = out / FILENAME
    path.write_text(render_html(report, plots, page), encoding="utf-8")
    return path

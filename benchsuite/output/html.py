"""``OUT/report.html``: one self-contained page (inline CSS, PNG figures as data URIs, no URLs).

Built from the report dict alone (see :mod:`benchsuite.results.analysis`); every text is escaped.
The same figures are written to ``OUT/plots/*.png`` for pasting into papers. docs/report.md
explains each section.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path

from benchsuite.output import numbers
from benchsuite.output.axes import axes_section
from benchsuite.output.canvas import Plot, slug
from benchsuite.output.canvas import figure_html as _figure
from benchsuite.output.numbers import finite, num, pct
from benchsuite.output.palette import verdict as verdict_look
from benchsuite.output.plots import make_plots, write_plots
from benchsuite.output.tables import POINTS_NOTE, in_points, suite_verdict
from benchsuite.results.curves import RULE

FILENAME = "report.html"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
margin:0 auto;max-width:1200px;padding:1em 2em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;
margin-top:2em}h3{margin-top:1.5em}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:13px}
th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{caption-side:bottom;text-align:left;color:#555;font-size:12px;padding-top:3px}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:12px}
.warning{background:#fff4d6;border-left:4px solid #e0a800;padding:.5em 1em}
.muted{color:#666}nav ul{columns:3}code,pre{font-size:12px}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;max-height:20em;overflow:auto}
.verdict{padding:1px 6px;border-radius:3px;white-space:nowrap}
"""


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], caption: str = "",
           numeric: Sequence[int] = ()) -> str:  # fmt: skip
    """A plain table; cells are already-escaped HTML, header and caption are escaped here."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(
            f"<td class=num>{cell}</td>" if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        ) + "</tr>"
        for row in rows
    )  # fmt: skip
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _verdict(verdict: str | None) -> str:
    """A verdict cell: its symbol and name on its colour (never the colour alone)."""
    if not verdict:
        return "–"
    look = verdict_look(verdict)
    return (f'<span class=verdict style="background:{look.colour}">{escape(look.symbol)} '
            f"{escape(verdict)}</span>")  # fmt: skip


def _first(entry: dict) -> dict:
    """The track's first comparison (every comparison of a run shares its alpha and family)."""
    return next(iter((entry.get("comparisons") or {}).values()), {}).get("comparison") or {}


def _scale_text(entry: dict) -> str:
    """How the improvement, CI and MDE columns of a track are scaled."""
    if entry.get("scale") == "log":
        return ("improvement, CI and MDE from paired log-ratios, shown as 1 − the geometric-mean "
                "ratio mixer/baseline in % (never beyond +100%)")  # fmt: skip
    text = "improvement, CI and MDE from paired differences, as % of the baseline mean"
    return f"{text}; {POINTS_NOTE}" if in_points(entry) else text


def _family_text(report: dict) -> str:
    """The Holm family and alpha the verdicts use, as report.json records them."""
    design = report.get("design") or {}
    alpha = design.get("verdict_alpha")
    partial = (f" (partial: {design.get('finished')} of {design.get('comparisons')} finished)"
               if design.get("partial") else "")  # fmt: skip
    return (f"Holm over {design.get('comparisons', '–')} comparisons{partial}; MDE and first "
            f"Holm step at α = {num(alpha, 2)}")  # fmt: skip


def _mde_text(entry: dict) -> str:
    values = [
        v for c in entry.get("comparisons", {}).values()
        if (v := finite((c.get("comparison") or {}).get("mde_rel_pct"))) is not None
    ]  # fmt: skip
    if _first(entry).get("detectable") is False:
        return "none (the seeds cannot reach α)"
    if not values:
        return "–"
    if len(values) == 1:
        return pct(values[0], signed=False)
    return (
        f"{pct(statistics.median(values), signed=False)} (range {pct(min(values), signed=False)}–"
        f"{pct(max(values), signed=False)})"
    )


def summary_section(report: dict) -> str:
    """Where and how the run was made, the datasets used per track and the design's power."""
    env, settings, design = (report.get(k) or {} for k in ("environment", "settings", "design"))
    versions = env.get("versions") or {}
    overrides = settings.get("budget") or {}
    facts = [
        ("date", env.get("date")),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items())),
        ("python", env.get("python")),
        ("git revision", env.get("git_revision")),
        ("platform", env.get("platform")),
        ("device", f"{env.get('device', '–')} ({env.get('cpus', '–')} CPUs, "
                   f"{env.get('threads_per_job', '–')} threads per job)"),
        ("preset", settings.get("preset")),
        ("budget overrides", ", ".join(f"{k}={v}" for k, v in overrides.items()) or "none"),
        ("baseline", settings.get("baseline")),
        ("mixers", ", ".join(settings.get("mixers") or [])),
        ("tracks", ", ".join(settings.get("tracks") or [])),
        ("evaluation seeds", settings.get("seeds")),
        ("tuning", "each evaluation seed chooses its config on its own validation split"),
        ("equivalence margin", pct(100 * (finite(settings.get("margin")) or 0), signed=False)),
        ("family size (Holm)", design.get("comparisons")),
        ("min seeds for Holm significance", design.get("min_seeds_for_significance")),
    ]  # fmt: skip
    rows = [(escape(k), escape("–" if v is None or v == "" else str(v))) for k, v in facts]
    parts = ["<h2 id=summary>Summary</h2>"]
    if design.get("warning"):
        parts.append(f"<p class=warning>design: {escape(design['warning'])}</p>")
    parts.append(_table(("", "value"), rows))
    datasets = []
    for track, entry in report.get("tracks", {}).items():
        budget = entry.get("budget") or {}
        datasets.append((
            escape(track), escape(str(entry.get("dataset", "–"))),
            "yes" if entry.get("verified", True) else "<b>no</b>",
            escape(f"{entry.get('metric')} ({entry.get('direction')})"),
            escape(str(entry.get("tokens", "–"))),
            escape(", ".join(f"{k} {budget[k]}" for k in ("steps", "batch_size", "dim", "depth")
                             if k in budget)),
            escape(str(len(entry.get("grid") or []))),
            escape(_mde_text(entry)),
            f"<code>{escape(str(entry.get('budget_signature', '–')))}</code>",
        ))  # fmt: skip
    if datasets:
        parts.append("<h3>Datasets and design per track</h3>")
        parts.append(_table(
            ("track", "dataset actually used", "verified", "metric", "tokens", "budget",
             "sweep configs", "MDE (median over comparisons)", "budget signature"),
            datasets,
            "MDE: the smallest improvement the paired test would detect with 80% power at "
            f"α = {num((design or {}).get('verdict_alpha'), 2)} (Holm's first step over "
            f"{design.get('comparisons', '–')} comparisons; observed spread of the per-seed "
            "differences), on each track's scale: 1 − the geometric-mean ratio for log-ratio "
            "tracks, % of the baseline mean otherwise; none: the seeds cannot reach that α.",
        ))  # fmt: skip
    return "\n".join(parts)


def comparison_table(entry: dict, family: str = "") -> str:
    """The track's comparison table, baseline first (``family``: the Holm sentence)."""
    rows = []
    points = in_points(entry)
    baseline = entry.get("baseline")
    names = list(entry.get("mixers", {}))
    names = ([baseline] if baseline in names else []) + [n for n in names if n != baseline]
    for mixer in names:
        arm = entry["mixers"][mixer]
        full = arm.get("full") or {}
        spread = f"{num(full.get('mean'))} ± {num(full.get('std'), 2)}"
        diverged = f"{arm.get('diverged', 0)}/{full.get('n', '–')}"
        cell = entry.get("comparisons", {}).get(mixer)
        label = escape(mixer) + (" <span class=muted>(baseline)</span>" if mixer == baseline
                                 else "")  # fmt: skip
        config = escape(numbers.config(arm.get("best_cfg") or {}))
        if arm.get("edge_of_grid"):
            config += " <span class=muted>(edge)</span>"
        if cell is None:
            flags = "undertrained" if arm.get("undertrained") else "–"
            rows.append((label, config, escape(spread), diverged,
                         *["–"] * (7 if points else 6), flags))  # fmt: skip
            continue
        c = cell.get("comparison") or {}
        lo, hi = c.get("ci95_rel_pct") or (None, None)
        dlo, dhi = (100 * v if v is not None else None for v in c.get("ci95_diff") or (None, None))
        diff = c.get("improvement_diff")
        in_pt = escape(f"{num(None if diff is None else 100 * diff, 3)} [{num(dlo, 3)}, "
                       f"{num(dhi, 3)}]")  # fmt: skip
        mde = ("none" if c.get("detectable") is False
               else pct(c.get("mde_rel_pct"), signed=False))  # fmt: skip
        rows.append((
            label, config, escape(spread), diverged,
            escape(f"{pct(c.get('improvement_rel_pct'))} [{pct(lo)}, {pct(hi)}]"),
            *([in_pt] if points else []),
            escape(num(c.get("p_value"), 3)), escape(num(c.get("p_holm"), 3)),
            escape(mde),
            escape(f"{c.get('wins', '–')}/{c.get('ties', '–')}/{c.get('losses', '–')}"),
            _verdict(c.get("verdict")), _flag_cell(c.get("flags") or [],
                                                   cell.get("flag_reasons") or {}),
        ))  # fmt: skip
    shift = 1 if points else 0
    first = _first(entry)
    return _table(
        ("mixer", "chosen config", f"test {entry.get('metric')} mean ± sd", "diverged",
         "improvement [95% CI]", *(["Δ pt [95% CI]"] if points else []), "p", "Holm p", "MDE",
         "wins/ties/losses", "verdict", "flags"),
        rows,
        f"{entry.get('metric')} ({entry.get('direction')}); improvement > 0 means better than "
        f"{baseline}; {_scale_text(entry)}; p: paired sign-flip test; Holm p: adjusted over "
        f"every comparison of the run ({family}); significant: Holm p < "
        f"{num(first.get('alpha'), 2)} and the 95% CI excludes 0; chosen config: the one most "
        "seeds chose on their own validation split (a tie goes to the best validation mean).",
        numeric=(2, 5 + shift, 6 + shift, 7 + shift),
    )  # fmt: skip


def sweep_table(entry: dict) -> str:
    """Mean validation metric of every grid config (rows) for every mixer (columns)."""
    names = [n for n in entry.get("mixers", {}) if entry["mixers"][n].get("sweep")]
    if not names:
        return ""
    grid = entry.get("grid") or [row.get("cfg", {}) for row in entry["mixers"][names[0]]["sweep"]]
    rows = []
    for index, config in enumerate(grid):
        row = [escape(str(index)), escape(numbers.config(config))]
        for name in names:
            sweep = entry["mixers"][name]["sweep"]
            value = num(sweep[index].get("mean")) if index < len(sweep) else "–"
            chosen = entry["mixers"][name].get("best_index") == index
            row.append(f"<b>{escape(value)} ★</b>" if chosen else escape(value))
        rows.append(row)
    return _table(
        ("#", "config", *names), rows,
        f"mean val.{entry.get('metric')} over the evaluation seeds (each tunes on its own "
        "validation split); ★ = the config most seeds chose (ties: the best validation mean), "
        "not necessarily the best mean in its column",
        numeric=tuple(range(2, 2 + len(names))),
    )  # fmt: skip


def signature_table(entry: dict) -> str:
    """Predicted vs observed probe values of each mixer's signature, and the baseline's."""
    rows = []
    for mixer, cell in entry.get("comparisons", {}).items():
        signature = cell.get("signature")
        if not signature:
            continue
        for probe, predicted in (signature.get("predicted") or {}).items():
            rows.append((
                escape(mixer), escape(probe), escape(num(predicted, 6)),
                escape(num((signature.get("observed") or {}).get(probe), 6)),
                escape(num((signature.get("baseline_observed") or {}).get(probe), 6)),
                escape(num(signature.get("tolerance"), 3)),
                "yes" if signature.get("confirmed") else "<b>no</b>",
            ))  # fmt: skip
    if not rows:
        return ""
    return "<h3>Mechanism signatures</h3>" + _table(
        ("mixer", "probe", "predicted", "observed", "baseline observed", "tolerance", "confirmed"),
        rows,
        "measured on the trained model of the first evaluation seed; confirmed when "
        "|observed − predicted| ≤ tolerance",
        numeric=(2, 3, 4, 5),
    )  # fmt: skip


def track_section(track: str, entry: dict, plots: dict[tuple[str, str], Plot],
                  family: str = "") -> str:  # fmt: skip
    """One track: comparison table, per-seed plot, sweep plot and table, signatures."""
    parts = [
        f'<h2 id="track-{slug(track)}">Track {escape(track)}</h2>',
        f"<p>{escape(str(entry.get('dataset', '')))} — {escape(str(entry.get('metric')))} "
        f"({escape(str(entry.get('direction')))}), baseline {escape(str(entry.get('baseline')))}"
        "</p>",
    ]
    if not entry.get("mixers"):
        parts.append("<p class=muted>no finished evaluation runs on this track.</p>")
        return "\n".join(parts)
    if not entry.get("comparisons"):
        parts.append("<p class=warning>no comparisons: the baseline has no results here.</p>")
    parts.append(comparison_table(entry, family))
    parts.append(flag_list(entry))
    parts.append(_figure(plots.get((track, "forest")),
                         "Every comparison's improvement with its 95% CI, ordered; the line at 0 "
                         "is the baseline, the grey band the equivalence margin; marker shape, "
                         "symbol and colour give the Holm-adjusted verdict (▲ win, △ win below "
                         "the margin, = equivalent, ? inconclusive, ▽ loss below the margin, "
                         "▼ loss)."))  # fmt: skip
    parts.append(_figure(plots.get((track, "seeds")),
                         "Test metric per evaluation seed; each mixer (filled) beside the "
                         "baseline (hollow), the same seed joined by a line: solid blue where the "
                         "mixer is better on that seed, dashed red where worse."))  # fmt: skip
    parts.append("<h3>Learning curves</h3>")
    parts.append(_figure(plots.get((track, "curves")),
                         "Training loss of the config each seed chose: median over the seeds "
                         "(line) and 25–75% band, log scale when it spans more than a decade. "
                         "Dashed: undertrained, "
                         f"one rule for every mixer: {RULE}."))  # fmt: skip
    parts.append("<h3>Quality against cost</h3>")
    parts.append(_figure(plots.get((track, "cost")),
                         "Improvement over the baseline (95% CI, on the track's scale: "
                         f"{_scale_text(entry)}; the baseline at 0) against parameters, "
                         "forward FLOPs per example and training step time (medians over the "
                         "evaluation runs), log scale; ringed and joined: "
                         "the Pareto front, mixers no other beats on both axes."))  # fmt: skip
    parts.append("<h3>Sweep</h3>")
    parts.append(_figure(plots.get((track, "sweep")),
                         "Validation metric of every grid config per mixer: dots are the "
                         "evaluation seeds (each tunes on its own validation split), the line "
                         "joins their means, the ring marks the config most seeds "
                         "chose."))  # fmt: skip
    parts.append(sweep_table(entry))
    parts.append(signature_table(entry))
    return "\n".join(parts)


def across_section(report: dict, plots: dict[tuple[str, str], Plot]) -> str:
    """Heatmap of verdicts, IQM table and plot, and the rank diagram."""
    parts = ["<h2 id=across>Across tracks</h2>"]
    parts.append(_figure(plots.get(("across", "heatmap")),
                         "Relative improvement over the baseline per mixer and track, coloured "
                         "by the Holm-adjusted verdict."))  # fmt: skip
    across = report.get("across_tracks")
    if not across:
        parts.append("<p class=muted>no across-track figures: no track has a comparison.</p>")
        return "\n".join(parts)
    ranks = across.get("ranks") or {}
    average = ranks.get("average_rank") or {}
    rows = []
    for mixer, row in (across.get("mixers") or {}).items():
        lo, hi = row.get("iqm_ci95") or (None, None)
        dlo, dhi = row.get("iqm_diff_ci95") or (None, None)
        plo, phi = row.get("prob_improvement_ci95") or (None, None)
        suite = row.get("suite_test") or {}
        elo, ehi = row.get("suite_effect_ci95") or (None, None)
        counts = "/".join(
            "–" if row.get(f"tracks_{k}") is None else str(row[f"tracks_{k}"])
            for k in ("won", "lost", "equivalent", "inconclusive")
        )
        rows.append((
            escape(mixer), escape(str(row.get("n_tracks", "–"))),
            escape(f"{num(row.get('suite_effect'), 3)} [{num(elo, 3)}, {num(ehi, 3)}]"),
            escape(f"{num(suite.get('p_value'), 3)} ({num(suite.get('p_holm'), 3)})"),
            escape(suite_verdict(row)),
            escape(f"{num(row.get('iqm'), 3)} [{num(lo, 3)}, {num(hi, 3)}]"),
            escape(f"{num(row.get('iqm_diff'), 3)} [{num(dlo, 3)}, {num(dhi, 3)}]"),
            escape(f"{num(row.get('prob_improvement'), 2)} [{num(plo, 2)}, {num(phi, 2)}]"),
            escape(counts), escape(num(average.get(mixer), 3)),
        ))  # fmt: skip
    parts.append(_table(
        ("mixer", "tracks", "suite effect [95% CI]", "p of the effect (Holm)", "verdict",
         "IQM [95% CI]", "IQM − baseline [95% CI]", "P(improvement) [95% CI]",
         "won/lost/equivalent/inconclusive", "mean rank"),
        rows,
        "score: the fraction of the gap from the trivial predictor (0) to the ideal value (1) "
        "closed, higher is better; suite effect: the mean over tracks (each weighing the same) "
        "of the mean paired score difference with the baseline, 95% CI by stratified bootstrap; "
        "p: two-sided sign-flip test of that same suite effect (its sign is the direction "
        f"tested), Holm across {len(across.get('mixers') or {})} mixers; better/worse: Holm p < "
        f"{num(across.get('alpha'), 2)} and the CI excludes 0, holding with any one track left "
        "out (else mixed); IQM and P(improvement): descriptive, stratified bootstrap CIs.",
        numeric=(2, 3, 5, 6, 7, 9),
    ))  # fmt: skip
    parts.append(_figure(plots.get(("across", "iqm")),
                         "IQM of normalised scores (0 = trivial predictor, 1 = ideal) with its 95% "
                         "CI; the dashed line is the baseline's IQM."))  # fmt: skip
    parts.append("<h3>Quality against cost</h3>")
    parts.append(_figure(plots.get(("across", "cost")),
                         "Suite effect (mean over tracks of the paired score difference with the "
                         "baseline, 95% CI; the baseline at 0) against each cost relative to the "
                         "baseline's (geometric mean over the mixer's tracks; the baseline at 1), "
                         "log scale; ringed and joined: the Pareto front. The numbers are in "
                         "report.json under quality_vs_cost."))  # fmt: skip
    parts.append("<h3>Ranks</h3>")
    parts.append(_figure(plots.get(("across", "ranks")),
                         "Average rank of the mean normalised score over tracks (1 = best); with "
                         "≥ 3 mixers and ≥ 2 tracks, Nemenyi's critical difference (CD) and bars "
                         "joining mixers that do not differ by more than it."))  # fmt: skip
    facts = (
        f"Friedman statistic {num(ranks.get('friedman_statistic'), 4)}, p "
        f"{num(ranks.get('friedman_p'), 3)}, CD {num(ranks.get('nemenyi_cd'), 3)}"
    )
    if ranks.get("reason"):
        facts += f" — {ranks['reason']}"
    parts.append(f"<p class=muted>{escape(facts)}</p>")
    return "\n".join(parts)


def cost_section(report: dict) -> str:
    """Parameters, FLOPs and step time of each mixer on each track (as its records measured)."""
    rows, keys = [], []
    for track, entry in report.get("tracks", {}).items():
        for mixer, arm in entry.get("mixers", {}).items():
            costs = arm.get("costs") or {}
            keys += [k for k in costs if k not in keys]
            rows.append((track, mixer, costs))
    parts = ["<h2 id=costs>Cost per mixer</h2>"]
    if not keys:
        parts.append("<p class=muted>no costs were recorded.</p>")
        return "\n".join(parts)
    body = [(escape(t), escape(m), *(escape(numbers.cost(k, c.get(k))) for k in keys))
            for t, m, c in rows]  # fmt: skip
    parts.append(_table(
        ("track", "mixer", *keys), body,
        "as recorded with the first evaluation run of the chosen config: params = whole model, "
        "mixer_params = token mixers only, flops_per_example = forward FLOPs per example, "
        "seconds_per_step = training step time (k = thousand, M = million, G = billion).",
        numeric=tuple(range(2, 2 + len(keys))),
    ))  # fmt: skip
    return "\n".join(parts)


def problems_section(report: dict) -> str:
    """Skipped cells and failed training runs, each with its reason (and traceback)."""
    rows = [(escape(s.get("track", "")), escape(s.get("mixer", "")), "skipped", "",
             escape(str(s.get("reason", ""))), "")
            for s in report.get("skipped") or []]  # fmt: skip
    for failure in report.get("failures") or []:
        trace = failure.get("traceback") or ""
        details = f"<details><summary>traceback</summary><pre>{escape(trace)}</pre></details>"
        rows.append((escape(str(failure.get("track", ""))), escape(str(failure.get("mixer", ""))),
                     "failed", escape(str(failure.get("seed", ""))),
                     escape(str(failure.get("reason", ""))), details if trace else ""))  # fmt: skip
    for flagged in (report.get("learning_curves") or {}).get("undertrained") or []:
        rows.append((escape(flagged["track"]), escape(flagged["mixer"]), "undertrained", "",
                     escape(flagged.get("reason", "")), ""))  # fmt: skip
    parts = ["<h2 id=problems>Skipped, failed and undertrained</h2>"]
    if not rows:
        parts.append("<p>nothing was skipped, no training run failed and no cell is "
                     "undertrained.</p>")  # fmt: skip
    else:
        parts.append(_table(("track", "mixer", "what", "seed", "reason", "traceback"), rows))
    return "\n".join(parts)


def _flag_cell(flags: list[str], reasons: dict[str, str]) -> str:
    """The raised flags, each with its reason as a tooltip."""
    shown = [f'<span title="{escape(reasons.get(f, ""))}">{escape(f)}</span>' for f in flags]
    return ", ".join(shown)


def flag_list(entry: dict) -> str:
    """Every raised flag of the track's comparisons, with its one-line reason (docs/results.md
    gives each threshold)."""
    rows = [
        (escape(mixer), escape(flag), escape((cell.get("flag_reasons") or {}).get(flag, "")))
        for mixer, cell in (entry.get("comparisons") or {}).items()
        for flag in (cell.get("comparison") or {}).get("flags") or []
    ]
    if not rows:
        return ""
    return _table(("mixer", "flag", "reason"), rows,
                  "Flags raised on this track, each with the figure that crossed its threshold "
                  "(the thresholds: docs/results.md).")  # fmt: skip


def scale_head(report: dict) -> str:
    """The page's scale warning: preset, width, depth and budget of every track."""
    note = (report.get("scale") or {}).get("note")
    return f"<p class=warning id=scale>{escape(note)}</p>" if note else ""


def render_html(report: dict, plots: Sequence[Plot], scaling: str = "") -> str:
    """The whole page as text (``scaling``: the "Cost against sequence length" section, if any)."""
    by_key = {(p.section, p.kind): p for p in plots}
    tracks = report.get("tracks") or {}
    nav = "".join(
        f'<li><a href="#{anchor}">{escape(label)}</a></li>'
        for anchor, label in [("summary", "Summary")]
        + [(f"track-{slug(t)}", f"Track {t}") for t in tracks]
        + [("across", "Across tracks"), ("costs", "Cost per mixer"),
           ("problems", "Skipped, failed and undertrained")]
        + ([("scaling", "Cost against length")] if scaling else [])
    )  # fmt: skip
    date = (report.get("environment") or {}).get("date", "")
    body = "\n".join([
        "<h1>benchsuite report</h1>",
        f"<p class=muted>{escape(str(date))} · baseline "
        f"{escape(str((report.get('settings') or {}).get('baseline', '–')))}</p>",
        scale_head(report),
        f"<nav><ul>{nav}</ul></nav>",
        summary_section(report),
        *(track_section(t, e, by_key, _family_text(report)) for t, e in tracks.items()),
        axes_section(report),
        across_section(report, by_key),
        cost_section(report),
        problems_section(report),
        scaling,
        "<p class=muted>written by benchsuite from report.json; the figures are also in "
        "<code>plots/</code>.</p>",
    ])  # fmt: skip
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>benchsuite report {escape(str(date))}</title><style>{CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def write_html(report: dict, out: Path | str) -> Path:
    """Write ``OUT/report.html`` and ``OUT/plots/*.png`` from a report; returns the HTML path."""
    from benchsuite.output.scaling import load_scaling, scaling_plots, scaling_section

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots = make_plots(report)
    scaling = scaling_plots(found) if (found := load_scaling(out)) else []
    write_plots([*plots, *scaling], out)
    path = out / FILENAME
    path.write_text(render_html(report, plots, scaling_section(out, scaling)), encoding="utf-8")
    return path

"""What the terminal prints of a report: one table per track (:mod:`.track_tables`), the
signatures, across tracks, problems, and at the end the headline (:mod:`.headline`, the answer
where the eye lands); the table of ``benchsuite compare``.

Each table comes in a wide layout and a narrow one, drawn by
:class:`~benchsuite.output.widths.FirstFitting`: the wide one when it fits the terminal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from benchsuite.output import captions
from benchsuite.output.costs import cost_table
from benchsuite.output.headline import SUITE_STYLE, headline_tables, styled, suite_interval
from benchsuite.output.left_out import left_out_table
from benchsuite.output.numbers import MISSING, num
from benchsuite.output.track_tables import (
    axis_table,
    improvement,
    legend,
    mde,
    new_table,
    signature_table,
    signature_tables_narrow,
    signatures,
    track_views,
    verdict_text,
)
from benchsuite.output.widths import FirstFitting, fit
from benchsuite.results.axes import axis_groups
from benchsuite.results.schema import AcrossMixer, AcrossTracks, Analysis, RunComparison
from benchsuite.vocabulary import Problem, SuiteVerdict

PROBLEMS = "[bold red]skipped, failed and undertrained[/]"


def by_suite_effect(across: AcrossTracks) -> list[str]:
    """The mixers across tracks, largest suite effect first."""
    return sorted(across.mixers, key=lambda m: -(num_or(across.mixers[m].suite_effect)))


def num_or(value: float | None, missing: float = -1e300) -> float:
    """``value``, or ``missing`` when it is None or NaN (for sorting)."""
    return missing if value is None or value != value else value


def across_table(report: Analysis) -> Table | None:
    """Per mixer across tracks: the suite effect, the per-track effects beside it, the combined
    test, the verdict and whether it survives leaving any one track out (wide layout)."""
    across = report.across_tracks
    if not across or not across.mixers:
        return None
    table = new_table(
        "[bold]across tracks[/] (score: fraction of the gap from the trivial predictor to the "
        "ideal value closed)",
        _across_caption(across, report),
        [
            "mixer",
            captions.suite_effect_label(across.alpha),
            *map(escape, across.tracks),
            "p of the effect (Holm)",
            "verdict",
            "robust",
        ],
    )
    for mixer in by_suite_effect(across):
        row = across.mixers[mixer]
        name, effect, *rest = _across_row(mixer, row, across.alpha)
        table.add_row(
            name, effect, *[num(row.per_track_effect.get(t), 2) for t in across.tracks], *rest
        )
    return table


def _across_caption(across: AcrossTracks, report: Analysis) -> str:
    left = across.tracks_left_out
    dropped = "; left out: " + "; ".join(f"{t} ({why})" for t, why in left.items()) if left else ""
    caption = captions.TERMINAL_ACROSS.format(
        mixers=across.holm_family or len(across.mixers),
        alpha=num(across.alpha, 3),
        level=num(100 * (1 - across.alpha), 3),
        looks=captions.looks_sentence(across),
        dropped=dropped,
        scale=report.scale.note,
    )
    return caption.rstrip("; ")  # no scale note: no dangling "; "


def _across_row(mixer: str, row: AcrossMixer, alpha: float) -> list[str]:
    shown = suite_interval(row.suite_effect_ci95, row.suite_test.p_holm, alpha, 2)
    return [
        escape(mixer) + (" *" if row.fewer_tracks else ""),
        f"{num(row.suite_effect, 2)} {escape(shown)}",
        f"{num(row.suite_test.p_value, 2)} ({num(row.suite_test.p_holm, 2)})",
        styled(row.shown_verdict(), SUITE_STYLE.get(row.verdict, "")),
        _robust(row),
    ]


def _robust(row: AcrossMixer) -> str:
    """Whether a verdict the suite test reached holds with any one track left out; ``–`` where
    it reached none (an inconclusive row has nothing to be robust about, a mixed one no one
    direction)."""
    if row.verdict not in (SuiteVerdict.BETTER, SuiteVerdict.WORSE, SuiteVerdict.NOT_ROBUST):
        return MISSING
    return "yes" if row.robust_without_any_track else "no"


def across_tables_narrow(report: Analysis, width: int) -> list[Table]:
    """The suite figures, then the per-track effects in as many tables as the width needs."""
    across = report.across_tracks
    assert across is not None
    suite = new_table(
        "[bold]across tracks[/] (score: fraction of the gap from the trivial "
        "predictor to the ideal value closed)",
        _across_caption(across, report),
        [
            "mixer",
            captions.suite_effect_label(across.alpha),
            "p of the effect (Holm)",
            "verdict",
            "robust",
        ],
        narrow=True,
    )
    for mixer in by_suite_effect(across):
        suite.add_row(*_across_row(mixer, across.mixers[mixer], across.alpha))
    tables, pending = [suite], list(across.tracks)
    while pending:
        size = len(pending)
        while size > 1 and not fit(_effects(across, pending[:size]), width):
            size -= 1
        tables.append(_effects(across, pending[:size]))
        pending = pending[size:]
    return tables


def _effects(across: AcrossTracks, tracks: list[str]) -> Table:
    table = new_table(
        "[bold]across tracks[/]: mean paired score difference per track",
        "",
        ["mixer", *map(escape, tracks)],
        narrow=True,
    )
    for mixer in by_suite_effect(across):
        effects = across.mixers[mixer].per_track_effect
        table.add_row(escape(mixer), *[num(effects.get(t), 2) for t in tracks])
    return table


def _problem_rows(report: Analysis) -> list[tuple[str, str, str, str, str, str]]:
    """(track, mixer, what, jobs, reason, traceback) of every skipped, failed or undertrained
    cell; identical failures share one row."""
    rows = [(s.track, s.mixer, Problem.SKIPPED, "", s.said, "") for s in report.skipped]
    groups: dict[tuple, list[Any]] = {}
    for f in report.failures:
        groups.setdefault((f.track, f.mixer, f.reason), []).append(f)
    for (track, mixer, reason), failures in groups.items():
        seeds = ", ".join(sorted({str(f.seed) for f in failures}))
        log = f"logs/{Path(failures[0].traceback).name}" if failures[0].traceback else ""
        jobs = f"{len(failures)} (seed {seeds})"
        rows.append((track, mixer, Problem.FAILED, jobs, reason or "", log))
    for flagged in report.learning_curves.undertrained:
        rows.append((flagged.track, flagged.mixer, Problem.UNDERTRAINED, "", flagged.reason, ""))
    return rows


def _logs_note(rows: list[tuple[str, ...]]) -> str:
    """The caption pointing to the tracebacks, when a job failed."""
    failed = any(row[2] == Problem.FAILED for row in rows)
    return "every failed job's traceback is in logs/ in the output folder" if failed else ""


def problems_table(report: Analysis) -> Table | None:
    """Skipped cells, failed jobs and undertrained cells with their reason (wide layout)."""
    rows = _problem_rows(report)
    if not rows:
        return None
    columns = ["track", "mixer", "what", "jobs", "reason", "traceback (first)"]
    table = new_table(PROBLEMS, _logs_note(rows), columns)
    for row in rows:
        table.add_row(*map(escape, row))
    return table


def problems_table_narrow(report: Analysis) -> Table:
    """The same rows with the cell, what happened and its reason in three columns."""
    rows = _problem_rows(report)
    table = new_table(PROBLEMS, _logs_note(rows), ["cell", "what", "reason"], narrow=True)
    table.show_lines = True  # a cell spans two lines (track, mixer): rules keep rows apart
    for track, mixer, what, jobs, reason, log in rows:
        table.add_row(
            f"{escape(track)}\n{escape(mixer)}",
            f"{what} {jobs}".strip(),
            escape(reason) + (f"\ntraceback: {escape(log)}" if log else ""),
        )
    return table


def print_partial(report: Analysis, complete: list[str], console: Console) -> None:
    """After an interrupt: the tables of the tracks whose every job is stored (their verdicts
    over the planned family), nothing of the others (the page has what finished)."""
    tracks = {name: report.tracks[name] for name in complete if name in report.tracks}
    if tracks:
        console.print(track_views(tracks, report.design))


def print_report(report: Analysis, console: Console, verbose: bool = False) -> None:
    """Print every table of a report, each in the widest layout the terminal fits, and the
    headline last (the answer where the eye lands when the run ends); ``verbose``: with the
    suite effects without each track and the cost per mixer. A report of one track has no
    across-tracks table and no headline (no suite claim: its table is the answer)."""
    design = report.design
    banner = f"[yellow]{escape(design.banner())}[/]; Holm over all {design.comparisons} comparisons"
    if design.partial:
        console.print(banner)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    if report.tracks:
        console.print(track_views(report.tracks, design))
    for group in axis_groups(report):
        console.print(axis_table(group))
    if signatures(report):
        console.print(
            FirstFitting(
                [lambda _w: [signature_table(report)], lambda _w: signature_tables_narrow(report)]
            )
        )
    suite = len(report.tracks) > 1  # one track: no suite claim, its table has the answer
    if suite and across_table(report) is not None:
        console.print(
            FirstFitting(
                [lambda _w: [across_table(report)], lambda w: across_tables_narrow(report, w)]
            )
        )
    if verbose and (without := left_out_table(report.across_tracks)) is not None:
        console.print(without)
    if verbose and (costs := cost_table(report)) is not None:
        console.print(costs)
    if _problem_rows(report):
        console.print(
            FirstFitting(
                [lambda _w: [problems_table(report)], lambda _w: [problems_table_narrow(report)]],
                unwrapped=1,
            )
        )
    if suite and any(entry.comparisons for entry in report.tracks.values()):
        if design.partial:  # beside the answer too, where the eye lands
            console.print(banner)
        console.print(
            FirstFitting(
                [
                    lambda _w: headline_tables(report),
                    lambda _w: headline_tables(report, narrow=True),
                ]
            )
        )


def _compare_tables(result: RunComparison, narrow: bool) -> list[Table]:
    title = "[bold]compare[/]: run B against run A, paired by seed"
    rows = result.rows
    first = rows[0].comparison if rows else None
    same = result.unchanged
    caption = captions.COMPARE.format(
        rows=len(rows),
        unchanged=f" (left out, the same jobs in both: {', '.join(same)})" if same else "",
        alpha=num(first and first.alpha, 2),
        mde_alpha=num(first and first.mde_alpha, 2),
    )
    if not narrow:
        table = new_table(
            title,
            caption,
            [
                "track",
                "mixer",
                "A mean",
                "B mean",
                "improvement [95% CI]",
                "p",
                "Holm p",
                "MDE",
                "verdict",
                "flags",
            ],
            no_wrap=("verdict",),
        )
        for row in rows:
            c = row.comparison
            table.add_row(
                escape(row.track),
                escape(row.mixer),
                num(c.baseline_mean),
                num(c.mixer_mean),
                escape(improvement(c)),
                num(c.p_value, 3),
                num(c.p_holm, 3),
                mde(c),
                verdict_text(c.verdict),
                ", ".join(c.flags),
            )
        return [table]
    shown = [row.comparison.verdict for row in rows]
    means = new_table(
        title, caption, ["track", "mixer", "A mean", "B mean", "improvement [95% CI]"], narrow=True
    )
    tests = new_table(
        "[bold]compare[/]: tests",
        f"verdicts: {legend(shown)}",
        ["track", "mixer", "p", "Holm p", "MDE", "verdict", "flags"],
        no_wrap=("verdict",),
        narrow=True,
    )
    for row in rows:
        c = row.comparison
        means.add_row(
            escape(row.track),
            escape(row.mixer),
            num(c.baseline_mean),
            num(c.mixer_mean),
            escape(improvement(c)),
        )
        tests.add_row(
            escape(row.track),
            escape(row.mixer),
            num(c.p_value, 3),
            num(c.p_holm, 3),
            mde(c),
            verdict_text(c.verdict),
            ", ".join(c.flags),
        )
    return [means, tests]


def compare_table(result: RunComparison) -> RenderableType:
    """Run B against run A, per (track, mixer): improvement > 0 means B is better; one table, or
    two when the terminal is narrow."""
    return FirstFitting(
        [
            lambda _w: _compare_tables(result, narrow=False),
            lambda _w: _compare_tables(result, narrow=True),
        ]
    )

"""The headline: per mixer, where it is significantly better or worse than the baseline, where
it is equivalent, its suite-level effect with its CI, and what it costs (parameters and step time
relative to the baseline's); under the suite design (docs/protocol.md, "Two designs") its suite
verdict first, with its Holm p and on how many tracks it is ahead and behind. The HTML page
opens with it and the terminal ends with it (:mod:`.tables`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.markup import escape
from rich.table import Table

from benchsuite.output import captions
from benchsuite.output.numbers import finite, marked_interval, num
from benchsuite.output.track_tables import new_table
from benchsuite.results.schema import Analysis
from benchsuite.vocabulary import Flag, SuiteVerdict, Verdict


@dataclass
class Line:
    """One mixer's headline."""

    mixer: str
    better: list[str] = field(default_factory=list)
    worse: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)  # per-track verdict needs more seeds
    ahead: list[str] = field(default_factory=list)  # mean effect > 0, whatever its verdict
    behind: list[str] = field(default_factory=list)  # mean effect < 0
    learnt_nothing: list[str] = field(default_factory=list)
    suite_effect: float | None = None
    suite_p_holm: float | None = None
    suite_ci95: tuple[float | None, float | None] = (None, None)
    suite_alpha: float | None = None  # the level of the suite test and of its interval
    suite_verdict: str = ""  # as shown ("worse, rests on x", "better (without x)")
    suite_style: str = ""  # the rich style of the verdict itself
    params_ratio: float | None = None
    time_ratio: float | None = None
    timed_apart: bool = False  # a track's timings of mixer and baseline come from different runs

    def sort_key(self) -> tuple[float, str]:
        """Largest suite effect first; mixers without one last, by name."""
        effect = self.suite_effect
        return (-effect if effect is not None and math.isfinite(effect) else math.inf, self.mixer)


def headline(report: Analysis) -> list[Line]:
    """One line per compared mixer, ordered by suite effect (largest first); a track where the
    mixer learnt nothing (flagged ``no_better_than_trivial``) is named so."""
    lines: dict[str, Line] = {}
    for track, entry in report.tracks.items():
        for mixer, cell in entry.comparisons.items():
            line = lines.setdefault(mixer, Line(mixer))
            verdict = cell.comparison.verdict
            group = (
                line.better
                if verdict.better
                else line.worse
                if verdict.worse
                else line.equivalent
                if verdict == Verdict.EQUIVALENT
                else line.undecided
                if verdict == Verdict.NEEDS_MORE_SEEDS
                else line.inconclusive
            )
            learnt_nothing = Flag.NO_BETTER_THAN_TRIVIAL in cell.comparison.flags
            group.append(f"{track} (learnt nothing)" if learnt_nothing else track)
            if learnt_nothing:
                line.learnt_nothing.append(track)
            if Flag.TIMINGS_FROM_DIFFERENT_RUNS in cell.comparison.flags:
                line.timed_apart = True
            effect = cell.comparison.improvement
            if math.isfinite(effect) and effect != 0:
                (line.ahead if effect > 0 else line.behind).append(track)
    across = report.across_tracks
    costs = report.quality_vs_cost.across
    for mixer, line in lines.items():
        row = across.mixers.get(mixer) if across else None
        if row is not None:
            line.suite_effect = row.suite_effect
            line.suite_ci95 = (row.suite_effect_ci95[0], row.suite_effect_ci95[1])
            line.suite_alpha = across.alpha
            line.suite_verdict = row.shown_verdict()
            line.suite_p_holm = row.suite_test.p_holm
            line.suite_style = SUITE_STYLE.get(row.verdict, "")
        point = costs.points.get(mixer) if costs else None
        if point is not None:
            line.params_ratio, line.time_ratio = point.params, point.seconds_per_step
    return sorted(lines.values(), key=Line.sort_key)


def suite_interval(
    bounds: Sequence[float | None], p_holm: float | None, alpha: float | None, digits: int
) -> str:
    """The suite effect's interval, marked where it excludes 0 but the verdict's Holm p does
    not pass (:func:`~benchsuite.output.numbers.marked_interval`)."""
    held = p_holm is not None and alpha is not None and p_holm < alpha
    return marked_interval(list(bounds), held, lambda v: num(v, digits))


def line_interval(line: Line, digits: int) -> str:
    """A headline line's suite interval (:func:`suite_interval`)."""
    return suite_interval(line.suite_ci95, line.suite_p_holm, line.suite_alpha, digits)


def tracks_text(tracks: list[str]) -> str:
    """``a, b`` or ``none``."""
    return ", ".join(tracks) if tracks else "none"


SUITE_STYLE = {
    SuiteVerdict.BETTER: "bold blue",
    SuiteVerdict.WORSE: "bold red",
    SuiteVerdict.NOT_ROBUST: "magenta",
    SuiteVerdict.MIXED: "magenta",
    SuiteVerdict.INCONCLUSIVE: "yellow",
}


def styled(text: str, style: str) -> str:
    """``text`` as markup in ``style`` (none: plain), escaped."""
    return f"[{style}]{escape(text)}[/]" if style else escape(text)


TIMED_APART = "timings from different runs"


def time_text(line: Line) -> str:
    """The step time ratio, with ``(timings from different runs)`` where a track's timings of
    the mixer and of the baseline come from different runs."""
    shown = ratio(line.time_ratio)
    return f"{shown} ({TIMED_APART})" if line.timed_apart and line.time_ratio is not None else shown


def ratio(value: float | None) -> str:
    """A cost relative to the baseline's: ``1.47×`` (``–`` when not measured)."""
    return "–" if finite(value) is None else f"{num(value, 3)}×"


def suite_headline(report: Analysis) -> bool:
    """The headline leads with the suite verdicts: the run planned the claims across tracks and
    has them (the per-track verdicts then need more seeds than it has)."""
    return report.design.suite_claims() and report.across_tracks is not None


def suite_headline_rows(lines: list[Line], digits: int = 2) -> list[tuple[str, ...]]:
    """The suite design's headline rows, as text: mixer, suite verdict, effect [CI], Holm p,
    how many tracks its mean is ahead of and behind the baseline's on, the tracks where it
    learnt nothing, params and time ratios."""
    return [
        (
            line.mixer,
            line.suite_verdict or "–",
            f"{num(line.suite_effect, digits)} {line_interval(line, digits)}",
            num(line.suite_p_holm, 3),
            f"{len(line.ahead)} / {len(line.behind)}",
            ", ".join(line.learnt_nothing) or "–",
            ratio(line.params_ratio),
            time_text(line),
        )
        for line in lines
    ]


SUITE_COLUMNS = (
    "mixer",
    "suite verdict",
    "suite effect [CI]",
    "Holm p",
    "tracks ahead / behind",
    "learnt nothing on",
    "params ×",
    "step time ×",
)


def suite_caption(report: Analysis) -> str:
    """The suite headline's caption: the family, the level, the looks, what per-track verdicts
    need."""
    across, design = report.across_tracks, report.design
    assert across is not None
    return captions.HEADLINE_SUITE.format(
        mixers=across.holm_family,
        alpha=num(across.alpha, 3),
        level=num(100 * (1 - across.alpha), 3),
        looks=captions.looks_sentence(across),
        seeds=design.min_seeds_for_significance,
        planned=design.per_track_seeds,
    )


def headline_tables(report: Analysis, narrow: bool = False) -> list[Table]:
    """The headline: per mixer, its verdicts by track, its suite effect, its size and cost (the
    suite design: its suite verdict first, and where its mean is ahead or behind)."""
    lines = headline(report)
    if suite_headline(report):
        title = f"[bold]headline[/]: each mixer against {escape(report.baseline)} across tracks"
        table = new_table(title, suite_caption(report), list(SUITE_COLUMNS), narrow=narrow)
        for line, row in zip(lines, suite_headline_rows(lines), strict=True):
            table.add_row(
                escape(row[0]),
                styled(row[1], line.suite_style),
                *(escape(cell) for cell in row[2:]),
            )
        return [table]
    title = f"[bold]headline[/]: each mixer against {escape(report.baseline)}"
    level = report.across_tracks.alpha if report.across_tracks else None
    columns = [
        "mixer",
        "better on",
        "worse on",
        "equivalent on",
        captions.suite_effect_label(level),
        "suite verdict",
        "params ×",
        "step time ×",
    ]
    if narrow:
        columns = [
            "mixer",
            "better / worse / equivalent on",
            captions.suite_effect_label(level),
            "params ×",
            "step time ×",
        ]
    table = new_table(title, captions.HEADLINE, columns, narrow=narrow)
    for line in lines:
        bounds = line_interval(line, 2)
        effect = f"{num(line.suite_effect, 2)} {bounds}"
        if narrow:
            where = (
                f"{tracks_text(line.better)} / {tracks_text(line.worse)} / "
                f"{tracks_text(line.equivalent)}"
            )
            effect += f" {escape(line.suite_verdict)}" if line.suite_verdict else ""
            table.add_row(
                escape(line.mixer),
                escape(where),
                effect,
                ratio(line.params_ratio),
                time_text(line),
            )
            continue
        table.add_row(
            escape(line.mixer),
            escape(tracks_text(line.better)),
            escape(tracks_text(line.worse)),
            escape(tracks_text(line.equivalent)),
            effect,
            styled(line.suite_verdict or "–", line.suite_style),
            ratio(line.params_ratio),
            time_text(line),
        )
    return [table]

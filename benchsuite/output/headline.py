"""The answer first: per mixer, where it is significantly better or worse than the baseline,
where it is equivalent, its suite-level effect with its CI, and what it costs (parameters and
step time relative to the baseline's). The HTML page opens with it and the terminal ends with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from benchsuite.results.schema import Analysis

BETTER = ("significant_win", "significant_win_below_margin")
WORSE = ("significant_loss", "significant_loss_below_margin")


@dataclass
class Line:
    """One mixer's headline."""

    mixer: str
    better: list[str] = field(default_factory=list)
    worse: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)
    suite_effect: float | None = None
    suite_ci95: tuple[float | None, float | None] = (None, None)
    suite_verdict: str = ""
    params_ratio: float | None = None
    time_ratio: float | None = None

    def sort_key(self) -> tuple[float, str]:
        """Largest suite effect first; mixers without one last, by name."""
        effect = self.suite_effect
        return (-effect if effect is not None and math.isfinite(effect) else math.inf, self.mixer)


def headline(report: Analysis) -> list[Line]:
    """One line per compared mixer, ordered by suite effect (largest first)."""
    lines: dict[str, Line] = {}
    for track, entry in report.tracks.items():
        for mixer, cell in entry.comparisons.items():
            line = lines.setdefault(mixer, Line(mixer))
            verdict = cell.comparison.verdict
            group = (line.better if verdict in BETTER else line.worse if verdict in WORSE
                     else line.equivalent if verdict == "equivalent_within_margin"
                     else line.inconclusive)  # fmt: skip
            group.append(track)
    across = report.across_tracks
    costs = report.quality_vs_cost.across
    for mixer, line in lines.items():
        row = across.mixers.get(mixer) if across else None
        if row is not None:
            line.suite_effect = row.suite_effect
            line.suite_ci95 = (row.suite_effect_ci95[0], row.suite_effect_ci95[1])
            line.suite_verdict = row.shown_verdict()
        point = costs.points.get(mixer) if costs else None
        if point is not None:
            line.params_ratio, line.time_ratio = point.params, point.seconds_per_step
    return sorted(lines.values(), key=Line.sort_key)


def tracks_text(tracks: list[str]) -> str:
    """``a, b`` or ``none``."""
    return ", ".join(tracks) if tracks else "none"

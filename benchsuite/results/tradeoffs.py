"""Quality against cost: is a mixer's win bought with parameters, FLOPs or step time?

Per track, each mixer is a point (cost, improvement over the baseline in % with its 95% CI; the
baseline sits at 0); across tracks, (cost relative to the baseline's, as the geometric mean over
the tracks the mixer ran on; the suite effect with its CI; the baseline at (1, 0)). For each
cost, the Pareto front holds the mixers no other beats on both axes: none costs at most as much
and scores at least as well, strictly better on one of the two. Costs are medians over a cell's
evaluation runs (``costs_median``). The numbers go to ``report.json`` → ``quality_vs_cost``; the
figures draw exactly these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from benchsuite.measures import TRADEOFFS, Costs
from benchsuite.results.cell_schema import MixerResult, TrackResult
from benchsuite.results.schema import AcrossTracks, CostPoint, QualityVsCost, Tradeoff

COSTS = TRADEOFFS  # the costs quality is weighed against, declared in benchsuite.measures


def _positive(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value) if math.isfinite(value) else None
    return None


def pareto(points: Mapping[str, tuple[float | None, float | None]]) -> list[str]:
    """The names on the Pareto front of ``{name: (cost, score)}`` (lower cost and higher score
    are better), cheapest first; points missing either value take no part."""
    valid = {n: (c, s) for n, (c, s) in points.items() if c is not None and s is not None}
    front = [
        name
        for name, (cost, score) in valid.items()
        if not any(c <= cost and s >= score and (c < cost or s > score) for c, s in valid.values())
    ]
    return sorted(front, key=lambda name: (valid[name][0], -valid[name][1]))


def _costs(arm: MixerResult) -> Costs:
    """The cell's median costs (its first run's where no median was kept)."""
    return arm.costs_median if next(arm.costs_median.items(), None) else arm.costs


def _number(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _interval(bounds: Sequence[float] | None) -> list[float | None] | None:
    return None if bounds is None else [_number(v) for v in bounds]


def _with_fronts(
    points: dict[str, CostPoint], costs: tuple[str, ...], score: str, cost_scale: str | None = None
) -> Tradeoff:
    fronts = {k: pareto({n: (p.get(k), p.score) for n, p in points.items()}) for k in costs}
    return Tradeoff(score=score, points=points, pareto=fronts, cost_scale=cost_scale)


def track_tradeoff(entry: TrackResult) -> Tradeoff | None:
    """One track's points and fronts; None without comparisons."""
    comparisons, baseline = entry.comparisons, entry.baseline
    if not comparisons or baseline not in entry.mixers:
        return None
    points = {}
    for mixer, arm in entry.mixers.items():
        cell = comparisons.get(mixer)
        if mixer != baseline and cell is None:
            continue
        costs = _costs(arm)
        c = None if mixer == baseline else cell.comparison
        points[mixer] = CostPoint(
            score=0.0 if c is None else _number(c.improvement_rel_pct),
            ci95=None if c is None else _interval(c.ci95_rel_pct),
            verdict=None if c is None else c.verdict,
            **{k: _positive(costs.get(k)) for k in COSTS},
        )
    score = "improvement over the baseline in % (improvement_rel_pct, on the track's scale)"
    return _with_fronts(points, COSTS, score)


def _relative_cost(
    tracks: Mapping[str, TrackResult], names: list[str], mixer: str, baseline: str, cost: str
) -> float | None:
    """Geometric mean over ``names`` of the mixer's cost over the baseline's."""
    logs = []
    for track in names:
        arms = tracks[track].mixers
        if mixer not in arms or baseline not in arms:
            continue
        mine, theirs = (
            _positive(_costs(arms[mixer]).get(cost)),
            _positive(_costs(arms[baseline]).get(cost)),
        )
        if mine is not None and theirs is not None:
            logs.append(math.log(mine / theirs))
    return math.exp(sum(logs) / len(logs)) if logs else None


def across_tradeoff(
    tracks: Mapping[str, TrackResult], across: AcrossTracks | None
) -> Tradeoff | None:
    """Across tracks: suite effect against relative cost, per mixer, with the fronts."""
    if not across or not across.mixers:
        return None
    baseline = across.baseline
    measured = {
        k: any(
            _positive(_costs(arm).get(k))
            for t in across.tracks
            if (arm := tracks[t].mixers.get(baseline))
        )
        for k in COSTS
    }
    points = {
        baseline: CostPoint(
            score=0.0,
            ci95=None,
            verdict=None,
            tracks=across.tracks,
            **{k: 1.0 if measured[k] else None for k in COSTS},
        )
    }
    for mixer, row in across.mixers.items():
        points[mixer] = CostPoint(
            score=row.suite_effect,
            ci95=row.suite_effect_ci95,
            verdict=row.verdict,
            tracks=row.tracks,
            **{k: _relative_cost(tracks, row.tracks, mixer, baseline, k) for k in COSTS},
        )
    return _with_fronts(
        points,
        COSTS,
        "suite effect: mean over tracks of the paired score difference with the baseline",
        "relative to the baseline's cost, geometric mean over the mixer's tracks",
    )


def quality_vs_cost(
    tracks: Mapping[str, TrackResult], across: AcrossTracks | None
) -> QualityVsCost:
    """``report.json`` → ``quality_vs_cost``: per track and across tracks."""
    per_track = {name: track_tradeoff(entry) for name, entry in tracks.items()}
    return QualityVsCost(
        costs=list(COSTS),
        tracks={name: value for name, value in per_track.items() if value is not None},
        across=across_tradeoff(tracks, across),
    )

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
from collections.abc import Mapping
from typing import Any

COSTS = ("params", "flops_per_example", "seconds_per_step")


def _positive(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value) if math.isfinite(value) else None
    return None


def pareto(points: Mapping[str, tuple[float | None, float | None]]) -> list[str]:
    """The names on the Pareto front of ``{name: (cost, score)}`` (lower cost and higher score
    are better), cheapest first; points missing either value take no part."""
    valid = {n: (c, s) for n, (c, s) in points.items() if c is not None and s is not None}
    front = [
        name for name, (cost, score) in valid.items()
        if not any(c <= cost and s >= score and (c < cost or s > score)
                   for c, s in valid.values())
    ]  # fmt: skip
    return sorted(front, key=lambda name: (valid[name][0], -valid[name][1]))


def _costs(arm: Mapping[str, Any]) -> dict[str, Any]:
    return arm.get("costs_median") or arm.get("costs") or {}


def _with_fronts(points: dict[str, dict[str, Any]], costs: tuple[str, ...]) -> dict[str, Any]:
    return {
        "points": points,
        "pareto": {k: pareto({n: (p[k], p["score"]) for n, p in points.items()}) for k in costs},
    }


def track_tradeoff(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """One track's points and fronts; None without comparisons."""
    comparisons, baseline = entry.get("comparisons") or {}, entry.get("baseline")
    if not comparisons or baseline not in entry.get("mixers", {}):
        return None
    points = {}
    for mixer, arm in entry["mixers"].items():
        comparison = (comparisons.get(mixer) or {}).get("comparison") or {}
        if mixer != baseline and not comparison:
            continue
        costs = _costs(arm)
        points[mixer] = {
            "score": 0.0 if mixer == baseline else comparison.get("improvement_rel_pct"),
            "ci95": None if mixer == baseline else comparison.get("ci95_rel_pct"),
            "verdict": None if mixer == baseline else comparison.get("verdict"),
            **{k: _positive(costs.get(k)) for k in COSTS},
        }
    score = "improvement over the baseline in % (improvement_rel_pct, on the track's scale)"
    return {"score": score, **_with_fronts(points, COSTS)}


def _relative_cost(tracks: Mapping[str, Any], names: list[str], mixer: str, baseline: str,
                   cost: str) -> float | None:  # fmt: skip
    """Geometric mean over ``names`` of the mixer's cost over the baseline's."""
    logs = []
    for track in names:
        arms = tracks[track]["mixers"]
        if mixer not in arms or baseline not in arms:
            continue
        mine, theirs = (
            _positive(_costs(arms[mixer]).get(cost)),
            _positive(_costs(arms[baseline]).get(cost)),
        )
        if mine is not None and theirs is not None:
            logs.append(math.log(mine / theirs))
    return math.exp(sum(logs) / len(logs)) if logs else None


def across_tradeoff(tracks: Mapping[str, Any], across: Mapping[str, Any] | None) -> dict | None:
    """Across tracks: suite effect against relative cost, per mixer, with the fronts."""
    if not across or not across.get("mixers"):
        return None
    baseline = across["baseline"]
    measured = {
        k: any(_positive(_costs(tracks[t]["mixers"].get(baseline, {})).get(k))
               for t in across["tracks"])
        for k in COSTS
    }  # fmt: skip
    points = {baseline: {"score": 0.0, "ci95": None, "verdict": None, "tracks": across["tracks"],
                         **{k: 1.0 if measured[k] else None for k in COSTS}}}  # fmt: skip
    for mixer, row in across["mixers"].items():
        names = row.get("tracks") or []
        points[mixer] = {
            "score": row.get("suite_effect"),
            "ci95": row.get("suite_effect_ci95"),
            "verdict": row.get("verdict"),
            "tracks": names,
            **{k: _relative_cost(tracks, names, mixer, baseline, k) for k in COSTS},
        }
    return {
        "score": "suite effect: mean over tracks of the paired score difference with the baseline",
        "cost_scale": "relative to the baseline's cost, geometric mean over the mixer's tracks",
        **_with_fronts(points, COSTS),
    }


def quality_vs_cost(tracks: Mapping[str, Any], across: Mapping[str, Any] | None) -> dict:
    """``report.json`` → ``quality_vs_cost``: per track and across tracks."""
    per_track = {name: track_tradeoff(entry) for name, entry in tracks.items()}
    return {
        "costs": list(COSTS),
        "tracks": {name: value for name, value in per_track.items() if value is not None},
        "across": across_tradeoff(tracks, across),
    }

"""Choosing a cell's config from its sweep (PROTOCOL §1): best validation mean, tie rules.

Pure functions of the sweep's validation metrics; the runner applies them once, between the sweep
and the evaluation, and the plan records the choice.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def on_edge(configs: list[dict[str, Any]], winner: dict[str, Any]) -> bool:
    """True when the winner sits at the lowest or highest value of a numeric grid axis."""
    if len(configs) < 2:
        return False
    for key in winner:
        values = [c[key] for c in configs if key in c]
        if not all(_is_number(v) for v in values):
            continue  # categorical axis: no order, so no edge
        axis = sorted(set(values))
        if len(axis) >= 2 and winner[key] in (axis[0], axis[-1]):
            return True
    return False


def select_best_config(sweep: list[dict[str, Any]]) -> tuple[int, bool]:
    """Pick the sweep winner (PROTOCOL §1); return (grid index, edge_of_grid).

    Entries: {'index', 'config', 'val', 'diverged', 'higher_is_better'}. Best validation mean;
    exact ties go to fewer diverged runs, then the better median, then grid order. Non-finite
    validation values count as diverged and as the worst possible value.
    """
    if not sweep:
        raise ValueError("empty sweep")
    higher = sweep[0]["higher_is_better"]
    if any(e["higher_is_better"] != higher for e in sweep):
        raise ValueError("sweep entries disagree on the metric's direction")
    worst = -math.inf if higher else math.inf
    sign = -1.0 if higher else 1.0  # keys are minimised

    def key(entry: dict[str, Any]) -> tuple[float, int, float, int]:
        vals = np.asarray(entry["val"], dtype=float)
        finite = np.isfinite(vals)
        vals = np.where(finite, vals, worst)
        n_div = int(np.sum(np.asarray(entry["diverged"], dtype=bool) | ~finite))
        return (sign * float(vals.mean()), n_div, sign * float(np.median(vals)), entry["index"])

    best = min(sweep, key=key)
    configs = [e.get("config", {}) for e in sweep]
    return best["index"], on_edge(configs, best.get("config", {}))

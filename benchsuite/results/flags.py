"""The thresholds of the flags that need one, and each raised flag's one-line reason.

Every flag, what it warns about, its threshold and why that threshold: docs/results.md.
Pure functions on plain numbers, so the rules are tested on their own.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from benchsuite.plan.matching import within_band
from benchsuite.protocol.stats import PARAM_TOLERANCE, UNSTABLE_RATE
from benchsuite.results import curves
from benchsuite.results.cell_schema import CellResult, MixerResult
from benchsuite.vocabulary import DivergenceReason, Flag

INDECISIVE_STEPS = 2.0  # interquartile range of the seeds' choices, in grid steps: flagged


def param_mismatch(ratio: float | None) -> bool:
    """True outside ±``PARAM_TOLERANCE`` of the baseline's parameters (LRA's rule): the band the
    equal-size rule matches to (:func:`benchsuite.plan.matching.within_band`)."""
    return ratio is not None and not within_band(ratio)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def selection_spread(grid: list[dict[str, Any]], chosen: list[int]) -> tuple[float, str | None]:
    """(steps, axis): the interquartile range of the seeds' chosen configs, in grid steps along
    the numeric axis where it is widest (categorical axes have no order and are left out);
    (0.0, None) when the middle half of the seeds agree on every axis."""
    widest: tuple[float, str | None] = (0.0, None)
    for key in dict.fromkeys(k for config in grid for k in config):
        axis = sorted({c[key] for c in grid if key in c and _is_number(c[key])})
        picked = [axis.index(grid[i][key]) for i in chosen if grid[i].get(key) in axis]
        if len(axis) < 2 or not picked:
            continue
        q25, q75 = np.percentile(picked, [25, 75])
        if q75 - q25 > widest[0]:
            widest = (float(q75 - q25), key)
    return widest


def indecisive(steps: float) -> bool:
    """True when the middle half of the seeds' choices spans ``INDECISIVE_STEPS`` grid steps or
    more: they disagree on more than neighbouring values, so validation barely separates the
    grid (neighbours disagreeing is the noise of a flat optimum, and is not flagged)."""
    return steps >= INDECISIVE_STEPS


def _fmt(value: Any) -> str:
    return f"{value:g}" if _is_number(value) else str(value)


def _config(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in config.items()) or "the only config"


def reasons(cell: CellResult, arm: MixerResult, base: MixerResult) -> dict[str, str]:
    """One line per raised flag of a comparison, with the figure that crossed its threshold.
    ``cell``: the comparison (``divergence``, ``param_ratio``); ``arm`` / ``base``: the mixer's
    and the baseline's results on the track (``selection``, ``learning_curve``)."""
    n = cell.comparison.n or 0
    counts = cell.divergence.mixer_reasons
    spread = arm.selection.spread
    ratio = cell.param_ratio
    text = {
        Flag.UNSTABLE: f"{counts.get(DivergenceReason.NON_FINITE, 0)} of {n} seeds diverged "
        f"(threshold {UNSTABLE_RATE:.0%})",
        Flag.NO_BETTER_THAN_TRIVIAL: f"{cell.divergence.mixer_not_learned} of {n} seeds learnt "
        f"nothing: no better than the trivial predictor (threshold {UNSTABLE_RATE:.0%})",
        Flag.EDGE_OF_GRID: f"chosen {_config(arm.best_cfg)} is an end of the grid",
        Flag.BASELINE_EDGE_OF_GRID: f"baseline's {_config(base.best_cfg)} is an end of the grid",
        Flag.INDECISIVE_SELECTION: f"middle half of the seeds' choices spans "
        f"{spread.steps:g} grid steps of {spread.axis} "
        f"(threshold {INDECISIVE_STEPS:g})",
        Flag.PARAM_MISMATCH: (
            f"{ratio:.2f}× the baseline's parameters (allowed ±{PARAM_TOLERANCE:.0%})"
            if ratio is not None
            else ""
        ),
        Flag.UNDERTRAINED: _curve_reason(arm),
        Flag.BASELINE_UNDERTRAINED: "baseline's " + _curve_reason(base),
    }
    return {flag: text.get(flag, "") for flag in cell.comparison.flags}


def _curve_reason(entry: MixerResult) -> str:
    curve = entry.learning_curve
    drop, share = (curve.tail_drop, curve.tail_share) if curve else (None, None)
    if drop is None or share is None or not math.isfinite(drop):
        return "training loss still falling"
    return (
        f"training loss fell {drop:.1%} over the last {curves.TAIL:.0%} of the budget "
        f"(threshold {curves.MIN_DROP:.0%}; {share:.0%} of its whole fall)"
    )

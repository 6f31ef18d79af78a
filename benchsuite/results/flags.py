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
from benchsuite.protocol.stats import LEARNT_NOTHING_SEEDS, PARAM_TOLERANCE, UNSTABLE_RATE
from benchsuite.results import curves
from benchsuite.results.cell_schema import CellResult, MixerResult, TrackResult
from benchsuite.vocabulary import DivergenceReason, Flag

INDECISIVE_STEPS = 2.0  # interquartile range of the seeds' choices, in grid steps: flagged
IDENTITY = "identity"  # the control mixer that passes nothing between tokens
IDENTITY_HINT = "scores equal identity's on every seed: it passes nothing between tokens"


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


def same_as_identity(arm: MixerResult, identity: MixerResult | None) -> bool:
    """The mixer's test scores equal those of the ``identity`` control on every seed (as
    measured, to float32 rounding): whatever it is, it passed nothing between tokens."""
    if identity is None or arm is identity:
        return False
    mine, theirs = _scores(arm), _scores(identity)
    return (
        bool(mine)
        and len(mine) == len(theirs)
        and all(
            math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
            for a, b in zip(mine, theirs, strict=True)
        )
    )


def _scores(result: MixerResult) -> list[float]:
    full = result.full
    return list((full.raw or full).per_seed)


def learnt_nothing_words(reason: str, arm: MixerResult, identity: MixerResult | None) -> str:
    """The ``no_better_than_trivial`` flag's ``reason`` with the hint :data:`IDENTITY_HINT`
    where the mixer scores as the ``identity`` control does on every seed (once)."""
    if IDENTITY_HINT in reason or not same_as_identity(arm, identity):
        return reason
    return f"{reason} ({IDENTITY_HINT})" if reason else f"learnt nothing ({IDENTITY_HINT})"


def track_reasons(entry: TrackResult, mixer: str) -> dict[str, str]:
    """The flag reasons of a track's comparison of ``mixer`` as the report shows them: with the
    identity hint of :func:`learnt_nothing_words` where its scores are identity's (a report
    made before the hint, or without it, gets it here)."""
    cell = entry.comparisons[mixer]
    shown = dict(cell.flag_reasons)
    if Flag.NO_BETTER_THAN_TRIVIAL in cell.comparison.flags:
        shown[Flag.NO_BETTER_THAN_TRIVIAL] = learnt_nothing_words(
            shown.get(Flag.NO_BETTER_THAN_TRIVIAL, ""),
            entry.mixers[mixer],
            entry.mixers.get(IDENTITY),
        )
    return shown


def reasons(
    cell: CellResult,
    arm: MixerResult,
    base: MixerResult,
    identity: MixerResult | None = None,
) -> dict[str, str]:
    """One line per raised flag of a comparison, with the figure that crossed its threshold.
    ``cell``: the comparison (``divergence``, ``param_ratio``); ``arm`` / ``base``: the mixer's
    and the baseline's results on the track (``selection``, ``learning_curve``); ``identity``:
    the identity control's there, if it ran (:func:`learnt_nothing_words`)."""
    n = cell.comparison.n or 0
    counts = cell.divergence.mixer_reasons
    spread = arm.selection.spread
    ratio = cell.param_ratio
    text = {
        Flag.UNSTABLE: f"{counts.get(DivergenceReason.NON_FINITE, 0)} of {n} seeds diverged "
        f"(threshold {UNSTABLE_RATE:.0%})",
        Flag.NO_BETTER_THAN_TRIVIAL: learnt_nothing_words(
            f"{cell.divergence.mixer_not_learned} of {n} seeds learnt nothing: no better than "
            f"the trivial predictor (threshold {UNSTABLE_RATE:.0%} of the seeds and at least "
            f"{LEARNT_NOTHING_SEEDS})",
            arm,
            identity,
        ),
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
        Flag.TIMINGS_FROM_DIFFERENT_RUNS: "its step times and the baseline's were measured by "
        "different runs (one's jobs reused from an earlier run in the folder): the step time "
        "ratio is not side by side",
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

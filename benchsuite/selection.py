"""The protocol's rules applied to a trained run (docs/statistics.md): choosing a config on
validation (best validation mean, tie rules), where a choice sits in its grid, and why a result is
imputed. Pure functions; every job applies them to its own seed, the plan records the
choices, and the analysis reads them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsuite.vocabulary import DivergenceReason


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def on_edge(configs: Sequence[Mapping[str, Any]], winner: Mapping[str, Any]) -> bool:
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


@dataclass(frozen=True)
class Candidate:
    """A config of the grid as selection sees it: its validation scores (one per run of it)
    and whether each run diverged."""

    index: int
    config: Mapping[str, Any]
    val: list[float]
    diverged: list[bool]


def select_best_config(candidates: list[Candidate], higher_is_better: bool) -> tuple[int, bool]:
    """Pick the sweep winner (docs/statistics.md); return (grid index, edge_of_grid).

    Best validation mean; exact ties go to fewer diverged runs, then the better median, then
    grid order. Non-finite validation values count as diverged and as the worst possible value.
    """
    if not candidates:
        raise ValueError("empty sweep")
    worst = -math.inf if higher_is_better else math.inf
    sign = -1.0 if higher_is_better else 1.0  # keys are minimised

    def key(candidate: Candidate) -> tuple[float, int, float, int]:
        vals = np.asarray(candidate.val, dtype=float)
        finite = np.isfinite(vals)
        vals = np.where(finite, vals, worst)
        n_div = int(np.sum(np.asarray(candidate.diverged, dtype=bool) | ~finite))
        return (sign * float(vals.mean()), n_div, sign * float(np.median(vals)), candidate.index)

    best = min(candidates, key=key)
    return best.index, on_edge([c.config for c in candidates], best.config)


CAP_TOLERANCE = 1e-6
"""Relative tolerance of the comparison with a cap: scores are float32 (about 7 digits), caps
float64, so a trivial predictor's float32 accuracy 0.6869999766 equals its cap 0.687."""


def worse_than_cap(score: float, cap: float, higher_is_better: bool) -> bool:
    """True when ``score`` is worse than ``cap`` by more than float32 rounding (CAP_TOLERANCE)."""
    if math.isclose(score, cap, rel_tol=CAP_TOLERANCE, abs_tol=CAP_TOLERANCE):
        return False
    return score < cap if higher_is_better else score > cap


LEARNT_MIN = 0.01
"""Where a score's noise is not known (a record from before it was measured): a score that
closes at most this fraction of the gap from its seed's trivial predictor (the cap) to the
metric's ideal value has learnt nothing. Early stopping uses the same floor on validation."""

LEARNT_Z = 1.6448536269514722
"""One-sided 5% normal quantile: a seed learnt something only when its test score beats the
trivial predictor's by more than this many of its own standard errors over the test examples
(docs/statistics.md, Flags)."""


def learnt_floor(cap: float, ideal: float | None, higher_is_better: bool) -> float:
    """The score at or below which a model has learnt nothing, on the scale where higher is
    better (a lower-is-better score negated): the trivial predictor's ``cap`` plus ``LEARNT_MIN``
    of the way from it to ``ideal`` (a metric without one: of the cap's own size)."""
    span = abs(ideal - cap) if ideal is not None and math.isfinite(ideal) else abs(cap)
    return (cap if higher_is_better else -cap) + LEARNT_MIN * span


def learnt_nothing(
    score: float,
    cap: float | None,
    ideal: float | None,
    higher_is_better: bool,
    noise: float | None = None,
) -> bool:
    """True when a finite ``score`` is no better than its seed's trivial predictor: not above
    ``cap`` by more than ``LEARNT_Z`` times ``noise`` (the score's standard error over the test
    examples; a one-sided test at 5%), or, without a measured noise, at or below
    :func:`learnt_floor`. False without a cap."""
    if cap is None or not math.isfinite(score) or not math.isfinite(cap):
        return False
    signed = score if higher_is_better else -score
    if noise is not None and math.isfinite(noise):
        return signed <= (cap if higher_is_better else -cap) + LEARNT_Z * noise
    return signed <= learnt_floor(cap, ideal, higher_is_better)


def divergence(
    score: float, cap: float | None, higher_is_better: bool, finite: bool
) -> DivergenceReason:
    """Why a result is imputed with its seed's cap (docs/statistics.md): ``NON_FINITE`` (a
    non-finite training loss or score), ``NO_BETTER_THAN_TRIVIAL`` (a score worse than the
    trivial predictor's, the cap, beyond float32 rounding), or ``NONE`` when it is not."""
    if not finite or not math.isfinite(score):
        return DivergenceReason.NON_FINITE
    if cap is not None and worse_than_cap(score, cap, higher_is_better):
        return DivergenceReason.NO_BETTER_THAN_TRIVIAL
    return DivergenceReason.NONE

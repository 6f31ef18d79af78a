"""What a metric's declaration allows its values to be, and so the mean difference of two arms
(docs/statistics.md, "Figures for one mixer on one track": a per-track interval of a difference
is clipped to the metric's range)."""

from __future__ import annotations

import math


def metric_range(higher_is_better: bool, ideal: float | None) -> tuple[float, float]:
    """The values a metric can take, as its declaration says: none passes its ``ideal`` (the
    best possible value), and a higher-is-better metric whose ideal is 1 or 100 (a fraction or
    a percentage: accuracy, recall) cannot go below 0. Unbounded where nothing is declared."""
    low, high = -math.inf, math.inf
    if ideal is None or not math.isfinite(ideal):
        return low, high
    if not higher_is_better:
        return float(ideal), high
    return (0.0 if ideal in (1.0, 100.0) else low), float(ideal)


def difference_range(
    bounds: tuple[float, float], base_mean: float, higher_is_better: bool
) -> tuple[float, float]:
    """The values the mean improvement on the difference scale, ``sign * (mixer - baseline)``,
    can take when the mixer's mean lies within ``bounds`` and the baseline's is ``base_mean``:
    an accuracy whose baseline scores 0.411 cannot gain more than 0.589."""
    low, high = bounds[0] - base_mean, bounds[1] - base_mean
    return (low, high) if higher_is_better else (-high, -low)


def clip_to_metric(interval: tuple[float, float], possible: tuple[float, float]) -> tuple:
    """An interval of the mean difference clipped to what the metric allows (``possible``, from
    :func:`difference_range`); an unbounded one (too few seeds to bound it) is left so."""
    low, high = interval
    if not all(map(math.isfinite, interval)):
        return interval
    return (max(low, possible[0]), min(high, possible[1]))

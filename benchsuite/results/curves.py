"""Learning curves of a cell and the one ``undertrained`` rule applied to every cell.

Every training record keeps, for each config of its grid, the training loss averaged over at
most 64 equal windows of the steps done (``sweep[i]["curve"]``, :meth:`Trace.curve
<benchsuite.train.fit.Trace.curve>`). A cell's curve is the pointwise median over its seeds of
the curve of the config each seed chose, with the 25th-75th percentile band; a seed whose chosen
curve holds a non-finite value (it diverged, so its curve covers fewer steps) is left out and
counted.

**undertrained**: the median curve still falls steeply at the end of the budget. Over the last
fifth of the budget (``TAIL``) it fell by more than ``MIN_DROP`` of its value, and that fall is
more than ``MIN_SHARE`` of its whole fall since the first steps, on a log scale (a linear one
when the loss is not positive). The second condition keeps a loss already near its floor (0.03
to 0.025 after starting at 2.2) from being flagged. Under a stopping rule (``Budget.eval_every``,
``patience``) a cell where at least half of the seeds' chosen configs stopped early because their
validation score had stopped improving is not undertrained: it stopped by the rule. Each end
is the mean of the last 5% of the points before it (``SMOOTH``). The same rule and thresholds
hold for every mixer and track; docs/report.md shows them against real runs.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np

from benchsuite.records import RunRecord
from benchsuite.results.cell_schema import LearningCurve, TrackResult
from benchsuite.results.schema import CurvesSummary, Undertrained

TAIL = 0.2  # the last fifth of the budget
SMOOTH = 0.05  # each end of the tail: the mean of this share of the points
MIN_DROP = 0.05  # relative fall of the loss over the tail
MIN_SHARE = 0.05  # share of the whole (log) fall that happened in the tail
MIN_POINTS = 5  # fewer points than this: the rule is not applied
RULE = (
    f"median training loss of the chosen configs fell by more than {MIN_DROP:.0%} over the "
    f"last {TAIL:.0%} of the budget, and that is more than {MIN_SHARE:.0%} of its whole fall "
    "(log scale)"
)


def _rounded(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in values]


def chosen_curve(record: RunRecord) -> list[float] | None:
    """The training-loss curve of the config the record chose (None when it kept none)."""
    if record.result.chosen is None or record.result.chosen >= len(record.result.sweep):
        return None
    curve = record.result.sweep[record.result.chosen].curve
    return [float(v) for v in curve] if curve else None


def tail_figures(curve: np.ndarray) -> tuple[float, float] | None:
    """(relative fall over the tail, share of the whole fall in the tail) of a finite curve."""
    n = len(curve)
    if n < MIN_POINTS:
        return None
    tail, width = max(1, round(TAIL * n)), max(1, round(SMOOTH * n))
    first = float(curve[:width].mean())
    start = float(curve[max(n - tail - width, 0) : n - tail].mean())
    end = float(curve[n - width :].mean())
    drop = (start - end) / abs(start) if start else 0.0
    if min(first, start, end) > 0:
        whole, fall = math.log(first / end), math.log(start / end)
    else:
        whole, fall = first - end, start - end
    share = fall / whole if whole > 0 else 0.0
    return drop, share


def learning_curve(
    records: Mapping[int, RunRecord], steps: int | None, learnt: Collection[int] | None = None
) -> LearningCurve | None:
    """A cell's median curve over its seeds with its band and the ``undertrained`` verdict;
    a seed outside ``learnt`` (its model learnt nothing) does not count as converged, whatever
    its stopping rule said (None: every seed learnt)."""
    curves = {seed: chosen_curve(r) for seed, r in sorted(records.items())}
    finite = {s: np.asarray(c) for s, c in curves.items() if c and np.isfinite(c).all()}
    if not finite:
        return None
    lengths = [len(c) for c in finite.values()]
    points = max(set(lengths), key=lengths.count)  # every finite curve, unless budgets differ
    used = {s: c for s, c in finite.items() if len(c) == points}
    stack = np.stack(list(used.values()))
    median = np.median(stack, axis=0)
    low, high = np.percentile(stack, [25, 75], axis=0)
    figures = tail_figures(median)
    converged = sum(_converged(records[seed]) for seed in used if learnt is None or seed in learnt)
    return LearningCurve(
        points=points,
        steps=steps,
        seeds=sorted(used),
        left_out=len(curves) - len(used),
        median=_rounded(median),
        q25=_rounded(low),
        q75=_rounded(high),
        tail_drop=None if figures is None else figures[0],
        tail_share=None if figures is None else figures[1],
        converged_seeds=converged,
        undertrained=None
        if figures is None
        else bool(figures[0] > MIN_DROP and figures[1] > MIN_SHARE and 2 * converged < len(used)),
    )


def _converged(record: RunRecord) -> bool:
    """Whether the record's chosen config stopped early under its budget's stopping rule."""
    return (
        bool(record.result.sweep[record.result.chosen].converged)
        if record.result.chosen is not None
        else False
    )


def summary(tracks: Mapping[str, TrackResult]) -> CurvesSummary:
    """The rule, its thresholds, and every cell it flagged (``report.json`` →
    ``learning_curves``)."""
    flagged = [
        Undertrained(
            track=track,
            mixer=mixer,
            tail_drop=curve.tail_drop,
            tail_share=curve.tail_share,
            reason=f"training loss still fell {curve.tail_drop:.1%} over the last "
            f"{TAIL:.0%} of the budget ({curve.tail_share:.0%} of its whole fall)",
        )
        for track, entry in tracks.items()
        for mixer, arm in entry.mixers.items()
        if (curve := arm.learning_curve) and curve.undertrained
    ]
    return CurvesSummary(
        rule=RULE, tail_fraction=TAIL, min_drop=MIN_DROP, min_share=MIN_SHARE, undertrained=flagged
    )

"""Each track's resolving power: how far the compared mixers' mean effects spread out, in units of
the seeds' noise, beside the smallest effect its design detects (docs/statistics.md, "Resolving
power"). Every figure is on the comparisons' own scale, that of the per-seed d their test uses
(log-ratios for a positive lower-is-better metric, differences otherwise)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence

from benchsuite.protocol.stats import Comparison
from benchsuite.results.cell_schema import Resolution, TrackResult
from benchsuite.vocabulary import Scale

CONTROL = "control"
"""The tag a mixer declares when it is a control (``identity``: no token mixing; ``random``: a
frozen random token matrix): its effect measures what the task asks of mixing, not how the mixers
differ, so a track's resolving power leaves it out."""


def compared(
    comparisons: Mapping[str, Comparison], scale: Scale, controls: Collection[str] = ()
) -> dict[str, Comparison]:
    """The comparisons the figures are over: not one of ``controls``, on ``scale`` (a log-ratio
    track's comparison that fell back to differences is left out), with 2 seeds or more."""
    return {
        mixer: c
        for mixer, c in comparisons.items()
        if mixer not in controls and c.scale == scale and c.n >= 2
    }


def spread(effects: Sequence[float]) -> float | None:
    """The sample sd (ddof 1) of the mixers' mean effects; None with fewer than 2."""
    return statistics.stdev(effects) if len(effects) >= 2 else None


def noise(sds: Sequence[float]) -> float | None:
    """The RMS of the mixers' seed sds of d: the square root of their mean sample variance; None
    without any."""
    return math.sqrt(statistics.fmean([sd * sd for sd in sds])) if sds else None


def resolving_power(spread_: float | None, noise_: float | None) -> float | None:
    """Spread over noise; None where either is missing or the seeds have no noise."""
    if spread_ is None or not noise_:
        return None
    return spread_ / noise_


def on_scale(pct: float | None, scale: Scale, baseline_mean: float | None) -> float | None:
    """A relative figure in % (as the design plans MDEs) on the comparisons' scale: a log-ratio
    ``-log(1 - pct/100)``, a difference ``pct/100 · |baseline mean|``; the inverse of
    :meth:`Comparison.relative`. None where it has no value there."""
    if pct is None or not math.isfinite(pct):
        return None
    if scale == Scale.LOG:
        return -math.log1p(-pct / 100) if pct < 100 else None
    if baseline_mean is None or not math.isfinite(baseline_mean):
        return None
    return pct / 100 * abs(baseline_mean)


def median_mde(comparisons: Sequence[Comparison]) -> float | None:
    """The median MDE of the comparisons that can detect anything (None where none can)."""
    found = [c.mde for c in comparisons if c.detectable and math.isfinite(c.mde)]
    return statistics.median(found) if found else None


def resolution(
    comparisons: Mapping[str, Comparison],
    scale: Scale,
    planned_pct: float | None = None,
    baseline_mean: float | None = None,
    controls: Collection[str] = (),
) -> Resolution:
    """A track's resolving power from its ``comparisons`` (mixer -> its comparison with the
    baseline) on ``scale``, ``controls`` left out; ``planned_pct``: the MDE the design planned
    for it, in %."""
    used = compared(comparisons, scale, controls)
    cells = list(used.values())
    spread_ = spread([c.improvement for c in cells])
    noise_ = noise([c.sd_diff for c in cells])
    return Resolution(
        scale=scale,
        mixers=list(used),
        seeds=min((c.n for c in cells), default=0),
        spread=spread_,
        noise=noise_,
        resolving_power=resolving_power(spread_, noise_),
        mde_alpha=cells[0].mde_alpha if cells else None,
        mde_planned=on_scale(planned_pct, scale, baseline_mean),
        mde_measured=median_mde(cells),
    )


def of_track(
    entry: TrackResult, planned_pct: float | None, controls: Collection[str]
) -> Resolution | None:
    """``entry``'s resolution (None without a comparison); ``planned_pct``: the design's MDE
    for it, in % (``design.planned_mde``); ``controls``: the mixers tagged :data:`CONTROL`."""
    if not entry.comparisons:
        return None
    base = entry.mixers.get(entry.baseline)
    return resolution(
        {mixer: cell.comparison for mixer, cell in entry.comparisons.items()},
        Scale(entry.facts.scale),
        planned_pct,
        base.full.mean if base else None,
        controls,
    )

"""Paired per-(mixer, track) statistics of the protocol (docs/statistics.md).

Pure numpy / scipy / statsmodels (the last two imported where used: a re-run that trains
nothing reads its cached report without them). Convention: ``d = sign * (mixer - baseline)``
with sign = +1 when higher is better, so ``improvement > 0`` always means the mixer beats the
baseline.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsuite.protocol.power import dz_star, min_seeds_for_significance, min_sign_flip_p
from benchsuite.protocol.ranges import clip_to_metric, difference_range
from benchsuite.protocol.signflip import Flips, one_sided_p, sign_flips, suite_interval
from benchsuite.vocabulary import Flag, Scale, Verdict

MAX_EXACT = 100_000
"""Largest number of sign patterns enumerated exactly; beyond it, this many Monte Carlo flips."""

UNSTABLE_RATE = 0.25
LEARNT_NOTHING_SEEDS = 2
"""The fewest seeds that learnt nothing with which a comparison is flagged
``no_better_than_trivial`` (besides ``UNSTABLE_RATE`` of them): one seed of three is one
seed's bad luck, not a mixer that learns nothing."""
PARAM_TOLERANCE = 0.10  # the equal-size rule's band (as a fraction of the baseline's count)


@dataclass
class Comparison:
    """One paired comparison of a mixer with the baseline on one track (docs/statistics.md).

    ``scale`` is the scale of the analysis: ``"log"`` (paired log-ratios ``log(base / mixer)``, for
    positive lower-is-better metrics) or ``"difference"`` (``sign * (mixer - base)``). The test,
    CI, MDE, margin and verdict are on that scale, in the improvement direction; ``*_rel_pct``
    are the same figures as percentages of the baseline (for the log scale ``1 - exp(-x)``, which
    can never pass +100%); ``*_diff`` are the difference-scale figures in every case.
    ``family`` is the Holm family size the verdict is corrected over; ``detectable`` is False when
    n seeds cannot reach the verdict's alpha at all (the smallest sign-flip p, 2/2**n, is not
    below alpha/family): then ``mde`` is NaN.
    """

    n: int
    higher_is_better: bool
    scale: Scale
    alpha: float
    margin_rel: float
    baseline_mean: float
    baseline_sd: float
    mixer_mean: float
    mixer_sd: float
    delta_mean: float  # mean(mixer - baseline), raw metric units
    per_seed_diffs: list[float]  # mixer - baseline per seed, raw metric units
    per_seed_improvements: list[float]  # d per seed, on the analysis scale (> 0: mixer better)
    improvement: float
    improvement_rel_pct: float
    ci95: tuple[float, float]
    ci95_rel_pct: tuple[float, float]
    improvement_diff: float
    ci95_diff: tuple[float, float]
    ci_half_width: float
    sd_diff: float
    sd_rel: float  # sd of d relative to the baseline (the log scale is relative already)
    wins: int
    ties: int
    losses: int
    p_value: float
    p_method: str
    mc_seed: int | None
    mde: float
    mde_rel_pct: float
    mde_alpha: float
    margin: float
    p_tost: float
    family: int = 1
    detectable: bool = True
    p_holm: float = math.nan
    p_tost_holm: float = math.nan
    stopped_at: int | None = None  # the seeds at which the futility look stopped it (p = 1)
    p_at_stop: float | None = None  # there, the exact sign-flip p of those seeds' own data
    verdict: Verdict = Verdict.INCONCLUSIVE
    flags: list[Flag] = field(default_factory=list)

    def relative(self, value: float) -> float:
        """An analysis-scale effect as a percentage of the baseline."""
        if self.scale == Scale.LOG:
            return 100.0 * (1.0 - math.exp(-value)) if math.isfinite(value) else math.nan
        return _rel(value, self.baseline_mean)

    @property
    def interval_bounded(self) -> bool:
        """The seeds bound the 95% interval (the sign-flip test can reject at 0.05: six seeds)."""
        return all(bound is not None and math.isfinite(bound) for bound in self.ci95)

    def at_alpha(self, alpha: float) -> Comparison:
        """This comparison with its power-based MDE (power .8, two-sided) at ``alpha`` on the
        analysis scale; NaN and ``detectable`` False when no sign pattern of n seeds reaches
        ``alpha``."""
        detectable = self.n >= 2 and min_sign_flip_p(self.n) < alpha
        mde = dz_star(self.n, alpha) * self.sd_diff if detectable else math.nan
        return dataclasses.replace(
            self,
            mde_alpha=alpha,
            detectable=detectable,
            mde=mde,
            mde_rel_pct=self.relative(mde),
        )

    def stopped(self, seeds: int) -> Comparison:
        """This comparison as the futility look stopped it at ``seeds``: p = 1 for its tests
        (the rule's), its seeds' own sign-flip p kept beside it as ``p_at_stop``."""
        return dataclasses.replace(
            self, stopped_at=seeds, p_at_stop=self.p_value, p_value=1.0, p_tost=1.0
        )


def _mean_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def sign_flip_p(d: np.ndarray, mc_seed: int = 0) -> tuple[float, str, int | None]:
    """Two-sided paired sign-flip p on mean(d): (p, 'exact' | 'monte_carlo', seed or None)."""
    n = len(d)
    if n < 2:
        return 1.0, "exact", None
    exact = 2**n <= MAX_EXACT
    from scipy import stats

    res = stats.permutation_test(
        (d,),
        _mean_stat,
        permutation_type="samples",
        vectorized=True,
        n_resamples=MAX_EXACT,
        alternative="two-sided",
        rng=None if exact else np.random.default_rng(mc_seed),
    )
    return float(res.pvalue), ("exact" if exact else "monte_carlo"), (None if exact else mc_seed)


def _tost_p(d: np.ndarray, margin: float, flips: Flips) -> float:
    """Exact sign-flip TOST p that mean(d) lies strictly inside (-margin, +margin): the larger
    of the one-sided sign-flip p of ``mean > -margin`` and of ``mean < +margin`` (the same flips
    as the interval; 1 without a margin or with one seed)."""
    if len(d) < 2 or margin <= 0:
        return 1.0
    seeds = {"d": d}
    above = one_sided_p(seeds, flips, -margin, greater=True)
    below = one_sided_p(seeds, flips, margin, greater=False)
    return max(above, below)


def exact_interval(d: np.ndarray, flips: Flips, alpha: float = 0.05) -> tuple[float, float]:
    """The 1 - ``alpha`` interval of mean(d): the sign-flip test inverted, the shifts it does not
    reject (infinite where no shift is rejected: too few seeds for ``alpha``). It lies within the
    seeds' own range; :func:`compare_paired` clips it to what the metric's range allows the mean
    to be (:mod:`benchsuite.protocol.ranges`)."""
    if len(d) < 2:
        return -math.inf, math.inf
    low, high = suite_interval({"d": d}, flips, ["d"], alpha)
    return low, high


def interval_seeds(alpha: float = 0.05) -> int:
    """The fewest seeds whose sign-flip test can reject at ``alpha`` (a bounded interval)."""
    return min_seeds_for_significance(1, alpha)


def _rel(value: float, ref: float) -> float:
    return 100.0 * value / abs(ref) if ref != 0 and math.isfinite(value) else math.nan


def excludes_zero(interval: Sequence[float | None]) -> bool:
    """True when a CI lies entirely on one side of 0 (a significant verdict needs it)."""
    lo, hi = interval
    return lo is not None and hi is not None and (lo > 0 or hi < 0)


def _verdict(c: Comparison) -> Verdict:
    """Significant: Holm p below alpha and the 95% interval (the same sign-flip test inverted)
    excludes 0, which it then does; ``needs_more_seeds`` where no sign pattern of its seeds could
    reach the alpha of Holm's first step; ``inconclusive`` once the futility look stopped it."""
    if c.n < 2 or c.stopped_at:  # a stopped comparison could reach no verdict (p = 1)
        return Verdict.INCONCLUSIVE
    if not c.detectable:  # no sign pattern of n seeds reaches alpha: the design cannot decide
        return Verdict.NEEDS_MORE_SEEDS
    p = c.p_value if math.isnan(c.p_holm) else c.p_holm
    p_tost = c.p_tost if math.isnan(c.p_tost_holm) else c.p_tost_holm
    if p < c.alpha and excludes_zero(c.ci95):
        lo, hi = c.ci95
        small = -c.margin < lo and hi < c.margin
        if c.improvement > 0:
            return Verdict.SIGNIFICANT_WIN_BELOW_MARGIN if small else Verdict.SIGNIFICANT_WIN
        return Verdict.SIGNIFICANT_LOSS_BELOW_MARGIN if small else Verdict.SIGNIFICANT_LOSS
    if p_tost < c.alpha and Flag.NO_BETTER_THAN_TRIVIAL not in c.flags:
        return Verdict.EQUIVALENT  # never to a model that learnt nothing
    return Verdict.INCONCLUSIVE


def compare_paired(
    baseline: Sequence[float],
    mixer: Sequence[float],
    higher_is_better: bool = False,
    *,
    scale: Scale = Scale.DIFFERENCE,
    margin_rel: float = 0.05,
    caps: Sequence[float] | None = None,
    alpha: float = 0.05,
    mc_seed: int = 0,
    flags: Sequence[Flag] = (),
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> Comparison:
    """Paired comparison of per-seed metrics (index i of both arms = evaluation seed i), with its
    ``flags`` (:func:`comparison_flags`).

    ``scale="log"`` analyses paired log-ratios (positive lower-is-better metrics; it falls back to
    differences if a value is not positive). ``bounds``: the values the metric can take
    (:func:`benchsuite.protocol.ranges.metric_range`); an interval of the mean difference is
    clipped to what they allow given the baseline's mean (:func:`clip_to_metric`). The verdict
    and MDE are the ones for a family of size 1; :func:`holm_adjusted` gives the whole family's.
    """
    base = np.asarray(baseline, dtype=float)
    mix = np.asarray(mixer, dtype=float)
    if base.shape != mix.shape or base.ndim != 1:
        raise ValueError(
            f"paired arms must be 1-D and of equal length: baseline has {base.size} seeds, "
            f"mixer has {mix.size}"
        )
    if not (np.all(np.isfinite(base)) and np.all(np.isfinite(mix))):
        raise ValueError("metrics must be finite; impute diverged runs first (impute_diverged)")
    n = base.size
    if n == 0:
        raise ValueError("no paired seeds to compare")
    given_caps = None if caps is None else np.asarray(caps, dtype=float)
    d, scale, margin = improvements(base, mix, higher_is_better, scale, margin_rel, given_caps)
    sign = 1.0 if higher_is_better else -1.0
    raw = mix - base
    d_diff = sign * raw
    base_mean = float(base.mean())
    sd_d = float(d.std(ddof=1)) if n >= 2 else math.nan
    flips = sign_flips({"d": d}, mc_seed, MAX_EXACT, MAX_EXACT)
    ci = exact_interval(d, flips)
    ci_diff = (
        ci  # d is the difference itself
        if scale == Scale.DIFFERENCE
        else exact_interval(d_diff, sign_flips({"d": d_diff}, mc_seed, MAX_EXACT, MAX_EXACT))
    )
    possible = difference_range(bounds, base_mean, higher_is_better)
    ci_diff = clip_to_metric(ci_diff, possible)  # what the metric's range allows
    ci = ci_diff if scale == Scale.DIFFERENCE else ci
    half = (ci[1] - ci[0]) / 2 if all(map(math.isfinite, ci)) else math.nan
    p, p_method, seed_used = sign_flip_p(d, mc_seed)
    comp = Comparison(
        n=n,
        higher_is_better=higher_is_better,
        scale=scale,
        alpha=alpha,
        margin_rel=margin_rel,
        baseline_mean=base_mean,
        baseline_sd=float(base.std(ddof=1)) if n >= 2 else math.nan,
        mixer_mean=float(mix.mean()),
        mixer_sd=float(mix.std(ddof=1)) if n >= 2 else math.nan,
        delta_mean=float(raw.mean()),
        per_seed_diffs=raw.tolist(),
        per_seed_improvements=d.tolist(),
        improvement=float(d.mean()),
        improvement_rel_pct=math.nan,
        ci95=ci,
        ci95_rel_pct=(math.nan, math.nan),
        improvement_diff=float(d_diff.mean()),
        ci95_diff=ci_diff,
        ci_half_width=half,
        sd_diff=sd_d,
        sd_rel=sd_d if scale == Scale.LOG else sd_d / abs(base_mean) if base_mean else math.nan,
        wins=int(np.sum(d > 0)),
        ties=int(np.sum(d == 0)),
        losses=int(np.sum(d < 0)),
        p_value=p,
        p_method=p_method,
        mc_seed=seed_used,
        mde=math.nan,
        mde_rel_pct=math.nan,
        mde_alpha=alpha,
        margin=margin,
        p_tost=_tost_p(d, margin, flips),
        flags=[Flag(flag) for flag in flags],
    )
    comp.improvement_rel_pct = comp.relative(comp.improvement)
    comp.ci95_rel_pct = (comp.relative(ci[0]), comp.relative(ci[1]))
    comp = comp.at_alpha(alpha)
    return dataclasses.replace(comp, verdict=_verdict(comp))


GAIN_SHARE = 0.25
"""The equivalence margin is at most this share of the baseline's gain over the trivial
predictor (docs/statistics.md, "Equivalence margin"): a mixer called equivalent keeps at least
three quarters of what the baseline learnt."""


def improvements(
    baseline: np.ndarray,
    mixer: np.ndarray,
    higher_is_better: bool,
    scale: Scale,
    margin_rel: float,
    caps: np.ndarray | None = None,
) -> tuple[np.ndarray, Scale, float]:
    """The paired improvements d on the analysis scale (> 0: the mixer better), the scale used
    (``log`` falls back to differences for a higher-is-better metric or a value that is not
    positive) and the equivalence margin on it: ``margin_rel`` of the baseline (a log-ratio of
    ``log1p(margin_rel)``; a difference of ``margin_rel`` of its mean), and never more than
    ``GAIN_SHARE`` of the baseline's mean gain over its seeds' trivial predictors ``caps`` on
    the same scale (where the baseline gained; no caps: the relative margin alone)."""
    if scale not in tuple(Scale):
        raise ValueError(f"unknown scale {scale!r}; valid: log, difference")
    positive = np.all(baseline > 0) and np.all(mixer > 0)
    if scale == Scale.LOG and (higher_is_better or not positive):
        scale = Scale.DIFFERENCE
    if scale == Scale.LOG:
        d, margin = np.log(baseline / mixer), math.log1p(margin_rel)
        gain = _mean_gain(caps, lambda c: np.log(c / baseline), positive=True)
    else:
        sign = 1.0 if higher_is_better else -1.0
        d, margin = sign * (mixer - baseline), margin_rel * abs(float(baseline.mean()))
        gain = _mean_gain(caps, lambda c: sign * (baseline - c), positive=False)
    if gain > 0:
        margin = min(margin, GAIN_SHARE * gain)
    return d, scale, margin


def _mean_gain(caps: np.ndarray | None, gain: Any, positive: bool) -> float:
    """The baseline's mean gain over the caps (NaN without caps, or with one that is not finite
    or, for a log-ratio, not positive)."""
    if caps is None or len(caps) == 0:
        return math.nan
    caps = np.asarray(caps, dtype=float)
    if not np.all(np.isfinite(caps)) or (positive and not np.all(caps > 0)):
        return math.nan
    return float(np.mean(gain(caps)))


def holm(p_values: Sequence[float], family: int | None = None) -> list[float]:
    """Holm-adjusted p over a family of ``family`` tests of which ``p_values`` are known (the
    others, not finished, count as p = 1: never below these in Holm's order)."""
    size = len(p_values) if family is None else family
    if size < len(p_values):
        raise ValueError(f"family of {size} cannot hold {len(p_values)} comparisons")
    padded = np.array([*p_values, *[1.0] * (size - len(p_values))], dtype=float)
    # Holm's step-down: the i-th smallest p times (size - i), made non-decreasing, at most 1. The
    # same arithmetic as statsmodels' multipletests(method="holm") (the tests check equality),
    # written out because that function runs a full garbage collection on every call: 0.2-0.4 s
    # in a process holding torch, eleven times an analysis.
    order = np.argsort(padded, kind="stable")
    steps = np.maximum.accumulate(padded[order] * np.arange(size, 0, -1))
    adjusted = np.empty(size)
    adjusted[order] = np.minimum(steps, 1.0)
    return [float(p) for p in adjusted[: len(p_values)]]


def holm_adjusted(
    comparisons: list[Comparison], alpha: float = 0.05, family: int | None = None
) -> list[Comparison]:
    """The comparisons after Holm over the family (``family``: its planned size, default the
    comparisons given), separately on p_value and p_tost: with p_holm, p_tost_holm, the verdict,
    and the MDE at Holm's most demanding step (alpha / family size), the power the verdicts
    actually have."""
    if not comparisons:
        return []
    size = len(comparisons) if family is None else family
    p_holm = holm([c.p_value for c in comparisons], size)
    p_tost_holm = holm([c.p_tost for c in comparisons], size)
    adjusted = []
    for comp, ph, pt in zip(comparisons, p_holm, p_tost_holm, strict=True):
        held = dataclasses.replace(comp, alpha=alpha, family=size, p_holm=ph, p_tost_holm=pt)
        held = held.at_alpha(alpha / size)
        adjusted.append(dataclasses.replace(held, verdict=_verdict(held)))
    return adjusted


def comparison_flags(
    *,
    non_finite: int,
    no_better_than_trivial: int,
    n: int,
    edge_of_grid: bool,
    baseline_edge_of_grid: bool,
    indecisive_selection: bool,
    param_mismatch: bool = False,
    undertrained: bool = False,
    baseline_undertrained: bool = False,
) -> list[Flag]:
    """The flags of docs/statistics.md a comparison is built with, in their report order.

    ``non_finite``: the mixer's seeds imputed for it; ``no_better_than_trivial``: its seeds
    that learnt nothing (worse than the trivial predictor or at it); each flag at 25% of ``n`` or
    more, the second only with more than one such seed (:func:`learnt_nothing_flagged`; a
    flagged cell is never ``equivalent_within_margin``). ``param_mismatch`` is
    decided by :func:`benchsuite.results.flags.param_mismatch`, ``undertrained`` and
    ``baseline_undertrained`` by each arm's learning curve.
    """
    raised = {
        Flag.UNSTABLE: n > 0 and non_finite / n >= UNSTABLE_RATE,
        Flag.NO_BETTER_THAN_TRIVIAL: learnt_nothing_flagged(no_better_than_trivial, n),
        Flag.EDGE_OF_GRID: edge_of_grid,
        Flag.BASELINE_EDGE_OF_GRID: baseline_edge_of_grid,
        Flag.INDECISIVE_SELECTION: indecisive_selection,
        Flag.PARAM_MISMATCH: param_mismatch,
        Flag.UNDERTRAINED: undertrained,
        Flag.BASELINE_UNDERTRAINED: baseline_undertrained,
    }
    return [flag for flag, up in raised.items() if up]


def learnt_nothing_flagged(count: int, n: int) -> bool:
    """A comparison of ``n`` seeds of which ``count`` learnt nothing is flagged
    ``no_better_than_trivial``: at least ``UNSTABLE_RATE`` of them, and more than one
    (``LEARNT_NOTHING_SEEDS``)."""
    return n > 0 and count >= LEARNT_NOTHING_SEEDS and count / n >= UNSTABLE_RATE


def impute_diverged(
    values: Sequence[float], diverged: Sequence[bool], caps: Sequence[float]
) -> list[float]:
    """Label-blind imputation: each diverged (or non-finite) run's metric becomes its seed's cap.

    Apply to both arms alike (the same caps: the seeds' trivial predictors) so the paired
    sign-flip test stays exact.
    """
    if not len(values) == len(diverged) == len(caps):
        raise ValueError(f"{len(values)} values, {len(diverged)} flags and {len(caps)} caps")
    return [
        float(cap) if div or not math.isfinite(v) else float(v)
        for v, div, cap in zip(values, diverged, caps, strict=True)
    ]


@dataclass
class Count:
    """Diverged runs of one arm with their exact 95% interval."""

    count: int
    n: int
    rate: float | None
    ci95: list[float]


def divergence_summary(k: int, n: int) -> Count:
    """Diverged count k of n runs, its rate and exact Clopper-Pearson 95% CI."""
    if n == 0:
        return Count(0, 0, None, [0.0, 1.0])
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return Count(k, n, k / n, [float(ci.low), float(ci.high)])


def compare_both_converged(
    baseline: Sequence[float],
    mixer: Sequence[float],
    base_div: Sequence[bool],
    mix_div: Sequence[bool],
    higher_is_better: bool,
    **kwargs: Any,
) -> Comparison | None:
    """Secondary analysis on the seeds where both arms converged; None if fewer than 2 remain."""
    if not len(baseline) == len(mixer) == len(base_div) == len(mix_div):
        raise ValueError("baseline, mixer and both divergence lists must have equal length")
    keep = [i for i in range(len(baseline)) if not (base_div[i] or mix_div[i])]
    if len(keep) < 2:
        return None
    caps = kwargs.pop("caps", None)
    return compare_paired(
        [baseline[i] for i in keep],
        [mixer[i] for i in keep],
        higher_is_better,
        caps=None if caps is None else [caps[i] for i in keep],
        **kwargs,
    )

"""Across-track figures of the protocol (docs/statistics.md). Pure numpy / scipy / statsmodels.

Every run is scored on a bounded scale comparable across tracks: the fraction of the gap between
the trivial predictor (its seed's cap) and the metric's ideal value that it closes (0 = trivial,
1 = perfect; a diverged run, imputed with its cap, scores 0). Tracks whose metric declares no
ideal are scored between the trivial predictor and the baseline's mean instead (baseline = 1).

Per mixer, every track weighs the same, and the effect, its interval and its test are one
statistic: the suite effect, the mean over tracks of the per-track mean paired score difference.
Its p is the two-sided sign-flip test of that same mean (each seed's difference flipped within its
track; every pattern up to 2**22, else Monte Carlo with a recorded seed), or, where the seeds come
in stages (an extended run, the futility look), the combination of the stages' tests
(:mod:`benchsuite.protocol.combination`); its CI is that test inverted (the shifts it does not
reject) at the same level, so the two cannot disagree; Holm across the planned mixers. A suite
of one track gets no suite verdict (``one_track``). A verdict is significant only when its Holm
p is below alpha and its CI excludes 0; it is ``better`` or ``worse`` (the sign of the effect)
only when it holds with any single track left out (``robust_without_any_track``); a significant
result that does not is ``not_robust``: it rests on the tracks without which the effect changes
sign or falls below half its size, or, where none does, its robustness needs more seeds
(:mod:`.robustness`). A mixer with significant per-track wins and significant per-track losses
is ``mixed``, whatever its suite effect.

Input, per track: a :class:`TrackPairs` — each mixer's paired, imputed per-seed metrics and the
seeds' trivial-predictor scores (:class:`Paired`). Output: the typed ``across_tracks`` block
(:class:`~benchsuite.results.schema.AcrossTracks`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsuite.protocol.combination import weights
from benchsuite.protocol.signflip import EXACT_LIMIT, FLIPS, mc_error
from benchsuite.protocol.stats import excludes_zero
from benchsuite.results import robustness
from benchsuite.results.robustness import SuiteTests
from benchsuite.results.schema import BOOTSTRAP_SEEDS, AcrossMixer, AcrossTracks, Ranks, SuiteTest
from benchsuite.vocabulary import Shift, SuiteVerdict, Verdict


@dataclass(frozen=True)
class Paired:
    """One comparison's per-seed values (a diverged seed imputed with its cap), paired by seed,
    and each seed's trivial-predictor score."""

    baseline: Sequence[float]
    mixer: Sequence[float]
    caps: Sequence[float]
    seeds: Sequence[int] | None = None  # each value's seed (default: 0, 1, ...)

    def seed_ids(self) -> list[int]:
        """Each value's seed."""
        return list(self.seeds) if self.seeds is not None else list(range(len(self.mixer)))


@dataclass(frozen=True)
class TrackPairs:
    """One track's comparisons, as the across-track figures read them."""

    higher_is_better: bool
    ideal: float | None  # the metric's best possible value (None: it declares none)
    pairs: Mapping[str, Paired]  # by mixer


def normalised(
    values: Sequence[float], caps: Sequence[float], higher_is_better: bool, reference: float
) -> np.ndarray:
    """Scores: the fraction of the gap from the trivial predictor to ``reference`` closed."""
    value, cap = np.asarray(values, dtype=float), np.asarray(caps, dtype=float)
    gap = (reference - cap) if higher_is_better else (cap - reference)
    closed = (value - cap) if higher_is_better else (cap - value)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap != 0, closed / gap, 0.0)


def _reference(track: TrackPairs) -> float | None:
    """The value a score of 1 stands for: the metric's ideal, else the baseline's mean."""
    if track.ideal is not None:
        return float(track.ideal)
    baselines = [v for pair in track.pairs.values() for v in pair.baseline]
    return float(np.mean(baselines)) if baselines else None


def track_scores(track: TrackPairs) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per mixer: (baseline scores, mixer scores), paired by seed."""
    reference = _reference(track)
    if reference is None:
        return {}
    higher = track.higher_is_better
    return {
        mixer: (
            normalised(pair.baseline, pair.caps, higher, reference),
            normalised(pair.mixer, pair.caps, higher, reference),
        )
        for mixer, pair in track.pairs.items()
    }


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    from scipy import stats

    return stats.trim_mean(x, 0.25, axis=axis)


def _prob_improvement(mix: np.ndarray, base: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean((mix > base) + 0.5 * (mix == base), axis=axis)


def _percentile_ci(samples: np.ndarray) -> list[float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [float(lo), float(hi)]


@dataclass(frozen=True)
class Counted:
    """How many tracks a mixer won, lost, tied within the margin, left open, or whose seeds could
    not decide (per-track verdicts, after Holm)."""

    tracks_won: int
    tracks_lost: int
    tracks_equivalent: int
    tracks_inconclusive: int
    tracks_needing_seeds: int


def _count_verdicts(verdicts: Mapping[str, Mapping[str, Verdict]], name: str) -> Counted:
    found = [Verdict(v[name]) for v in verdicts.values() if name in v]
    return Counted(
        tracks_won=sum(v.better for v in found),
        tracks_lost=sum(v.worse for v in found),
        tracks_equivalent=sum(v == Verdict.EQUIVALENT for v in found),
        tracks_inconclusive=sum(v == Verdict.INCONCLUSIVE for v in found),
        tracks_needing_seeds=sum(v == Verdict.NEEDS_MORE_SEEDS for v in found),
    )


def _ranks(means: dict[str, dict[str, float]], names: list[str], alpha: float) -> Ranks:
    """Average rank (1 = best mean score) with Friedman and Nemenyi CD, descriptive, over the
    tracks every ranked mixer ran on (the others are named in ``tracks_dropped``)."""
    from scipy import stats

    tracks = [t for t, m in means.items() if all(name in m for name in names)]
    dropped = {
        t: sorted(n for n in names if n not in m) for t, m in means.items() if t not in tracks
    }
    per_track = {
        t: dict(zip(names, stats.rankdata([-means[t][n] for n in names]).tolist(), strict=True))
        for t in tracks
    }
    k, n_tracks = len(names), len(tracks)
    ranks = Ranks(
        descriptive=True,
        tracks=tracks,
        tracks_dropped={t: f"not run by {', '.join(m)}" for t, m in dropped.items()},
        per_track=per_track,
        average_rank={
            n: (float(np.mean([per_track[t][n] for t in tracks])) if tracks else None)
            for n in names
        },
        friedman_statistic=None,
        friedman_p=None,
        nemenyi_cd=None,
        reason=None,
        alpha=alpha,
    )
    if k < 3 or n_tracks < 2:
        reason = f"Friedman needs >= 3 methods and >= 2 complete tracks; have {k} and {n_tracks}"
        return dataclasses.replace(ranks, reason=reason)
    table = [[means[t][n] for t in tracks] for n in names]
    res = stats.friedmanchisquare(*table)
    q_alpha = stats.studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2)
    return dataclasses.replace(
        ranks,
        friedman_statistic=None if np.isnan(res.statistic) else float(res.statistic),
        friedman_p=None if np.isnan(res.pvalue) else float(res.pvalue),
        nemenyi_cd=float(q_alpha * math.sqrt(k * (k + 1) / (6 * n_tracks))),
    )


def _bootstrap(
    pairs: dict[str, tuple[np.ndarray, np.ndarray]], rng: np.random.Generator, n_boot: int
) -> dict[str, np.ndarray]:
    """Per track, (n_boot, seeds) resampled seed indices (stratified by track)."""
    return {t: rng.integers(0, len(b), size=(n_boot, len(b))) for t, (b, _) in pairs.items()}


def _mixer_entry(
    pairs: dict[str, tuple[np.ndarray, np.ndarray]],
    rng: np.random.Generator,
    n_boot: int,
    **tested: Any,
) -> AcrossMixer:
    """One mixer's figures: its pooled scores against the baseline on its tracks (scores
    paired), with stratified bootstrap intervals, and the fields of its suite test (``tested``:
    the suite effect's own interval is the test's, :func:`suite_interval`)."""
    index = _bootstrap(pairs, rng, n_boot)
    base = np.concatenate([b for b, _ in pairs.values()])
    mix = np.concatenate([m for _, m in pairs.values()])
    boot_base = np.concatenate([pairs[t][0][index[t]] for t in pairs], axis=1)
    boot_mix = np.concatenate([pairs[t][1][index[t]] for t in pairs], axis=1)
    effects = {t: float((m - b).mean()) for t, (b, m) in pairs.items()}
    # a bootstrap of fewer seeds per track than this gives degenerate intervals (3 seeds: often
    # zero width): the summaries are then shown without one
    bounded = min(len(b) for b, _ in pairs.values()) >= BOOTSTRAP_SEEDS

    def ci(samples: np.ndarray) -> list[float] | None:
        return _percentile_ci(samples) if bounded else None

    return AcrossMixer(
        n_tracks=len(pairs),
        tracks=list(pairs),
        n_cells=int(mix.size),
        per_track_effect=effects,
        suite_effect=float(np.mean(list(effects.values()))),
        iqm=float(_iqm(mix)),
        iqm_ci95=ci(_iqm(boot_mix)),
        iqm_diff=float(_iqm(mix) - _iqm(base)),
        iqm_diff_ci95=ci(_iqm(boot_mix) - _iqm(boot_base)),
        prob_improvement=float(_prob_improvement(mix, base)),
        prob_improvement_ci95=ci(_prob_improvement(boot_mix, boot_base)),
        **tested,
    )


def aggregate_across_tracks(
    per_track: Mapping[str, TrackPairs],
    *,
    baseline_name: str,
    verdicts: Mapping[str, Mapping[str, Verdict]] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    planned: Mapping[str, list[str]] | None = None,
    stages: Sequence[int] = (),
) -> AcrossTracks:
    """Suite-level figures per mixer (and the baseline's own scores): ``across_tracks``.

    ``verdicts``: optional ``{track: {mixer: Holm-adjusted verdict}}`` from the per-track
    comparisons. ``alpha``: the level of the suite tests and of their intervals (less than 0.05
    when earlier looks at the same comparisons are accounted for). ``planned``: ``{mixer:
    [tracks]}`` the run planned (default: those with results); Holm runs over every planned
    mixer, and a mixer's tracks without results are named (``tracks_missing``). ``stages``: the
    seed counts that end each stage of the combination test (docs/statistics.md, "Looks"; none
    or one: one test of every seed). See docs/results.md for each mixer's fields.
    """
    if not per_track:
        raise ValueError("no tracks to aggregate")
    scores = {t: track_scores(track) for t, track in per_track.items()}
    scores = {t: s for t, s in scores.items() if s}
    names: list[str] = []
    for track_scores_ in scores.values():
        names += [n for n in track_scores_ if n not in names]
    rng = np.random.default_rng(seed)
    paired = {n: {t: s[n] for t, s in scores.items() if n in s} for n in names}
    most_tracks = max((len(pairs) for pairs in paired.values()), default=0)
    bounds = list(stages) if len(stages) > 1 else []

    family = len(planned) if planned else None
    tests = {
        name: SuiteTests(
            {t: m - b for t, (b, m) in pairs.items()},
            {t: per_track[t].pairs[name].seed_ids() for t in pairs},
            bounds,
            seed,
        )
        for name, pairs in paired.items()
    }
    full = {n: tests[n].test(list(paired[n])) for n in names}
    effects = {n: tests[n].effect(list(paired[n])) for n in names}
    ps = {n: full[n].p() for n in names}
    holm = robustness.holm_over(ps, family)
    left_out = robustness.left_out(tests, list(scores), family, alpha)
    mixers = {}
    for name in names:
        effect, p, pairs = effects[name], ps[name], paired[name]
        # the interval of the same test: the shifts it does not reject (not the bootstrap's)
        interval = tests[name].interval(full[name], list(pairs), alpha)
        shown = robustness.direction(holm[name], effect, alpha)
        if not excludes_zero(interval):
            shown = Shift.NONE  # a p not monotone in the shift: not significant
        without = left_out[name]
        robust = bool(without) and all(held.direction == shown for held in without.values())
        verdict = (
            SuiteVerdict.INCONCLUSIVE
            if shown == Shift.NONE
            else SuiteVerdict(shown)
            if robust
            else SuiteVerdict.NOT_ROBUST
        )
        rests = (
            robustness.rests_on(effect, without, shown)
            if verdict == SuiteVerdict.NOT_ROBUST
            else []
        )
        counts = _count_verdicts(verdicts, name) if verdicts else None
        if counts and counts.tracks_won and counts.tracks_lost:
            verdict = SuiteVerdict.MIXED  # significant wins and losses: no one direction
        if len(pairs) == 1:
            verdict = SuiteVerdict.ONE_TRACK  # a suite of one track: its table says it all
        level = alpha / max(family or 0, len(names))  # Holm's first step
        needed = (
            robustness.seeds_needed(tests[name].diffs, without, shown, level)
            if verdict == SuiteVerdict.NOT_ROBUST and not rests
            else None
        )
        # the bootstrap draws from ``rng`` here, one mixer after the other in name order
        mixers[name] = _mixer_entry(
            pairs,
            rng,
            n_boot,
            suite_effect_ci95=interval,
            fewer_tracks=len(pairs) < most_tracks,
            tracks_won=counts.tracks_won if counts else None,
            tracks_lost=counts.tracks_lost if counts else None,
            tracks_equivalent=counts.tracks_equivalent if counts else None,
            tracks_inconclusive=counts.tracks_inconclusive if counts else None,
            tracks_needing_seeds=counts.tracks_needing_seeds if counts else None,
            suite_test=SuiteTest(
                statistic=effect,
                statistic_name="suite_effect",
                alternative="two-sided",
                direction=robustness.sign(effect),
                p_value=p,
                p_method="exact" if tests[name].exact else "monte_carlo",
                flips=tests[name].flips,
                mc_seed=seed,
                p_holm=holm[name],
                p_se=None if tests[name].exact else mc_error(p, FLIPS),
                stages=max(len(bounds), 1),
            ),
            without_track=without,
            robust_without_any_track=robust,
            verdict=verdict,
            tracks_missing=[t for t in (planned or {}).get(name, []) if t not in pairs],
            rests_on=rests,
            robustness_seeds=needed,
        )

    baseline = {
        t: pairs_[0] for t, s in scores.items() for pairs_ in list(s.values())[:1]
    }  # every mixer of a track shares the baseline's scores on its seeds
    means = {
        t: {baseline_name: float(baseline[t].mean())}
        | {n: float(m.mean()) for n, (_, m) in s.items()}
        for t, s in scores.items()
    }
    everyone = np.concatenate(list(baseline.values())) if baseline else np.array([])
    return AcrossTracks(
        baseline=baseline_name,
        scale="fraction of the gap from the trivial predictor to the ideal value closed",
        baseline_iqm=float(_iqm(everyone)) if everyone.size else None,
        n_boot=n_boot,
        flips=FLIPS,
        seed=seed,
        alpha=alpha,
        tracks=list(scores),
        tracks_not_scored=[t for t in per_track if t not in scores],
        mixers=mixers,
        holm_family=max(family or 0, len(names)),
        ranks=_ranks(means, [baseline_name, *names], alpha),
        stages=list(stages),
        stage_weights=weights(list(stages)) if stages else [],
        exact_limit=EXACT_LIMIT,
    )

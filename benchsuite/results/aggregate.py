"""Across-track figures of the protocol (docs/statistics.md). Pure numpy / scipy / statsmodels.

Every run is scored on a bounded scale comparable across tracks: the fraction of the gap between
the trivial predictor (its seed's cap) and the metric's ideal value that it closes (0 = trivial,
1 = perfect; a diverged run, imputed with its cap, scores 0). Tracks whose metric declares no
ideal are scored between the trivial predictor and the baseline's mean instead (baseline = 1).

Per mixer, every track weighs the same, and the effect, its interval and its test are one
statistic: the suite effect, the mean over tracks of the per-track mean paired score difference.
Its p is the two-sided sign-flip test of that same mean (each seed's difference flipped within its
track; every pattern where there are at most ``FLIPS``, else Monte Carlo with a recorded seed);
its 95% CI is that test inverted (the shifts it does not reject), so the two cannot disagree;
Holm across the planned mixers. A suite of one track gets no suite verdict (``one_track``). A
verdict is significant only when its Holm p is below alpha and its CI excludes 0; it is
``better`` or ``worse`` (the sign of the effect) only when it holds with any single track left
out (``robust_without_any_track``); a significant result that does not is ``not_robust`` (it
rests on the tracks without which it fails; ``unreachable`` where, without a track, the effect is
as extreme as its seeds allow and still not significant: too few seeds to show robustness). A
mixer with significant per-track wins and significant per-track losses is ``mixed``, whatever
its suite effect.

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

from benchsuite.protocol.signflip import (
    FLIPS,
    Flips,
    sign_flips,
    suite_floor,
    suite_interval,
    suite_test,
)
from benchsuite.protocol.stats import excludes_zero, holm
from benchsuite.results.schema import AcrossMixer, AcrossTracks, Ranks, SuiteTest
from benchsuite.vocabulary import Shift, SuiteVerdict, Verdict


@dataclass(frozen=True)
class Paired:
    """One comparison's per-seed values (a diverged seed imputed with its cap), paired by seed,
    and each seed's trivial-predictor score."""

    baseline: Sequence[float]
    mixer: Sequence[float]
    caps: Sequence[float]


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


def _sign(effect: float) -> Shift:
    return Shift.BETTER if effect > 0 else Shift.WORSE if effect < 0 else Shift.NONE


def _direction(p_holm: float, effect: float, alpha: float) -> Shift:
    """The direction of a suite effect that passes Holm at ``alpha``, else ``NONE``."""
    return Shift.NONE if p_holm >= alpha else _sign(effect)


def _holm(ps: dict[str, float], family: int | None) -> dict[str, float]:
    """Holm over ``family`` tests (the plan's; default the ones given), unfinished ones p = 1."""
    if not ps:
        return {}
    size = max(family or 0, len(ps))
    return dict(zip(ps, holm(list(ps.values()), size), strict=True))


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
    """How many tracks a mixer won, lost, tied within the margin or left open (per-track
    verdicts, after Holm)."""

    tracks_won: int
    tracks_lost: int
    tracks_equivalent: int
    tracks_inconclusive: int


def _count_verdicts(verdicts: Mapping[str, Mapping[str, Verdict]], name: str) -> Counted:
    found = [Verdict(v[name]) for v in verdicts.values() if name in v]
    return Counted(
        tracks_won=sum(v.better for v in found),
        tracks_lost=sum(v.worse for v in found),
        tracks_equivalent=sum(v == Verdict.EQUIVALENT for v in found),
        tracks_inconclusive=sum(v == Verdict.INCONCLUSIVE for v in found),
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
    return AcrossMixer(
        n_tracks=len(pairs),
        tracks=list(pairs),
        n_cells=int(mix.size),
        per_track_effect=effects,
        suite_effect=float(np.mean(list(effects.values()))),
        iqm=float(_iqm(mix)),
        iqm_ci95=_percentile_ci(_iqm(boot_mix)),
        iqm_diff=float(_iqm(mix) - _iqm(base)),
        iqm_diff_ci95=_percentile_ci(_iqm(boot_mix) - _iqm(boot_base)),
        prob_improvement=float(_prob_improvement(mix, base)),
        prob_improvement_ci95=_percentile_ci(_prob_improvement(boot_mix, boot_base)),
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
) -> AcrossTracks:
    """Suite-level figures per mixer (and the baseline's own scores): ``across_tracks``.

    ``verdicts``: optional ``{track: {mixer: Holm-adjusted verdict}}`` from the per-track
    comparisons. ``alpha``: the level of the suite tests and of their intervals (less than 0.05
    when earlier looks at the same comparisons are accounted for). ``planned``: ``{mixer:
    [tracks]}`` the run planned (default: those with results); Holm runs over every planned
    mixer, and a mixer's tracks without results are named (``tracks_missing``). See
    docs/results.md for each mixer's fields.
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

    family = len(planned) if planned else None
    intervals: dict[str, list[float]] = {}
    observed: dict[str, dict[str, np.ndarray]] = {}
    flips: dict[str, Flips] = {}
    for name, pairs in paired.items():
        observed[name] = {t: m - b for t, (b, m) in pairs.items()}
        flips[name] = sign_flips(observed[name], seed)
        # the interval of the same test: the shifts it does not reject (not the bootstrap's)
        intervals[name] = suite_interval(observed[name], flips[name], list(pairs), alpha)

    full = {n: suite_test(observed[n], flips[n], list(observed[n])) for n in names}
    holm = _holm({n: p for n, (_, p) in full.items()}, family)
    left_out = _left_out(scores, observed, flips, family, alpha)
    mixers = {}
    for name in names:
        effect, p = full[name]
        direction = _direction(holm[name], effect, alpha)
        if not excludes_zero(intervals[name]):
            direction = Shift.NONE  # a p not monotone in the shift: not significant
        robust = bool(left_out[name]) and all(d == direction for d in left_out[name].values())
        verdict = (
            SuiteVerdict.INCONCLUSIVE
            if direction == Shift.NONE
            else SuiteVerdict(direction)
            if robust
            else SuiteVerdict.NOT_ROBUST
        )
        counts = _count_verdicts(verdicts, name) if verdicts else None
        if counts and counts.tracks_won and counts.tracks_lost:
            verdict = SuiteVerdict.MIXED  # significant wins and losses: no one direction
        if len(observed[name]) == 1:
            verdict = SuiteVerdict.ONE_TRACK  # a suite of one track: its table says it all
        # the bootstrap draws from ``rng`` here, one mixer after the other in name order
        pairs = paired[name]
        mixers[name] = _mixer_entry(
            pairs,
            rng,
            n_boot,
            suite_effect_ci95=intervals[name],
            fewer_tracks=len(pairs) < most_tracks,
            tracks_won=counts.tracks_won if counts else None,
            tracks_lost=counts.tracks_lost if counts else None,
            tracks_equivalent=counts.tracks_equivalent if counts else None,
            tracks_inconclusive=counts.tracks_inconclusive if counts else None,
            suite_test=SuiteTest(
                statistic=effect,
                statistic_name="suite_effect",
                alternative="two-sided",
                direction=_sign(effect),
                p_value=p,
                p_method="exact" if flips[name].exact else "monte_carlo",
                flips=len(flips[name].signs[next(iter(observed[name]))]),
                mc_seed=seed,
                p_holm=holm[name],
            ),
            without_track=left_out[name],
            robust_without_any_track=robust,
            verdict=verdict,
            tracks_missing=[t for t in (planned or {}).get(name, []) if t not in pairs],
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
    )


def _left_out(
    scores: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]],
    observed: Mapping[str, Mapping[str, np.ndarray]],
    flips: Mapping[str, Flips],
    family: int | None,
    alpha: float,
) -> dict[str, dict[str, Shift]]:
    """Per mixer and per track, the suite test's significant direction with that track left
    out (Holm over the same family), or ``unreachable`` where even the most extreme effect
    these seeds allow would not pass."""
    left_out: dict[str, dict[str, Shift]] = {n: {} for n in observed}
    for track in scores:
        rest = {n: [t for t in ts if t != track] for n, ts in observed.items() if track in ts}
        partial = {n: suite_test(observed[n], flips[n], ts) for n, ts in rest.items() if ts}
        ps = {n: p for n, (_, p) in partial.items()}
        partial_holm = _holm(ps, family)
        for n, (effect, _) in partial.items():
            held = _direction(partial_holm[n], effect, alpha)
            # even an effect as extreme as these seeds allow would not pass Holm: seeds decided
            floor = _holm({**ps, n: suite_floor(flips[n], rest[n])}, family)[n]
            unreachable = held == Shift.NONE and floor >= alpha
            left_out[n][track] = Shift.UNREACHABLE if unreachable else held
    return left_out

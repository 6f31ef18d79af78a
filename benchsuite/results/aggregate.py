"""Across-track figures of the shared protocol (PROTOCOL.md §5). Pure numpy / scipy / statsmodels.

Input, per track: ``{"higher_is_better": bool, "baseline": [...], "mixers": {name: [...]}}``
(per-seed metrics) with seeds aligned by index within a track (tracks may differ in seed count;
a mixer may be absent from a track). Scores are normalised: baseline about 1, higher is better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from benchsuite.results.stats import sign_flip_p

TrackInput = Mapping[str, Any]


def normalised_scores(track: TrackInput, baseline_name: str) -> dict[str, np.ndarray]:
    """Per-seed normalised scores of the baseline (under baseline_name) and each mixer on a track.

    ``R_t / metric`` for lower-is-better metrics, ``metric / R_t`` otherwise; R_t = baseline mean.
    Metrics must be finite and strictly positive (impute diverged runs first).
    """
    arms = {baseline_name: track["baseline"], **track["mixers"]}
    arrays = {name: np.asarray(values, dtype=float) for name, values in arms.items()}
    n = arrays[baseline_name].size
    for name, values in arrays.items():
        if values.ndim != 1 or values.size != n or n == 0:
            raise ValueError(
                f"'{name}' has {values.size} seeds but the baseline has {n}; seeds must be paired"
            )
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f"'{name}': normalised scores need finite, positive metrics")
    ref = float(arrays[baseline_name].mean())
    if track["higher_is_better"]:
        return {name: values / ref for name, values in arrays.items()}
    return {name: ref / values for name, values in arrays.items()}


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.trim_mean(x, 0.25, axis=axis)


def _prob_improvement(mix: np.ndarray, base: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean((mix > base) + 0.5 * (mix == base), axis=axis)


def _percentile_ci(samples: np.ndarray) -> list[float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [float(lo), float(hi)]


def _count_verdicts(verdicts: Mapping[str, Mapping[str, str]], name: str) -> dict[str, int]:
    found = [v[name] for v in verdicts.values() if name in v]
    return {
        "tracks_won": sum(v.startswith("significant_win") for v in found),
        "tracks_lost": sum(v.startswith("significant_loss") for v in found),
        "tracks_equivalent": sum(v == "equivalent_within_margin" for v in found),
        "tracks_inconclusive": sum(v == "inconclusive" for v in found),
    }


def _ranks(means: dict[str, dict[str, float]], names: list[str], alpha: float) -> dict[str, Any]:
    """Average rank (1 = best mean normalised score) with Friedman and Nemenyi CD, descriptive."""
    tracks = [t for t, m in means.items() if all(name in m for name in names)]
    per_track = {
        t: dict(zip(names, stats.rankdata([-means[t][n] for n in names]).tolist(), strict=True))
        for t in tracks
    }
    k, n_tracks = len(names), len(tracks)
    out: dict[str, Any] = {
        "descriptive": True,
        "tracks": tracks,
        "per_track": per_track,
        "average_rank": {
            n: (float(np.mean([per_track[t][n] for t in tracks])) if tracks else None)
            for n in names
        },
        "friedman_statistic": None,
        "friedman_p": None,
        "nemenyi_cd": None,
        "reason": None,
    }
    if k < 3 or n_tracks < 2:
        out["reason"] = (
            f"Friedman needs >= 3 methods and >= 2 complete tracks; have {k} and {n_tracks}"
        )
        return out
    table = [[means[t][n] for t in tracks] for n in names]
    res = stats.friedmanchisquare(*table)
    q_alpha = stats.studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2)
    out["friedman_statistic"] = None if np.isnan(res.statistic) else float(res.statistic)
    out["friedman_p"] = None if np.isnan(res.pvalue) else float(res.pvalue)
    out["nemenyi_cd"] = float(q_alpha * math.sqrt(k * (k + 1) / (6 * n_tracks)))
    return out


def aggregate_across_tracks(
    per_track: Mapping[str, TrackInput],
    *,
    baseline_name: str,
    verdicts: Mapping[str, Mapping[str, str]] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Suite-level figures per method (baseline included), as plain JSON-able dicts.

    verdicts: optional ``{track: {mixer: Holm-adjusted verdict}}`` from stats.apply_holm.
    Returns ``{"baseline", "n_boot", "seed", "alpha", "tracks", "mixers": {name: {...}}, "ranks"}``;
    each mixer entry holds n_tracks, n_cells, iqm, iqm_ci95, iqm_diff, iqm_diff_ci95,
    prob_improvement, prob_improvement_ci95, the tracks_won/lost/equivalent/inconclusive counts
    (None without verdicts or for the baseline) and suite_test (None for the baseline):
    {n_blocks, mean_log_ratio, p_value, p_method, mc_seed, p_holm}.
    """
    if not per_track:
        raise ValueError("no tracks to aggregate")
    scores = {t: normalised_scores(track, baseline_name) for t, track in per_track.items()}
    names = [baseline_name]
    for track_scores in scores.values():
        names += [n for n in track_scores if n not in names]

    # One set of resampled seed indices per track, shared by every method (paired differences).
    rng = np.random.default_rng(seed)
    boot_idx = {
        t: rng.integers(0, s[baseline_name].size, size=(n_boot, s[baseline_name].size))
        for t, s in scores.items()
    }

    mixers: dict[str, dict[str, Any]] = {}
    for name in names:
        tracks = [t for t in scores if name in scores[t]]
        mix = np.concatenate([scores[t][name] for t in tracks])
        base = np.concatenate([scores[t][baseline_name] for t in tracks])
        boot_mix = np.concatenate([scores[t][name][boot_idx[t]] for t in tracks], axis=1)
        boot_base = np.concatenate([scores[t][baseline_name][boot_idx[t]] for t in tracks], axis=1)
        entry: dict[str, Any] = {
            "n_tracks": len(tracks),
            "n_cells": int(mix.size),
            "iqm": float(_iqm(mix)),
            "iqm_ci95": _percentile_ci(_iqm(boot_mix)),
            "iqm_diff": float(_iqm(mix) - _iqm(base)),
            "iqm_diff_ci95": _percentile_ci(_iqm(boot_mix) - _iqm(boot_base)),
            "prob_improvement": float(_prob_improvement(mix, base)),
            "prob_improvement_ci95": _percentile_ci(_prob_improvement(boot_mix, boot_base)),
        }
        counts = _count_verdicts(verdicts, name) if verdicts and name != baseline_name else None
        for key in ("tracks_won", "tracks_lost", "tracks_equivalent", "tracks_inconclusive"):
            entry[key] = counts[key] if counts else None
        entry["suite_test"] = None
        if name != baseline_name:
            log_ratio = np.log(mix / base)
            p, method, mc_seed = sign_flip_p(log_ratio, seed)
            entry["suite_test"] = {
                "n_blocks": int(log_ratio.size),
                "mean_log_ratio": float(log_ratio.mean()),
                "p_value": p,
                "p_method": method,
                "mc_seed": mc_seed,
                "p_holm": None,
            }
        mixers[name] = entry

    tested = [n for n in names if n != baseline_name]
    if tested:
        raw = [mixers[n]["suite_test"]["p_value"] for n in tested]
        adjusted = multipletests(raw, alpha=alpha, method="holm")[1]
        for n, p_holm in zip(tested, adjusted, strict=True):
            mixers[n]["suite_test"]["p_holm"] = float(p_holm)

    means = {
        t: {n: float(s.mean()) for n, s in track_scores.items()}
        for t, track_scores in scores.items()
    }
    return {
        "baseline": baseline_name,
        "n_boot": n_boot,
        "seed": seed,
        "alpha": alpha,
        "tracks": list(scores),
        "mixers": mixers,
        "ranks": _ranks(means, names, alpha),
    }

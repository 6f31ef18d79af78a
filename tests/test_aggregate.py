"""Tests of benchsuite.aggregate on constructed examples with analytically known answers."""

import json
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from benchsuite.results.aggregate import aggregate_across_tracks, normalised_scores


def _suite():
    """Two tracks; on every seed 'half' has half the baseline's MSE and twice its accuracy."""
    return {
        "mse": {
            "higher_is_better": False,
            "baseline": [0.4, 0.5, 0.6, 0.5],
            "mixers": {"half": [0.2, 0.25, 0.3, 0.25], "same": [0.4, 0.5, 0.6, 0.5]},
        },
        "acc": {
            "higher_is_better": True,
            "baseline": [0.3, 0.4, 0.35],
            "mixers": {"half": [0.6, 0.8, 0.7], "same": [0.3, 0.4, 0.35]},
        },
    }


def test_normalised_scores_direction():
    s = normalised_scores(_suite()["mse"], "base")
    assert s["base"] == pytest.approx(0.5 / np.array([0.4, 0.5, 0.6, 0.5]))
    assert s["half"] == pytest.approx(2 * s["base"])
    acc = normalised_scores(_suite()["acc"], "base")
    assert acc["base"].mean() == pytest.approx(1.0)
    assert acc["half"] == pytest.approx(2 * acc["base"])
    with pytest.raises(ValueError, match="paired"):
        normalised_scores({"higher_is_better": True, "baseline": [1, 2], "mixers": {"x": [1]}}, "b")
    with pytest.raises(ValueError, match="positive"):
        normalised_scores(
            {"higher_is_better": False, "baseline": [1, 2], "mixers": {"x": [0, 1]}}, "b"
        )


def test_constant_baseline_gives_exact_scores():
    per_track = {
        "a": {"higher_is_better": False, "baseline": [0.5] * 5, "mixers": {"m": [0.25] * 5}},
        "b": {"higher_is_better": True, "baseline": [0.4] * 4, "mixers": {"m": [0.8] * 4}},
    }
    out = aggregate_across_tracks(per_track, baseline_name="base", n_boot=200)
    m, b = out["mixers"]["m"], out["mixers"]["base"]
    assert m["iqm"] == pytest.approx(2.0) and b["iqm"] == pytest.approx(1.0)
    assert m["iqm_ci95"] == pytest.approx([2.0, 2.0])
    assert m["iqm_diff"] == pytest.approx(1.0) and m["iqm_diff_ci95"] == pytest.approx([1.0, 1.0])
    assert m["prob_improvement"] == 1.0 and b["prob_improvement"] == 0.5
    assert m["n_cells"] == 9 and m["n_tracks"] == 2
    test = m["suite_test"]
    assert test["mean_log_ratio"] == pytest.approx(math.log(2))
    assert test["p_method"] == "exact" and test["p_value"] == pytest.approx(2 / 2**9)
    assert test["p_holm"] == pytest.approx(2 / 2**9)
    assert b["suite_test"] is None and m["tracks_won"] is None


def test_aggregate_paired_bootstrap_and_suite_test():
    out = aggregate_across_tracks(_suite(), baseline_name="base", n_boot=500, seed=1)
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    half, same = out["mixers"]["half"], out["mixers"]["same"]
    # Every cell of 'half' is exactly twice the baseline's cell, so every resampled difference is
    # IQM(2x) - IQM(x) = IQM(x) > 0, and P(improvement) = 1.
    assert half["prob_improvement"] == 1.0
    assert half["iqm"] == pytest.approx(2 * out["mixers"]["base"]["iqm"])
    assert half["iqm_diff"] == pytest.approx(out["mixers"]["base"]["iqm"])
    assert half["iqm_diff_ci95"][0] > 0
    assert same["iqm_diff"] == 0.0 and same["iqm_diff_ci95"] == [0.0, 0.0]
    assert same["prob_improvement"] == 0.5
    assert half["suite_test"]["p_value"] == pytest.approx(2 / 2**7)
    assert same["suite_test"]["p_value"] == 1.0
    raw = [half["suite_test"]["p_value"], same["suite_test"]["p_value"]]
    assert [half["suite_test"]["p_holm"], same["suite_test"]["p_holm"]] == pytest.approx(
        multipletests(raw, method="holm")[1]
    )
    lo, hi = out["mixers"]["base"]["iqm_ci95"]
    assert lo <= out["mixers"]["base"]["iqm"] <= hi


def test_bootstrap_is_seeded():
    a = aggregate_across_tracks(_suite(), baseline_name="base", n_boot=300, seed=5)
    b = aggregate_across_tracks(_suite(), baseline_name="base", n_boot=300, seed=5)
    assert a == b


def test_monte_carlo_suite_test_when_many_blocks():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 1.0, 9)
    per_track = {
        t: {
            "higher_is_better": True,
            "baseline": base.tolist(),
            "mixers": {"m": (base * 1.01).tolist()},
        }
        for t in ("a", "b")
    }
    out = aggregate_across_tracks(per_track, baseline_name="base", n_boot=100, seed=3)
    test = out["mixers"]["m"]["suite_test"]
    assert test["n_blocks"] == 18 and test["p_method"] == "monte_carlo" and test["mc_seed"] == 3
    log_ratio = np.log(np.tile(base * 1.01 / base, 2))
    ref = sps.permutation_test(
        (log_ratio,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=100_000,
        rng=np.random.default_rng(3),
    )
    assert test["p_value"] == pytest.approx(ref.pvalue) and test["p_value"] < 1e-4


def test_verdict_counts():
    verdicts = {
        "mse": {"half": "significant_win", "same": "equivalent_within_margin"},
        "acc": {"half": "significant_win_below_margin", "same": "significant_loss"},
    }
    out = aggregate_across_tracks(_suite(), baseline_name="base", verdicts=verdicts, n_boot=50)
    half, same = out["mixers"]["half"], out["mixers"]["same"]
    assert (half["tracks_won"], half["tracks_lost"]) == (2, 0)
    assert (same["tracks_won"], same["tracks_lost"], same["tracks_equivalent"]) == (0, 1, 1)
    assert same["tracks_inconclusive"] == 0
    assert out["mixers"]["base"]["tracks_won"] is None


def test_ranks_friedman_and_nemenyi():
    rng = np.random.default_rng(2)
    per_track = {}
    for t in range(4):
        base = rng.uniform(1.0, 2.0, 5)
        per_track[f"t{t}"] = {
            "higher_is_better": False,
            "baseline": base.tolist(),
            "mixers": {"good": (base * 0.8).tolist(), "bad": (base * 1.3).tolist()},
        }
    out = aggregate_across_tracks(per_track, baseline_name="base", n_boot=50)
    ranks = out["ranks"]
    assert ranks["descriptive"] is True
    assert ranks["average_rank"] == {"base": 2.0, "good": 1.0, "bad": 3.0}
    means = {
        name: [normalised_scores(per_track[t], "base")[name].mean() for t in per_track]
        for name in ("base", "good", "bad")
    }
    ref = sps.friedmanchisquare(means["base"], means["good"], means["bad"])
    assert ranks["friedman_statistic"] == pytest.approx(ref.statistic)
    assert ranks["friedman_p"] == pytest.approx(ref.pvalue)
    # Demšar (2006), Table 5a: q_0.05 = 2.343 for k = 3 methods.
    assert ranks["nemenyi_cd"] == pytest.approx(2.343 * math.sqrt(3 * 4 / (6 * 4)), abs=1e-3)


def test_ranks_need_three_methods_and_two_tracks():
    out = aggregate_across_tracks({"only": _suite()["mse"]}, baseline_name="base", n_boot=20)
    assert out["ranks"]["friedman_p"] is None and "Friedman needs" in out["ranks"]["reason"]
    assert out["ranks"]["average_rank"]["half"] == 1.0


def test_mixer_absent_from_a_track():
    suite = _suite()
    del suite["acc"]["mixers"]["same"]
    out = aggregate_across_tracks(suite, baseline_name="base", n_boot=50)
    assert out["mixers"]["same"]["n_tracks"] == 1 and out["mixers"]["same"]["n_cells"] == 4
    assert out["ranks"]["tracks"] == ["mse"]

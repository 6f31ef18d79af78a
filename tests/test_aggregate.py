"""Tests of benchsuite.results.aggregate on constructed suites with known answers: bounded scores,
equal track weights, the sign-flip test of the suite effect, leave-one-track-out robustness,
ranks."""

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from benchsuite.results.aggregate import (
    FLIPS,
    Paired,
    TrackPairs,
    aggregate_across_tracks,
    normalised,
)
from benchsuite.serial import build, to_plain

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


def track(base, mixers, caps, higher=False, ideal=0.0):
    """A track input: every mixer paired with the same baseline seeds."""
    return TrackPairs(
        higher_is_better=higher,
        ideal=ideal,
        pairs={
            name: Paired(baseline=list(base), mixer=list(values), caps=list(caps))
            for name, values in mixers.items()
        },
    )


def plain_aggregate(*args, **kwargs):
    """The across-track figures as report.json holds them."""
    return to_plain(aggregate_across_tracks(*args, **kwargs))


def test_scores_are_the_fraction_of_the_gap_to_the_ideal_closed():
    lower, higher = False, True  # an MSE, an accuracy
    assert normalised([1.0, 0.5, 0.0], [1.0] * 3, lower, 0.0) == pytest.approx([0.0, 0.5, 1.0])
    assert normalised([0.1, 0.55, 1.0], [0.1] * 3, higher, 1.0) == pytest.approx([0, 0.5, 1])
    caps = [2.0, 1.0]  # each seed's own trivial predictor
    assert normalised([1.0, 0.5], caps, lower, 0.0) == pytest.approx([0.5, 0.5])


def test_without_a_declared_ideal_the_baseline_scores_one():
    no_ideal = track([0.4, 0.6], {"m": [0.2, 0.3]}, [1.0, 1.0], ideal=None)
    out = plain_aggregate({"t": no_ideal}, baseline_name="base", n_boot=50)
    effect = out["mixers"]["m"]["per_track_effect"]["t"]
    # the baseline's mean 0.5 scores 1: mixer 0.25 closes 1.5 of that gap, the baseline 1.0
    assert effect == pytest.approx(((1 - 0.2) / 0.5 + (1 - 0.3) / 0.5) / 2 - 1.0)


def test_every_track_weighs_the_same_and_consistent_wins_are_robust():
    rng = np.random.default_rng(0)
    suite = {}
    for name, seeds in (("a", 12), ("b", 12), ("c", 20), ("d", 8)):
        base = rng.uniform(0.4, 0.6, seeds)
        suite[name] = track(
            base,
            {
                "good": base * 0.8 + rng.normal(0, 0.005, seeds),
                "same": base + rng.normal(0, 0.005, seeds),
            },
            [1.0] * seeds,
        )
    out = plain_aggregate(suite, baseline_name="base", n_boot=300)
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    good = out["mixers"]["good"]
    per_track = good["per_track_effect"]
    assert good["suite_effect"] == pytest.approx(np.mean(list(per_track.values())))
    assert good["suite_effect_ci95"][0] < good["suite_effect"] < good["suite_effect_ci95"][1]
    assert good["verdict"] == "better" and good["robust_without_any_track"] is True
    assert {held["direction"] for held in good["without_track"].values()} == {"better"}
    assert good["suite_test"]["p_value"] == 1 / (FLIPS + 1)  # no flip reaches the observed sum
    assert out["mixers"]["same"]["verdict"] == "inconclusive"
    raw = [out["mixers"][m]["suite_test"]["p_value"] for m in ("good", "same")]
    holm = [out["mixers"][m]["suite_test"]["p_holm"] for m in ("good", "same")]
    assert holm == pytest.approx(multipletests(raw, method="holm")[1])


def test_one_heavy_tailed_track_cannot_make_a_mixer_better_across_tracks():
    """Huge, heavy-tailed wins on one track (errors 10-1000x lower) and consistent losses on the
    three others: on the old unbounded ratio scale this mixer was 'better' across tracks."""
    rng = np.random.default_rng(1)
    suite = {}
    base = rng.uniform(0.02, 0.2, 12)
    heavy = base / np.exp(rng.uniform(np.log(10), np.log(1000), 12))
    suite["dynamics"] = track(base, {"heavy": heavy}, [1.0] * 12)
    for name in ("sequence", "tabular", "vision"):
        base = rng.uniform(0.4, 0.6, 12)
        suite[name] = track(base, {"heavy": base * 1.15 + rng.normal(0, 0.01, 12)}, [1.0] * 12)
    out = plain_aggregate(suite, baseline_name="base", n_boot=300)
    heavy = out["mixers"]["heavy"]
    assert heavy["per_track_effect"]["dynamics"] <= 0.2  # bounded: at most the gap it closed
    assert heavy["verdict"] != "better"
    assert heavy["robust_without_any_track"] is False or heavy["verdict"] == "worse"
    assert heavy["without_track"]["dynamics"]["direction"] == "worse"


def test_suite_test_is_the_sign_flip_test_of_the_printed_effect():
    """Two tracks of 5 seeds: 2**10 sign patterns of the equal-weight mean enumerated by hand
    give the same p (every pattern is counted up to 2**22); the statistic tested is the suite
    effect itself."""
    d1, d2 = np.array([0.3, 0.1, -0.05, 0.2, 0.15]), np.array([0.05, -0.1, 0.2, 0.1, 0.3])
    suite = {
        "a": track(np.full(5, 0.5), {"m": 0.5 - d1}, [1.0] * 5),
        "b": track(np.full(5, 0.5), {"m": 0.5 - d2}, [1.0] * 5),
    }
    out = plain_aggregate(suite, baseline_name="base", n_boot=50, seed=7)

    observed = (d1.mean() + d2.mean()) / 2
    patterns = itertools.product((-1.0, 1.0), repeat=10)
    combined = [((d1 * s[:5]).mean() + (d2 * s[5:]).mean()) / 2 for s in map(np.array, patterns)]
    exact = np.mean(np.abs(combined) >= abs(observed) - 1e-12)
    test = out["mixers"]["m"]["suite_test"]
    assert test["statistic"] == pytest.approx(observed)
    assert out["mixers"]["m"]["suite_effect"] == pytest.approx(test["statistic"])
    assert test["direction"] == "better" and test["alternative"] == "two-sided"
    assert test["p_value"] == pytest.approx(exact, abs=1e-15)
    assert test["p_method"] == "exact" and test["flips"] == 2**10


def test_a_large_precise_track_cannot_outvote_the_printed_effect():
    """One track with a tiny, very precise loss (t about -19) and one with a large, noisy win:
    a combination of t-values called this 'worse'; the equal-weight effect is positive and its
    own test is not significant, so the verdict agrees with the interval."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.4, 0.6, 12)
    precise = track(base, {"m": base + 0.01 + rng.normal(0, 0.002, 12)}, [1.0] * 12)
    base2 = rng.uniform(0.4, 0.6, 12)
    noisy = track(base2, {"m": base2 - rng.normal(0.05, 0.3, 12).clip(-0.4, 0.4)}, [1.0] * 12)
    out = plain_aggregate({"precise": precise, "noisy": noisy}, baseline_name="base", n_boot=500)
    m = out["mixers"]["m"]
    lo, hi = m["suite_effect_ci95"]
    significant = m["verdict"] in ("better", "worse", "not_robust")
    assert not (significant and lo <= 0 <= hi)
    assert m["suite_test"]["statistic"] == pytest.approx(m["suite_effect"])
    if significant:
        assert (m["verdict"] == "better") == (m["suite_effect"] > 0) or m["verdict"] == "not_robust"


def test_seeded_and_fewer_tracks_marked():
    base = [0.5, 0.6, 0.4, 0.5]
    suite = {
        "a": track(base, {"m": [0.4] * 4, "partial": [0.45] * 4}, [1.0] * 4),
        "b": track(base, {"m": [0.3] * 4}, [1.0] * 4),
    }
    a = plain_aggregate(suite, baseline_name="base", n_boot=100, seed=5)
    assert a == plain_aggregate(suite, baseline_name="base", n_boot=100, seed=5)
    assert a["mixers"]["partial"]["n_tracks"] == 1 and a["mixers"]["partial"]["fewer_tracks"]
    assert not a["mixers"]["m"]["fewer_tracks"]
    # ranks only over the tracks every ranked mixer ran on, saying which were left out
    assert a["ranks"]["tracks"] == ["a"]
    assert a["ranks"]["tracks_dropped"] == {"b": "not run by partial"}


def test_verdict_counts():
    base = [0.5, 0.6, 0.4]
    suite = {t: track(base, {"m": [0.3, 0.4, 0.3]}, [1.0] * 3) for t in ("a", "b", "c")}
    verdicts = {
        "a": {"m": "significant_win"},
        "b": {"m": "significant_win_below_margin"},
        "c": {"m": "equivalent_within_margin"},
    }
    m = plain_aggregate(suite, baseline_name="base", verdicts=verdicts, n_boot=50)
    m = m["mixers"]["m"]
    assert (m["tracks_won"], m["tracks_lost"], m["tracks_equivalent"]) == (2, 0, 1)


def test_a_verdict_that_rests_on_one_track_is_not_robust_and_names_it():
    """A large loss on one track and noise on three: the suite test rejects, but not without
    that track, so the verdict is ``not_robust`` (never ``mixed``: nothing was won), and the row
    names the track it rests on."""
    from benchsuite.results.schema import AcrossMixer

    rng = np.random.default_rng(4)
    suite = {}
    base = rng.uniform(0.4, 0.6, 10)
    suite["a"] = track(base, {"m": base + 0.3 + rng.normal(0, 0.01, 10)}, [1.0] * 10)
    for name in ("b", "c", "d"):
        base = rng.uniform(0.4, 0.6, 10)
        suite[name] = track(base, {"m": base + rng.normal(0, 0.02, 10)}, [1.0] * 10)
    out = plain_aggregate(suite, baseline_name="base", n_boot=50)
    m = out["mixers"]["m"]
    assert m["suite_test"]["p_holm"] < 0.05 and m["suite_effect_ci95"][1] < 0
    assert m["without_track"]["a"]["direction"] == "none" and m["verdict"] == "not_robust"
    row = build(AcrossMixer, m)
    assert row.rests_on == ["a"] and row.shown_verdict() == "worse, rests on a"


def test_a_suite_of_two_seeds_cannot_show_robustness_and_says_so():
    """The 2-seed default run: six tracks of two seeds, every seed far worse, Holm over 17
    mixers. The suite test passes (2/2**12 x 17 < 0.025), but with a track left out no data of
    these seeds could (2/2**10 x 17 > 0.025), so no track is named as the one it rests on."""
    from benchsuite.results.schema import AcrossMixer

    base = [0.4, 0.5]
    suite = {t: track(base, {"m": [0.8, 0.9]}, [1.0] * 2) for t in "abcdef"}
    planned = {f"other{i}": list("abcdef") for i in range(16)} | {"m": list("abcdef")}
    out = plain_aggregate(suite, baseline_name="base", n_boot=50, alpha=0.025, planned=planned)
    m = out["mixers"]["m"]
    assert m["suite_test"]["p_holm"] < 0.025 and m["verdict"] == "not_robust"
    assert {held["direction"] for held in m["without_track"].values()} == {"unreachable"}
    row = build(AcrossMixer, m)
    assert row.rests_on == [] and row.robustness_seeds == 3
    assert row.shown_verdict() == "worse, robustness needs 3 seeds"


def test_mixed_means_significant_wins_and_losses_on_tracks():
    """``mixed`` only where the per-track verdicts hold both a significant win and a significant
    loss; a significant suite effect beside wins alone keeps its direction."""
    from benchsuite.results.schema import AcrossMixer

    base = np.linspace(0.4, 0.6, 8)
    suite = {t: track(base, {"m": base * 0.8}, [1.0] * 8) for t in ("a", "b", "c")}
    win, neither = {"m": "significant_win"}, {"m": "inconclusive"}
    wins = {"a": win, "b": win, "c": neither}
    one_way = plain_aggregate(suite, baseline_name="base", verdicts=wins, n_boot=50)
    assert one_way["mixers"]["m"]["verdict"] == "better"
    both = {**wins, "c": {"m": "significant_loss_below_margin"}}
    out = plain_aggregate(suite, baseline_name="base", verdicts=both, n_boot=50)
    m = out["mixers"]["m"]
    assert m["verdict"] == "mixed" and (m["tracks_won"], m["tracks_lost"]) == (2, 1)
    row = build(AcrossMixer, m)
    assert row.shown_verdict() == "mixed (won 2, lost 1)"


def test_ranks_friedman_and_nemenyi():
    rng = np.random.default_rng(2)
    suite = {}
    for t in range(4):
        base = rng.uniform(0.3, 0.6, 5)
        suite[f"t{t}"] = track(base, {"good": base * 0.8, "bad": base * 1.3}, [1.0] * 5)
    ranks = plain_aggregate(suite, baseline_name="base", n_boot=50)["ranks"]
    assert ranks["descriptive"] is True
    assert ranks["average_rank"] == {"base": 2.0, "good": 1.0, "bad": 3.0}
    # Demšar (2006), Table 5a: q_0.05 = 2.343 for k = 3 methods.
    assert ranks["nemenyi_cd"] == pytest.approx(2.343 * math.sqrt(3 * 4 / (6 * 4)), abs=1e-3)
    # Friedman depends on the within-track ranks only: here the same on every track
    assert ranks["friedman_p"] == pytest.approx(
        sps.friedmanchisquare([2.0] * 4, [1.0] * 4, [3.0] * 4).pvalue
    )


def test_large_opposite_track_effects_get_an_interval_that_agrees_with_the_test():
    """The case of issue 32: large track effects of opposite sign (here +0.30 and -0.26, 13 seeds
    each), a small suite effect. A stratified bootstrap interval excluded 0 beside p 0.38; the
    interval is now the same test inverted: it excludes 0 exactly when p < 0.05, and the test
    of each bound's shift sits at 0.05."""
    from benchsuite.protocol.signflip import sign_flips, suite_test

    rng = np.random.default_rng(4)
    suite, diffs = {}, {}
    for name, shift in (("up", 0.30), ("down", -0.26)):
        base = rng.uniform(0.3, 0.5, 13)
        diffs[name] = shift + rng.normal(0, 0.02, 13)
        suite[name] = track(base, {"m": base - diffs[name]}, [1.0] * 13)  # MSE: lower is better
    out = plain_aggregate(suite, baseline_name="base", n_boot=500)
    m = out["mixers"]["m"]
    lo, hi = m["suite_effect_ci95"]
    p = m["suite_test"]["p_value"]
    assert lo < m["suite_effect"] < hi
    assert (lo > 0 or hi < 0) == (p < 0.05)
    assert p > 0.05 and lo < 0 < hi and m["verdict"] == "inconclusive"
    d = diffs  # the scores' differences: 1 - mixer - (1 - baseline), as the caps are 1
    flips = sign_flips(d, 0)
    for bound in (lo, hi):
        assert suite_test(d, flips, list(d), bound)[1] == pytest.approx(0.05, abs=0.002)


def test_a_one_track_suite_has_no_suite_verdict():
    """One track: the suite is that track, and its table already gives the verdict; the suite
    says so instead of calling a single-track result robust or ``mixed``."""
    base = np.linspace(0.4, 0.6, 8)
    out = plain_aggregate(
        {"a": track(base, {"m": base * 1.2}, [1.0] * 8)}, baseline_name="base", n_boot=50
    )
    assert out["mixers"]["m"]["verdict"] == "one_track"
    assert out["mixers"]["m"]["suite_test"]["p_method"] == "exact"  # 2**8 patterns


def test_holm_across_tracks_runs_over_the_planned_mixers():
    base = np.linspace(0.4, 0.6, 8)
    suite = {t: track(base, {"m": base * 0.8}, [1.0] * 8) for t in ("a", "b")}
    alone = plain_aggregate(suite, baseline_name="base", n_boot=50)
    planned = {"m": ["a", "b", "c"], "other": ["a"]}
    both = plain_aggregate(suite, baseline_name="base", n_boot=50, planned=planned)
    p = alone["mixers"]["m"]["suite_test"]["p_value"]
    assert alone["mixers"]["m"]["suite_test"]["p_holm"] == pytest.approx(p)
    assert both["mixers"]["m"]["suite_test"]["p_holm"] == pytest.approx(min(1.0, 2 * p))
    assert both["mixers"]["m"]["tracks_missing"] == ["c"]

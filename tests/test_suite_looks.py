"""The suite test's looks and robustness (docs/statistics.md, "Across tracks" and "Looks"): exact
enumeration up to 2**22 patterns, the combination test of stages that never loses a seed, its
calibration under the null, and robustness as a statement about the tracks."""

import itertools
import math

import numpy as np
import pytest

from benchsuite.protocol.combination import weights
from benchsuite.protocol.power import looks_alpha
from benchsuite.protocol.signflip import EXACT_LIMIT, sign_flips, suite_test
from benchsuite.results.aggregate import Paired, TrackPairs, aggregate_across_tracks
from benchsuite.results.robustness import SuiteTests
from benchsuite.results.schema import AcrossMixer
from benchsuite.serial import build, to_plain

pytestmark = pytest.mark.floors


def _suite(diffs: dict[str, np.ndarray], seeds: dict[str, list[int]] | None = None) -> dict:
    """Tracks whose baseline scores 0.5 and whose mixer differs by ``diffs`` (higher is
    better, ideal 1, caps 0: the scores' differences are the diffs)."""
    return {
        track: TrackPairs(
            True,
            1.0,
            {
                "m": Paired(
                    [0.5] * len(d),
                    list(0.5 + d),
                    [0.0] * len(d),
                    None if seeds is None else seeds[track],
                )
            },
        )
        for track, d in diffs.items()
    }


def test_every_pattern_is_enumerated_up_to_2_22_and_monte_carlo_says_its_error_beyond():
    rng = np.random.default_rng(0)
    six = {t: rng.normal(-0.05, 0.05, 3) for t in "abcdef"}  # the default run: 2**18
    flips = sign_flips(six, 0)
    rows = np.array(list(itertools.product((1.0, -1.0), repeat=18)))  # by hand, every pattern
    joined = np.concatenate(list(six.values()))
    null = (rows * joined).reshape(-1, 6, 3).mean(axis=2).mean(axis=1)
    observed = np.mean([d.mean() for d in six.values()])
    by_hand = np.mean(np.abs(null) >= abs(observed) - 1e-12)
    assert flips.exact and suite_test(six, flips, list(six))[1] == pytest.approx(by_hand, abs=1e-15)

    two = {t: rng.normal(0.02, 0.05, 11) for t in "ab"}  # 2**22: still exact
    assert sign_flips(two, 0).exact and EXACT_LIMIT == 2**22
    beyond = {t: rng.normal(0.02, 0.05, 12) for t in "ab"}
    out = to_plain(aggregate_across_tracks(_suite(beyond), baseline_name="b", n_boot=20))
    test = out["mixers"]["m"]["suite_test"]
    assert test["p_method"] == "monte_carlo" and test["flips"] == 20_000
    assert test["p_se"] == pytest.approx(math.sqrt(test["p_value"] * (1 - test["p_value"]) / 2e4))
    exact = to_plain(aggregate_across_tracks(_suite(two), baseline_name="b", n_boot=20))
    assert exact["mixers"]["m"]["suite_test"]["p_se"] is None
    assert exact["mixers"]["m"]["suite_test"]["flips"] == 2**22


def test_stage_weights_are_the_root_of_each_stages_share_of_the_seeds():
    assert weights([9, 13]) == pytest.approx([math.sqrt(9 / 13), math.sqrt(4 / 13)])
    assert sum(w**2 for w in weights([3, 6, 13])) == pytest.approx(1.0)


def test_the_combination_test_holds_its_level_under_the_null():
    """3 tracks, stages of 3 and 3 seeds, differences symmetric about 0: the combined test
    rejects at 0.05 in at most 5% of 1500 draws (its p is conservative: discrete stage p's)."""
    rng = np.random.default_rng(1)
    draws, rejected = 1500, 0
    seeds = {t: list(range(6)) for t in "abc"}
    for draw in range(draws):
        diffs = {t: rng.standard_t(3, size=6) for t in "abc"}
        rejected += SuiteTests(diffs, seeds, [3, 6], draw).test(list(diffs)).p() < 0.05
    assert rejected / draws <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / draws)


def test_two_looks_with_the_combination_test_keep_the_family_wise_error_below_alpha():
    """A first look at 3 seeds (one test, alpha/2) and an extension to 6 (the combination of
    both stages, alpha/4): a false rejection at either look in at most 5% of the draws."""
    rng = np.random.default_rng(2)
    draws, rejected = 600, 0
    seeds = {t: list(range(6)) for t in "abc"}
    for draw in range(draws):
        diffs = {t: rng.normal(size=6) for t in "abc"}
        first = {t: d[:3] for t, d in diffs.items()}
        hit = SuiteTests(first, {t: [0, 1, 2] for t in "abc"}, [3], draw).test("abc").p()
        later = SuiteTests(diffs, seeds, [3, 6], draw).test(list(diffs)).p()
        rejected += hit < looks_alpha(1) or later < looks_alpha(2)
    assert rejected / draws <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / draws)


def test_an_extension_pools_every_seed_and_a_consistent_loss_is_worse_and_robust():
    """The small extended run of issue 50 in figures: 2 tracks, a mixer behind on every seed,
    looked at 9 seeds and extended to 13 into the same folder. The second look's test uses all
    13 seeds of each track (two stages, alpha/4) and reads worse, robust."""
    rng = np.random.default_rng(3)
    diffs = {t: -rng.uniform(0.05, 0.15, 13) for t in ("sequence", "tabular")}
    seeds = {t: list(range(13)) for t in diffs}
    planned = {"m": list(diffs), "other": list(diffs)}
    out = to_plain(
        aggregate_across_tracks(
            _suite(diffs, seeds),
            baseline_name="b",
            alpha=looks_alpha(2),
            stages=[9, 13],
            planned=planned,
            n_boot=50,
        )
    )
    m = out["mixers"]["m"]
    assert out["stages"] == [9, 13] and m["suite_test"]["stages"] == 2 and m["n_cells"] == 26
    assert m["verdict"] == "worse" and m["robust_without_any_track"]
    assert m["suite_test"]["p_value"] < m["suite_test"]["p_holm"] < 0.0125
    lo, hi = m["suite_effect_ci95"]
    assert lo < m["suite_effect"] < hi < 0


def test_robustness_names_no_track_whose_absence_leaves_the_effect_and_says_the_seeds():
    """Six tracks of 3 seeds, 17 mixers in Holm's family (the default run's shape): ``steady`` is
    behind on every track by about the same. Leaving any one out keeps the sign and more than
    half the effect, so no track is named (the one track it rests on is
    tests/test_aggregate.py's case); its left-out tests lack power, and it says how many seeds
    they would need."""
    rng = np.random.default_rng(3)
    steady = {t: -0.08 + rng.normal(0, 0.06, 3) for t in "abcdef"}
    planned = {f"x{i}": list("abcdef") for i in range(16)} | {"m": list("abcdef")}
    out = to_plain(
        aggregate_across_tracks(
            _suite(steady), baseline_name="b", alpha=looks_alpha(1), planned=planned, n_boot=20
        )
    )
    row = out["mixers"]["m"]
    for track, held in row["without_track"].items():
        kept = [t for t in "abcdef" if t != track]
        assert held["effect"] == pytest.approx(np.mean([steady[t].mean() for t in kept]))
        assert 0 < held["p_value"] <= held["p_holm"] <= 1
    s = build(AcrossMixer, row)
    assert s.verdict == "not_robust" and s.rests_on == []
    assert any(held.direction == "none" for held in s.without_track.values())
    assert all(
        held.effect * s.suite_effect > 0 and abs(held.effect) >= abs(s.suite_effect) / 2
        for held in s.without_track.values()
    )
    assert s.robustness_seeds and s.robustness_seeds > 3
    assert s.shown_verdict() == f"worse, robustness needs {s.robustness_seeds} seeds"

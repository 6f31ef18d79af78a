"""Tests of benchsuite.stats: the worked example of docs/statistics.md, p-values, Holm,
degenerate inputs, caps at float32 precision, ties, the attainable p."""

import gc
import itertools
import json
import math

import numpy as np
import pytest
from helpers import a_job
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from benchsuite import serial
from benchsuite.measures import Scores
from benchsuite.protocol.power import (
    default_seeds,
    design_warning,
    min_seeds_for_significance,
    min_sign_flip_p,
    planned_mde,
)
from benchsuite.protocol.stats import (
    Comparison,
    compare_both_converged,
    compare_paired,
    comparison_flags,
    divergence_summary,
    excludes_zero,
    holm,
    holm_adjusted,
    improvements,
    impute_diverged,
)
from benchsuite.records import JobResult, RunRecord, SweepPoint
from benchsuite.results.cells import at_chance, selection
from benchsuite.selection import Candidate, divergence, learnt_nothing, select_best_config
from benchsuite.vocabulary import Scale

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors

BASE = [
    0.5715442299842834,
    0.39496564865112305,
    0.3930272161960602,
    0.5119274258613586,
    0.4745565354824066,
    0.4187285602092743,
    0.6776894927024841,
    0.37053725123405457,
]
MIXER = [
    0.3822963237762451,
    0.5229498744010925,
    0.8081433773040771,
    0.863442063331604,
    0.6520702838897705,
    0.45361945033073425,
    0.6645830869674683,
    0.4394262731075287,
]


def plain(comparison: Comparison) -> dict:
    """A comparison as report.json writes it (strict JSON: NaN as None)."""
    return serial.strict(serial.to_plain(comparison))


def _scipy_p(d, rng=None):
    return sps.permutation_test(
        (d,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=100_000,
        rng=rng,
    ).pvalue


def test_worked_example_reproduces_protocol_table():
    c = compare_paired(BASE, MIXER, higher_is_better=False)
    assert c.n == 8
    assert c.improvement == pytest.approx(-0.121694, abs=1e-6)
    assert c.delta_mean == pytest.approx(
        0.121694, abs=1e-6
    )  # raw mixer - baseline, as bench_report
    assert round(c.improvement_rel_pct, 2) == -25.53
    assert (c.wins, c.ties, c.losses) == (2, 0, 6)
    assert c.p_method == "exact" and c.mc_seed is None
    assert c.p_value == pytest.approx(34 / 256, abs=1e-12)
    assert c.ci95[0] == pytest.approx(-0.296315, abs=1e-6)  # the sign-flip test inverted
    assert c.ci95[1] == pytest.approx(0.044488, abs=1e-6)
    assert [round(x, 2) for x in c.ci95_rel_pct] == [-62.17, 9.33]
    assert c.mde == pytest.approx(0.225881, abs=1e-6)
    assert round(c.mde_rel_pct, 2) == 47.39
    assert c.ci_half_width == pytest.approx(0.170402, abs=1e-6)
    assert round(100 * c.ci_half_width / c.baseline_mean, 2) == 35.75
    assert c.margin == pytest.approx(0.05 * 0.4766220450401306, abs=1e-12)
    assert c.p_tost == 230 / 256  # the sign-flip TOST, every pattern counted
    assert c.verdict == "inconclusive"
    assert c.per_seed_diffs == pytest.approx(list(np.subtract(MIXER, BASE)), abs=1e-15)
    [c] = holm_adjusted([c])
    assert c.p_holm == c.p_value and c.verdict == "inconclusive"


def test_a_comparison_serialises_to_plain_json_with_none_for_nan():
    c = compare_paired(BASE, MIXER)
    d = plain(c)
    assert d["p_holm"] is None and d["p_tost_holm"] is None
    assert isinstance(d["ci95"], list) and len(d["ci95"]) == 2
    assert json.loads(json.dumps(d, allow_nan=False)) == d


@pytest.mark.parametrize("n", [5, 10])
def test_exact_p_equals_scipy(n):
    rng = np.random.default_rng(n)
    base = rng.normal(1.0, 0.1, n)
    mix = base + rng.normal(0.03, 0.05, n)
    c = compare_paired(base, mix, higher_is_better=True)
    assert c.p_method == "exact"
    assert c.p_value == pytest.approx(_scipy_p(mix - base), rel=1e-12)


def test_monte_carlo_p_equals_scipy_with_recorded_seed():
    rng = np.random.default_rng(3)
    base = rng.normal(1.0, 0.1, 18)
    mix = base + rng.normal(0.02, 0.05, 18)
    c = compare_paired(base, mix, higher_is_better=True, mc_seed=123)
    assert 2**18 > 100_000
    assert c.p_method == "monte_carlo" and c.mc_seed == 123
    assert c.p_value == _scipy_p(mix - base, rng=np.random.default_rng(123))


def test_holm_equals_statsmodels_and_updates_verdicts():
    rng = np.random.default_rng(0)
    comps = []
    for shift in (0.0, 0.5, -0.5, 0.05):
        base = rng.normal(10.0, 0.05, 10)
        comps.append(compare_paired(base, base + shift + rng.normal(0, 0.05, 10), True))
    raw = [c.p_value for c in comps]
    raw_tost = [c.p_tost for c in comps]
    comps = holm_adjusted(comps)
    assert [c.p_holm for c in comps] == pytest.approx(multipletests(raw, method="holm")[1])
    assert [c.p_tost_holm for c in comps] == pytest.approx(
        multipletests(raw_tost, method="holm")[1]
    )
    # All-positive diffs at n=10 give p = 2/1024; times 4 comparisons is still < 0.05.
    assert comps[1].verdict == "significant_win"
    assert comps[2].verdict == "significant_loss"
    assert comps[0].verdict in ("equivalent_within_margin", "inconclusive")


def test_holm_can_remove_significance():
    base = np.linspace(1.0, 2.0, 6)
    comps = [compare_paired(base, base + 0.5, higher_is_better=True) for _ in range(3)]
    assert all(c.p_value == pytest.approx(2 / 64) for c in comps)
    assert comps[0].verdict == "significant_win"
    comps = holm_adjusted(comps)
    assert all(c.p_holm == pytest.approx(6 / 64) for c in comps)
    # 6 seeds cannot reach Holm's first step over 3 (2/64 >= 0.05/3): not decidable at all
    assert all(c.verdict == "needs_more_seeds" and not c.detectable for c in comps)
    more = [compare_paired(np.linspace(1, 2, 8), np.linspace(1, 2, 8) + 0.5) for _ in range(3)]
    for c in more:
        c.p_value = 0.04  # reachable at 8 seeds (2/256 < 0.05/3), but not reached after Holm
    more = holm_adjusted(more)
    assert all(c.verdict == "inconclusive" and c.detectable for c in more)


def test_below_margin_and_equivalence_verdicts():
    base = 100.0 + np.arange(10.0)
    small = compare_paired(base, base + 0.5, higher_is_better=True)  # 0.5% gain, sd(d) = 0
    assert small.p_value == pytest.approx(2 / 1024)
    assert small.ci95 == (0.5, 0.5) and small.ci_half_width == 0.0
    assert small.mde == 0.0
    assert small.verdict == "significant_win_below_margin"
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.5, 10)
    noise -= noise.mean()
    equal = compare_paired(base, base + noise, higher_is_better=True)
    assert equal.p_value > 0.05 and equal.p_tost < 0.05
    assert equal.verdict == "equivalent_within_margin"


def test_a_model_that_learnt_nothing_is_never_equivalent():
    """The equivalence of the test above, but the mixer's seeds learnt nothing (flagged
    ``no_better_than_trivial``): inconclusive, never ``equivalent_within_margin``."""
    base = 100.0 + np.arange(10.0)
    noise = np.random.default_rng(1).normal(0, 0.5, 10)
    learnt_nothing = comparison_flags(
        non_finite=0,
        no_better_than_trivial=3,
        n=10,
        edge_of_grid=False,
        baseline_edge_of_grid=False,
        indecisive_selection=False,
    )
    comps = [
        compare_paired(base, base + noise - noise.mean(), higher_is_better=True, flags=flags)
        for flags in ((), learnt_nothing)
    ]
    comps = holm_adjusted(comps, family=2)
    assert comps[0].p_tost_holm < 0.05 and comps[1].p_tost_holm < 0.05
    assert comps[0].verdict == "equivalent_within_margin"
    assert comps[1].flags == ["no_better_than_trivial"] and comps[1].verdict == "inconclusive"


def test_learnt_nothing_is_a_one_sided_test_against_the_trivial_score():
    """With its test noise measured, a seed learnt something only when its score beats the
    trivial predictor's by more than 1.645 standard errors: tabular's majority class 0.687 with
    a test error of 0.0137 (the default run's) needs 0.7096."""
    assert learnt_nothing(0.70, 0.687, 1.0, True, noise=0.0137)  # 0.9 standard errors above
    assert not learnt_nothing(0.71, 0.687, 1.0, True, noise=0.0137)  # 1.7 above
    assert not learnt_nothing(0.689, 0.687, 1.0, True, noise=0.0001)  # a precise split
    assert learnt_nothing(0.97, 1.0, 0.0, False, noise=0.02)  # an error 1.5 below the trivial
    assert not learnt_nothing(0.96, 1.0, 0.0, False, noise=0.02)
    assert learnt_nothing(0.60, 0.687, 1.0, True, noise=0.0)  # worse than trivial
    assert not learnt_nothing(0.5, None, 1.0, True, noise=0.01)  # no trivial level declared


def test_learnt_nothing_without_a_measured_noise_is_at_or_below_the_trivial_level():
    """A record from before the noise was measured: within 1% of the way from the trivial
    predictor's score to the ideal, or worse."""
    assert learnt_nothing(0.687, 0.687, 1.0, True)  # tabular: the majority class exactly
    assert learnt_nothing(0.689, 0.687, 1.0, True)  # 0.6% of the gap to 1
    assert not learnt_nothing(0.70, 0.687, 1.0, True)
    assert learnt_nothing(0.60, 0.687, 1.0, True)  # worse than trivial
    assert learnt_nothing(0.995, 1.0, 0.0, False) and not learnt_nothing(0.98, 1.0, 0.0, False)
    assert not learnt_nothing(math.nan, 0.687, 1.0, True)  # non-finite: diverged, not this
    assert not learnt_nothing(0.5, None, 1.0, True)  # no trivial level declared


def test_the_equivalence_margin_is_at_most_a_quarter_of_the_baseline_gain():
    """Tabular: a baseline at 0.735 over a majority class of 0.687 gained 4.8 points; 5% of its
    value (3.7 points, 77% of the gain) would call a mixer that lost most of it equivalent, so
    the margin is a quarter of the gain, 1.2 points. Where the gain is large (vision: 0.95 over
    0.09) the relative margin, the smaller, stays; without caps it is the margin alone."""
    base, mix = np.array([0.73, 0.74]), np.array([0.72, 0.73])
    caps = np.array([0.687, 0.687])
    _, _, margin = improvements(base, mix, True, Scale.DIFFERENCE, 0.05, caps)
    assert margin == pytest.approx(0.25 * (0.735 - 0.687))
    assert improvements(base, mix, True, Scale.DIFFERENCE, 0.05)[2] == pytest.approx(0.03675)
    vision = np.array([0.95, 0.96]), np.array([0.09, 0.08])
    margin = improvements(vision[0], vision[0], True, Scale.DIFFERENCE, 0.05, vision[1])[2]
    assert margin == pytest.approx(0.05 * 0.955)
    # log-ratio: an error of 0.98 against a trivial 1.0 gained log(1/0.98) = 0.0202
    errors, trivial = np.array([0.98, 0.98]), np.array([1.0, 1.0])
    _, scale, margin = improvements(errors, errors, False, Scale.LOG, 0.05, trivial)
    assert scale == Scale.LOG and margin == pytest.approx(0.25 * math.log(1 / 0.98))
    below = improvements(errors, errors, False, Scale.LOG, 0.05, np.array([0.9, 0.9]))[2]
    assert below == pytest.approx(math.log1p(0.05))  # no gain: the relative margin alone
    c = compare_paired(base, mix, higher_is_better=True, caps=caps)
    assert c.margin == pytest.approx(0.012)


def test_direction_invariance():
    rng = np.random.default_rng(7)
    base = rng.normal(2.0, 0.2, 9)
    mix = base + rng.normal(0.1, 0.1, 9)
    a = compare_paired(base, mix, higher_is_better=True)
    b = compare_paired(-base, -mix, higher_is_better=False)
    assert a.p_value == b.p_value and a.verdict == b.verdict
    assert a.improvement == b.improvement and a.p_tost == pytest.approx(b.p_tost)
    assert a.improvement_rel_pct == b.improvement_rel_pct and a.ci95 == b.ci95


def test_degenerate_inputs():
    with pytest.raises(ValueError, match="equal length"):
        compare_paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        compare_paired([1.0, 2.0], [1.0, math.nan])
    one = compare_paired([1.0], [0.5])
    assert one.p_value == 1.0 and one.verdict == "inconclusive"
    assert one.ci95 == (-math.inf, math.inf) and math.isnan(one.mde)
    assert plain(one)["ci95"] == [None, None] and not one.interval_bounded
    same = compare_paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert same.p_value == 1.0 and same.ties == 3
    assert not same.detectable and math.isnan(same.mde)  # 3 seeds: p >= 2/8 > alpha
    six = compare_paired([1.0, 2.0, 3.0] * 2, [1.0, 2.0, 3.0] * 2)
    assert six.detectable and six.mde == 0.0
    assert same.ci95 == (-math.inf, math.inf)  # 3 seeds cannot bound it at 95%
    assert six.ci95 == (0.0, 0.0)  # 6 can: every other shift is rejected
    # zero difference, zero spread, but 3 seeds cannot reach alpha: the design cannot decide
    assert same.verdict == "needs_more_seeds"
    assert six.verdict == "equivalent_within_margin"  # at 6 seeds it can: equivalent


def test_min_seeds_and_design_warning():
    assert [min_seeds_for_significance(m) for m in (1, 4, 36, 100)] == [6, 8, 11, 12]
    for m in (1, 4, 36, 100, 250):
        n = min_seeds_for_significance(m)
        assert 2 / 2**n < 0.05 / m <= 2 / 2 ** (n - 1)
    assert min_seeds_for_significance(1, alpha=0.0625) == 6  # 2/2**5 == alpha is not < alpha
    msg = design_warning(3, 4)
    assert msg == (
        "with 3 seeds no per-track verdict can reach significance after Holm over the 4 "
        "per-track comparisons; "
        "use at least 8 seeds"
    )
    assert design_warning(8, 4) is None


def test_planned_mde_matches_protocol_dz():
    assert planned_mde(8, 1.0) == pytest.approx(1.156, abs=1e-3)
    assert planned_mde(10, 2.0) == pytest.approx(2 * 0.996, abs=2e-3)


def _flags(**given) -> list:
    fields = {
        "non_finite": 0,
        "no_better_than_trivial": 0,
        "n": 8,
        "edge_of_grid": False,
        "baseline_edge_of_grid": False,
        "indecisive_selection": False,
    }
    return comparison_flags(**{**fields, **given})


def test_flags():
    """Each flag at its threshold (25% of the seeds for the counts), in the report's order, and a
    comparison is built with them."""
    assert _flags(non_finite=1, no_better_than_trivial=1) == []
    # learnt nothing: a quarter of the seeds and more than one of them; one seed of three (or of
    # two) is one seed's bad luck, two of three are not
    assert _flags(no_better_than_trivial=1, n=3) == []
    assert _flags(no_better_than_trivial=1, n=2) == []
    assert _flags(no_better_than_trivial=2, n=3) == ["no_better_than_trivial"]
    assert _flags(no_better_than_trivial=2, n=2) == ["no_better_than_trivial"]
    assert _flags(no_better_than_trivial=2, n=9) == []  # 22%: below a quarter
    assert _flags(non_finite=1, n=3) == ["unstable"]  # the unstable flag keeps its 25% alone
    assert _flags(non_finite=2, edge_of_grid=True) == ["unstable", "edge_of_grid"]
    assert _flags(
        no_better_than_trivial=2,
        baseline_edge_of_grid=True,
        indecisive_selection=True,
        param_mismatch=True,
        undertrained=True,
        baseline_undertrained=True,
    ) == [
        "no_better_than_trivial",
        "baseline_edge_of_grid",
        "indecisive_selection",
        "param_mismatch",
        "undertrained",
        "baseline_undertrained",
    ]
    c = compare_paired(BASE, MIXER, flags=_flags(non_finite=2))
    assert c.flags == ["unstable"]


def test_divergence_imputation_and_summary():
    assert divergence(math.inf, 1.0, higher_is_better=False, finite=True) == "non_finite"
    assert divergence(1.5, 1.0, higher_is_better=False, finite=True) == "no_better_than_trivial"
    assert divergence(0.5, 1.0, higher_is_better=False, finite=True) == ""
    assert divergence(0.05, 0.1, higher_is_better=True, finite=True) == "no_better_than_trivial"
    assert divergence(0.5, 1.0, False, finite=False) == "non_finite"
    caps = [1.0, 1.1, 0.9, 1.0]  # each seed's own trivial predictor
    imputed = impute_diverged([0.3, math.nan, 2.0, 0.4], [False, True, True, False], caps)
    assert imputed == [0.3, 1.1, 0.9, 0.4]
    with pytest.raises(ValueError):
        impute_diverged([0.3], [False, True], [1.0, 1.0])
    s = divergence_summary(2, 8)
    ci = sps.binomtest(2, 8).proportion_ci(method="exact")
    assert s.count == 2 and s.rate == 0.25
    assert s.ci95 == pytest.approx([ci.low, ci.high])
    assert divergence_summary(0, 8).ci95[0] == 0.0


def test_compare_both_converged():
    bd = [False, True, False, False, False, False, False, False]
    md = [False, False, False, True, False, False, False, False]
    c = compare_both_converged(BASE, MIXER, bd, md, higher_is_better=False)
    keep = [0, 2, 4, 5, 6, 7]
    ref = compare_paired([BASE[i] for i in keep], [MIXER[i] for i in keep])
    assert c.n == 6 and c.improvement == ref.improvement and c.p_value == ref.p_value
    assert (
        compare_both_converged(BASE[:3], MIXER[:3], [True, True, False], [0, 0, 0], False) is None
    )


def _entry(index, config, val, diverged=None):
    return Candidate(index, config, val, diverged or [False] * len(val))


def test_select_best_config_mean_and_edge():
    lrs = [1e-4, 3e-4, 1e-3]
    sweep = [
        _entry(i, {"lr": lr}, v)
        for i, (lr, v) in enumerate(zip(lrs, [[3, 3], [1, 2], [2, 2]], strict=True))
    ]
    assert select_best_config(sweep, False) == (1, False)
    sweep[2] = _entry(2, {"lr": lrs[2]}, [0.5, 0.5])
    assert select_best_config(sweep, False) == (2, True)
    assert select_best_config(sweep, True) == (0, True)
    assert select_best_config([sweep[0]], True) == (0, False)


def test_select_best_config_tie_rules():
    cfg = [{"lr": lr, "wd": 0.0} for lr in (1, 2, 3, 4)]
    # Equal means; entry 1 has fewer diverged runs than entry 0.
    sweep = [
        _entry(0, cfg[0], [1.0, 3.0], [True, False]),
        _entry(1, cfg[1], [1.0, 3.0]),
        _entry(2, cfg[2], [2.5, 1.5]),
        _entry(3, cfg[3], [5.0, 5.0]),
    ]
    assert select_best_config(sweep, False) == (1, False)
    # Same divergence count and mean: lower median wins (lower is better) ...
    sweep = [_entry(0, cfg[0], [3.0, 0.0, 3.0]), _entry(1, cfg[1], [1.0, 1.0, 4.0])]
    assert select_best_config(sweep, False)[0] == 1
    # ... higher median when higher is better.
    assert select_best_config(sweep, True)[0] == 0
    # Full tie: grid order.
    sweep = [_entry(1, cfg[1], [2.0, 2.0]), _entry(0, cfg[0], [2.0, 2.0])]
    assert select_best_config(sweep, False)[0] == 0


def test_select_best_config_non_finite_is_worst_and_diverged():
    cfg = [{"lr": lr} for lr in (1, 2, 3)]
    sweep = [
        _entry(0, cfg[0], [math.nan, 0.1]),
        _entry(1, cfg[1], [0.2, 0.2]),
        _entry(2, cfg[2], [math.inf, 0.3]),  # +inf accuracy is not a win
    ]
    assert select_best_config(sweep, True) == (1, False)
    # Both non-finite: tie at the worst value, then fewer diverged wins.
    sweep = [_entry(0, cfg[0], [math.nan, math.nan]), _entry(1, cfg[1], [math.nan, 1.0])]
    assert select_best_config(sweep, False)[0] == 1


def test_categorical_axis_is_never_edge():
    sweep = [
        _entry(0, {"opt": "adam", "lr": 1}, [2.0]),
        _entry(1, {"opt": "sgd", "lr": 2}, [1.0]),
        _entry(2, {"opt": "sgd", "lr": 3}, [3.0]),
    ]
    assert select_best_config(sweep, False) == (1, False)


paired = st.integers(2, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n),
        st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n),
        st.booleans(),
    )
)


@settings(max_examples=40, deadline=None)
@given(paired)
def test_property_p_values_in_unit_interval(data):
    base, mix, higher = data
    c = compare_paired(base, mix, higher)
    assert 0.0 <= c.p_value <= 1.0 and 0.0 <= c.p_tost <= 1.0
    assert c.wins + c.ties + c.losses == c.n


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.001, 0.04, 1.0]) | st.floats(0.0, 1.0), max_size=20),
    st.integers(0, 5),
)
def test_property_holm_is_statsmodels_holm_bit_for_bit(ps, unfinished):
    """The step-down written out in stats.holm gives statsmodels' Holm bit for bit (ties, ones
    and the planned family's unfinished comparisons included); it dominates the raw p and keeps
    their order."""
    adjusted = holm(ps, family=len(ps) + unfinished)
    if ps:
        gc.freeze()  # multipletests collects garbage on every call: 0.4 s over a worker's heap
        try:
            expected = multipletests([*ps, *[1.0] * unfinished], method="holm")[1][: len(ps)]
        finally:
            gc.unfreeze()
        assert adjusted == [float(p) for p in expected]
    assert all(p - 1e-15 <= h <= 1.0 for h, p in zip(adjusted, ps, strict=True))
    order = np.argsort(ps, kind="stable")
    assert all(np.diff([adjusted[i] for i in order]) >= -1e-15)


def _one_sided(d: np.ndarray, greater: bool) -> float:
    means = [np.mean(d * np.array(s)) for s in itertools.product((1.0, -1.0), repeat=len(d))]
    hits = [m >= d.mean() - 1e-12 if greater else m <= d.mean() + 1e-12 for m in means]
    return float(np.mean(hits))


def test_tost_is_two_one_sided_sign_flip_tests():
    rng = np.random.default_rng(11)
    base = rng.normal(5.0, 0.3, 10)
    mix = base + rng.normal(0.05, 0.2, 10)
    c = compare_paired(base, mix, higher_is_better=True, margin_rel=0.05)
    d, margin = mix - base, 0.05 * abs(base.mean())
    expected = max(_one_sided(d + margin, greater=True), _one_sided(d - margin, greater=False))
    assert c.p_tost == pytest.approx(expected, abs=1e-12)
    # the smallest TOST p of n seeds is 1/2**n: 4 seeds inside the margin cannot show it at 0.05
    inside = compare_paired(np.ones(4), np.ones(4) + 1e-3, higher_is_better=True)
    assert inside.p_tost == 1 / 16 and inside.verdict != "equivalent_within_margin"


def test_log_scale_effects_are_geometric_mean_ratios_and_never_pass_100_percent():
    base = [0.05, 0.06, 0.04, 0.05, 0.07, 0.05]
    mixer = [0.001, 0.002, 0.0015, 0.001, 0.003, 0.002]  # about 30x lower errors
    c = compare_paired(base, mixer, higher_is_better=False, scale="log")
    ratios = np.asarray(mixer) / np.asarray(base)
    assert c.scale == "log"
    assert c.per_seed_improvements == pytest.approx(list(-np.log(ratios)))
    assert c.improvement_rel_pct == pytest.approx(100 * (1 - sps.gmean(ratios)))
    assert c.improvement_rel_pct < 100 and c.ci95_rel_pct[1] < 100
    assert c.improvement_diff == pytest.approx(float(np.mean(np.subtract(base, mixer))))
    # the same data on the difference scale can promise more than +100%
    worse = compare_paired(mixer, base, higher_is_better=False, scale="log")
    assert worse.improvement_rel_pct < -100  # 30x higher errors: a loss has no bound
    assert compare_paired(base, [0.0, *mixer[1:]], scale="log").scale == "difference"


def test_mde_is_at_the_alpha_of_holms_first_step():
    rng = np.random.default_rng(2)
    family = [compare_paired(rng.normal(1, 0.1, 12), rng.normal(1, 0.1, 12)) for _ in range(40)]
    family = holm_adjusted(family)
    dz = TTestPower().solve_power(nobs=12, alpha=0.05 / 40, power=0.8, alternative="two-sided")
    for c in family:
        assert c.mde_alpha == pytest.approx(0.05 / 40)
        assert c.mde == pytest.approx(dz * c.sd_diff)
        assert c.mde_rel_pct == pytest.approx(100 * c.mde / abs(c.baseline_mean))
    assert dz > 1.5 * TTestPower().solve_power(nobs=12, alpha=0.05, power=0.8)  # 1.73x here


def test_default_seeds_let_one_discordant_seed_pass_holm():
    assert default_seeds(40) == 12 and default_seeds(58) == 13 and default_seeds(100) == 13
    assert default_seeds(1) == 12
    for m in (40, 58, 100, 300):
        n = default_seeds(m)
        assert 4 / 2**n < 0.05 / m and (n == 12 or 4 / 2 ** (n - 1) >= 0.05 / m)
        d = np.array([1.0] * (n - 1) + [-0.1])  # one discordant, smallest difference
        assert compare_paired(np.zeros(n), d, higher_is_better=True).p_value == 4 / 2**n


def test_a_cell_at_chance_is_not_flagged_for_the_edge_of_its_grid():
    rng = np.random.default_rng(3)
    caps = {seed: 0.25 for seed in range(12)}
    noise = {seed: 0.25 + float(rng.normal(0, 0.01)) for seed in range(12)}
    learnt = {seed: 0.6 + float(rng.normal(0, 0.01)) for seed in range(12)}
    assert at_chance(noise, caps, higher=True)
    assert not at_chance(learnt, caps, higher=True)
    # lower is better: errors below the trivial predictor's are learnt
    assert not at_chance({s: 1 - v for s, v in learnt.items()}, {s: 0.75 for s in caps}, False)
    grid = [{"lr": lr} for lr in (0.01, 0.03, 0.1)]
    chosen = {seed: 0 for seed in range(12)}  # every seed at the lowest learning rate
    at_edge = selection(grid, chosen, {}, "accuracy", chance=False)
    assert at_edge.edge_of_grid and at_edge.modal_on_edge
    noise_edge = selection(grid, chosen, {}, "accuracy", chance=True)
    assert not noise_edge.edge_of_grid and noise_edge.modal_on_edge


def test_too_few_seeds_for_the_test_fall_back_to_every_seed_learning_nothing():
    """Below 5 seeds the one-sided sign-flip test cannot reach 0.05 on any data (1/16 at 4):
    a cell is then at chance only when each of its seeds learnt nothing, so a 2-seed run still
    flags a learnt cell's grid end (it called every cell at chance before)."""
    caps = {0: 0.25, 1: 0.25}
    assert not at_chance({0: 1.0, 1: 0.98}, caps, higher=True, ideal=1.0)
    assert at_chance({0: 0.12}, {0: 0.25}, higher=True, ideal=1.0)  # one seed of a partial run
    assert not at_chance({0: 0.9}, {0: 0.25}, higher=True, ideal=1.0)
    assert at_chance({0: 0.25, 1: 0.2549}, caps, higher=True, ideal=1.0)  # within 1% of the gap
    assert not at_chance({0: 0.25, 1: 0.40}, caps, higher=True, ideal=1.0)  # one seed learnt
    # lower is better (an error against its trivial predictor's, ideal 0)
    assert not at_chance({0: 0.36, 1: 0.39}, {0: 1.0, 1: 1.0}, higher=False, ideal=0.0)
    assert at_chance({0: 1.0, 1: 0.995}, {0: 1.0, 1: 1.0}, higher=False, ideal=0.0)
    four = {seed: 0.6 + 0.01 * seed for seed in range(4)}
    assert not at_chance(four, dict.fromkeys(four, 0.25), higher=True, ideal=1.0)
    # from 5 seeds the test decides: a small but unanimous gain is learnt, noise is not
    five = {seed: 0.25 + 0.001 * (seed + 1) for seed in range(5)}
    assert not at_chance(five, dict.fromkeys(five, 0.25), higher=True, ideal=1.0)
    mixed = {seed: 0.25 + 0.3 * (-1) ** seed for seed in range(5)}
    assert at_chance(mixed, dict.fromkeys(mixed, 0.25), higher=True, ideal=1.0)


def test_float32_rounding_of_a_cap_is_not_divergence():
    """A majority-class predictor's float32 accuracy equals its float64 cap: not diverged."""
    cap = 0.687
    rounded = float(np.float32(cap))  # 0.6869999766...
    assert rounded < cap
    assert divergence(rounded, cap, higher_is_better=True, finite=True) == ""
    assert divergence(float(np.float32(1.25)), 1.25, higher_is_better=False, finite=True) == ""
    assert divergence(0.68, cap, True, True) == "no_better_than_trivial"  # a real shortfall
    assert divergence(1.01, 1.0, False, True) == "no_better_than_trivial"


def _records(val: dict[int, list[float]]) -> dict[int, RunRecord]:
    """Records whose sweep holds one validation accuracy per grid config."""
    return {
        seed: RunRecord(
            key=str(seed),
            job=a_job(seed=seed),
            status="ok",
            result=JobResult(
                sweep=[SweepPoint(k, {}, Scores(val={"accuracy": v})) for k, v in enumerate(values)]
            ),
        )
        for seed, values in val.items()
    }


def test_a_tie_for_the_most_chosen_config_goes_to_the_best_mean_and_never_makes_an_edge():
    grid = [{"lr": lr} for lr in (0.01, 0.03, 0.1)]
    chosen = {0: 0, 1: 1, 2: 2}  # a three-way tie, the lowest lr first in grid order
    val = {0: [0.60, 0.70, 0.65], 1: [0.61, 0.72, 0.66], 2: [0.59, 0.69, 0.70]}
    picked = selection(grid, chosen, _records(val), "accuracy", higher=True)
    assert picked.modal == 1 and picked.tied == [0, 1, 2]
    assert not picked.edge_of_grid
    lower = selection(grid, chosen, _records(val), "accuracy", higher=False)
    assert lower.modal == 0  # lower is better: the smallest mean wins the tie
    assert not lower.edge_of_grid  # config 1 is tied too: the tie-break made the edge
    ends = selection(grid, {0: 0, 1: 2}, _records(val), "accuracy", higher=True)
    assert ends.edge_of_grid  # every tied config is on an end: a real edge


def test_a_seed_whose_choice_was_an_exact_tie_shows_as_tied():
    """tabular/identity chose lr=0.001 on 12 of 12 seeds, each a 5-way exact tie broken by grid
    order: the config column says that no seed decided, instead of reading as agreement."""
    from types import SimpleNamespace

    from benchsuite.output.track_tables import choice

    grid = [{"lr": lr} for lr in (0.001, 0.003, 0.01)]
    flat = {seed: [0.687, 0.687, 0.687] for seed in range(12)}
    picked = selection(grid, dict.fromkeys(flat, 0), _records(flat), "accuracy")
    assert picked.tied_seeds == [str(seed) for seed in range(12)]
    arm = SimpleNamespace(selection=picked, best_cfg=grid[picked.modal])
    assert choice(arm, grid) == "lr=0.001 (0/12 decided, 12 tied)"

    mixed = {0: [0.70, 0.70, 0.60], 1: [0.71, 0.70, 0.60], 2: [0.60, 0.70, 0.71], 3: [0.9, 0, 0]}
    picked = selection(grid, {0: 0, 1: 0, 2: 2, 3: 0}, _records(mixed), "accuracy")
    assert picked.tied_seeds == ["0"]  # seed 0's 0.70 equals another config's; the others won
    arm = SimpleNamespace(selection=picked, best_cfg=grid[picked.modal])
    assert choice(arm, grid) == "lr=0.001 (2/4 decided, 1 tied)"
    decided = selection(grid, {1: 0, 2: 2}, _records(mixed), "accuracy")
    assert decided.tied_seeds == []
    assert choice(SimpleNamespace(selection=decided, best_cfg=grid[decided.modal]), grid) in (
        "lr=0.001 (1/2)",
        "lr=0.01 (1/2)",
    )


def test_choices_an_exact_tie_decided_never_make_an_edge():
    """vision/monarch: two seeds' validation tied between the two lowest rates, and the grid's
    order chose the lowest; the one seed that decided chose the middle: no edge of the grid."""
    grid = [{"lr": lr} for lr in (0.01, 0.03, 0.1)]
    val = {0: [0.8, 0.8, 0.5], 1: [0.7, 0.7, 0.6], 2: [0.6, 0.9, 0.5]}
    picked = selection(grid, {0: 0, 1: 0, 2: 1}, _records(val), "accuracy")
    assert picked.modal == 0 and picked.tied_seeds == ["0", "1"]
    assert not picked.edge_of_grid and picked.edge_share == 0.0
    every = selection(grid, {0: 0, 1: 0}, _records(val), "accuracy")
    assert not every.edge_of_grid  # no seed decided: nothing says the optimum lies beyond
    decided = {0: [0.9, 0.8, 0.5], 1: [0.9, 0.7, 0.6], 2: [0.6, 0.9, 0.5]}
    assert selection(grid, {0: 0, 1: 0, 2: 1}, _records(decided), "accuracy").edge_of_grid


def test_holm_over_the_planned_family_counts_unfinished_comparisons():
    done = [0.001, 0.02]
    padded = multipletests([*done, 1.0, 1.0, 1.0], method="holm")[1][:2]
    assert holm(done, family=5) == pytest.approx(padded)
    assert holm(done) == pytest.approx(multipletests(done, method="holm")[1])
    comps = [compare_paired(np.zeros(12), np.arange(1, 13.0), True) for _ in range(2)]
    comps = holm_adjusted(comps, family=5)
    assert comps[0].family == 5 and comps[0].mde_alpha == pytest.approx(0.01)
    with pytest.raises(ValueError, match="family of 1"):
        holm(done, family=1)


def test_the_interval_and_the_p_are_one_test():
    """Every seed better, one of them hugely (a t interval contained 0 here): the sign-flip p is
    2/64, and its inverted interval excludes 0 and stays within the seeds' range."""
    d = np.array([0.01] * 5 + [10.0])
    comp = compare_paired(np.zeros(6), d, higher_is_better=True)
    assert comp.p_value == pytest.approx(2 / 64)
    assert 0 < comp.ci95[0] <= comp.ci95[1] <= 10.0
    assert comp.verdict == "significant_win"
    rng = np.random.default_rng(5)
    for _ in range(20):
        d = rng.normal(0.3, 1.0, 7)
        c = compare_paired(np.zeros(7), d, higher_is_better=True)
        assert excludes_zero(c.ci95) == (c.p_value < 0.05)
        assert d.min() <= c.ci95[0] <= c.ci95[1] <= d.max()


def test_nothing_is_detectable_when_the_seeds_cannot_reach_alpha():
    assert min_sign_flip_p(5) == 2 / 32
    assert math.isnan(planned_mde(5, 1.0, 0.05)) and planned_mde(6, 1.0, 0.05) > 0
    comps = [compare_paired(np.zeros(8), np.arange(1, 9.0), True) for _ in range(60)]
    comps = holm_adjusted(comps)  # 2/256 = 0.0078 is not below 0.05/60
    assert not comps[0].detectable and math.isnan(comps[0].mde)
    assert plain(comps[0])["mde"] is None


def test_the_design_line_says_when_nothing_is_detectable(tmp_path):
    from rich.console import Console

    from benchsuite.output.progress import print_design
    from benchsuite.plan.design import design_check
    from benchsuite.registry.plugins import load_registry
    from benchsuite.settings import RunSettings

    tracks = load_registry(None).tracks
    pair = {"tracks": ("sequence",), "mixers": ("dense", "identity"), "out": str(tmp_path)}
    few = RunSettings(**pair, seeds=5)
    design = design_check(few, tracks)
    assert not design.detectable and design.tracks["sequence"].planned_mde_rel_pct is None
    console = Console(record=True, width=300)
    print_design(design, console, verbose=True)  # the per-track MDEs: under -v
    text = console.export_text()
    assert "sequence: nothing detectable: the smallest sign-flip p of 5 seeds" in text
    planned = design_check(RunSettings(**pair, seeds=6), tracks).tracks["sequence"]
    assert planned.planned_mde_rel_pct > 0 and planned.scale == "log"


def test_the_power_solution_is_remembered_on_disk_exactly(tmp_path, monkeypatch):
    """The design check's dz* comes from statsmodels once, then from the cache folder, bit for
    bit, in a fresh interpreter that imports no statsmodels (the process is the subject)."""
    import subprocess
    import sys

    from benchsuite.protocol.power import dz_star

    monkeypatch.setenv("BENCHSUITE_CACHE", str(tmp_path))
    dz_star.cache_clear()
    solved = TTestPower().solve_power(nobs=11, alpha=0.05 / 7, power=0.8, alternative="two-sided")
    assert dz_star(11, 0.05 / 7) == float(solved)
    assert (tmp_path / "power.json").is_file()
    code = (
        "import sys\nfrom benchsuite.protocol.power import dz_star\n"
        "print(repr(dz_star(11, 0.05 / 7)), 'statsmodels' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [repr(float(solved)), "False"]
    dz_star.cache_clear()


def test_an_accuracy_interval_is_clipped_to_what_the_metric_allows():
    """A recall whose baseline averages 41.1% cannot gain more than 58.9 points on average: the
    mixer at 100% on every seed has a mean difference of exactly 0.589, and the interval of that
    mean (the sign-flip test inverted reaches past it, the seeds' baselines differing) stops
    there; the verdict, p and lower bound are the test's. An error's log-ratio is not bounded."""
    from benchsuite.protocol.ranges import clip_to_metric, difference_range, metric_range

    base = np.array([0.30, 0.52, 0.35, 0.45, 0.40, 0.44, 0.42, 0.408])
    assert base.mean() == pytest.approx(0.411)
    mixer = np.ones(8)
    free = compare_paired(base, mixer, higher_is_better=True)
    bounds = metric_range(True, 1.0)
    assert bounds == (0.0, 1.0)
    held = compare_paired(base, mixer, higher_is_better=True, bounds=bounds)
    assert free.ci95[1] > 0.589 + 0.01  # the test alone: beyond what recall allows
    assert held.ci95[1] == pytest.approx(0.589) and held.ci95_diff[1] == pytest.approx(0.589)
    assert held.ci95[0] == free.ci95[0] and held.improvement == pytest.approx(0.589)
    assert (held.p_value, held.verdict) == (free.p_value, free.verdict)
    assert held.ci95_rel_pct[1] == pytest.approx(100 * 0.589 / 0.411)
    # the loss side: no accuracy goes below 0
    lost = compare_paired(1 - base, np.zeros(8), higher_is_better=True, bounds=bounds)
    assert lost.ci95[0] == pytest.approx(-(1 - base).mean())
    # percentages, errors, metrics that declare no ideal
    assert metric_range(True, 100.0) == (0.0, 100.0)
    assert metric_range(False, 0.0) == (0.0, math.inf)
    assert metric_range(True, None) == (-math.inf, math.inf)
    assert difference_range((0.0, math.inf), 0.5, higher_is_better=False) == (-math.inf, 0.5)
    assert clip_to_metric((-math.inf, math.inf), (-0.4, 0.6)) == (-math.inf, math.inf)
    err = compare_paired(base, base / 10, higher_is_better=False, scale="log", bounds=(0, math.inf))
    assert err.scale == "log" and err.ci95 == compare_paired(base, base / 10, scale="log").ci95
    assert err.ci95_diff[1] <= base.mean()  # in points: the error cannot fall below 0

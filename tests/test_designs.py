"""The two designs (docs/protocol.md, "Two designs"): the suite design plans each mixer's claim
across tracks with the fewest seeds that can reach it; the per-track design is one setting away
and, run into the same folder, extends the suite run, training only the new seeds; the suite
tests of the extended run count the earlier look (Bonferroni over the looks)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import invoke

from benchsuite.errors import UsageError
from benchsuite.plan.extension import check_extension, looks
from benchsuite.plan.resolve import resolve
from benchsuite.protocol.power import default_seeds, looks_alpha, suite_seeds
from benchsuite.results.aggregate import Paired, TrackPairs, aggregate_across_tracks
from benchsuite.serial import to_plain
from benchsuite.settings import RunSettings

pytestmark = pytest.mark.floors


@pytest.mark.parametrize(
    ("tracks", "mixers", "seeds"), [(6, 17, 3), (4, 20, 4), (3, 1, 4), (2, 1, 8), (6, 1, 2)]
)
def test_suite_seeds_are_the_fewest_that_pass_holm_with_one_discordant_seed_and_a_track_out(
    tracks, mixers, seeds
):
    assert suite_seeds(tracks, mixers) == seeds
    kept, first_look = tracks - 1, 0.025
    assert 4 / 2 ** (kept * seeds) < first_look / mixers  # reachable, one seed the other way
    if seeds > 2:
        assert 4 / 2 ** (kept * (seeds - 1)) >= first_look / mixers  # not with one seed fewer


def test_a_suite_design_needs_two_tracks():
    with pytest.raises(ValueError, match="2 tracks"):
        suite_seeds(1, 17)


def test_each_look_spends_half_of_what_is_left_so_every_look_together_stays_below_alpha():
    assert [looks_alpha(k) for k in (1, 2, 3)] == [0.025, 0.0125, 0.00625]
    assert sum(looks_alpha(k) for k in range(1, 40)) < 0.05


def _resolved(registry, **given):
    return resolve(RunSettings(**given), registry)


def test_the_default_run_plans_the_suite_claims_with_three_seeds(registry):
    settings = _resolved(registry)
    tracks, mixers = len(settings.tracks), len(settings.mixers) - 1
    assert settings.design == "suite"
    assert settings.seeds == suite_seeds(tracks, mixers) == 3


def test_per_track_is_one_setting_away_and_seeds_enough_for_it_choose_it(registry):
    per_track = _resolved(registry, design="per-track")
    m = len(per_track.tracks) * (len(per_track.mixers) - 1)
    assert per_track.seeds == default_seeds(m) == 13
    by_seeds = _resolved(registry, seeds=13)
    assert by_seeds.design == "per-track"
    assert _resolved(registry, seeds=5).design == "suite"


def test_one_track_plans_its_own_claims(registry):
    settings = _resolved(registry, tracks=("sequence",), mixers=("dense", "attention"))
    assert settings.design == "per-track" and settings.seeds == 12
    with pytest.raises(UsageError, match="--design suite needs at least 2 tracks"):
        _resolved(registry, tracks=("sequence",), mixers=("dense", "attention"), design="suite")


def test_per_track_claims_with_too_few_seeds_say_what_they_would_take(registry):
    with pytest.raises(UsageError) as raised:
        _resolved(registry, design="per-track", seeds=5)
    text = str(raised.value)
    assert "\n" not in text
    assert "need at least 12 seeds (13 to allow one discordant seed), got --seeds 5" in text
    with pytest.raises(UsageError, match="unknown --design 'tracks'; valid: suite, per-track"):
        _resolved(registry, design="tracks")


def _plan(**given) -> dict:
    base = {"tracks": ["a", "b"], "mixers": ["dense", "x"], "seeds": 3, "design": "suite"}
    return {"settings": {**base, **given}}


def test_an_extension_counts_the_earlier_looks_of_the_same_study():
    now = RunSettings(tracks=("a", "b"), mixers=("dense", "x"), seeds=13, design="per-track")
    plans = [_plan(), _plan(seeds=5), _plan(seeds=13), _plan(seeds=20), _plan(tracks=["a"])]
    assert looks(plans, now) == [3, 5]
    one_track = RunSettings(tracks=("a",), mixers=("dense", "x"), seeds=13)
    assert looks([_plan(tracks=["a"])], one_track) == []  # a single track shows no suite verdict


def test_extending_a_run_with_other_settings_is_one_line_and_says_what_it_takes():
    now = RunSettings(tracks=("a", "b"), mixers=("dense", "x"), seeds=13, budget={"steps": 50})
    with pytest.raises(UsageError) as raised:
        check_extension([_plan()], now, "out")
    text = str(raised.value)
    assert "\n" not in text
    assert "--out out holds a 3-seed run of the same mixers and tracks" in text
    assert "budget {} there, {'steps': 50} here" in text
    check_extension([_plan(tracks=["c", "d"])], now, "out")  # other cells: not an extension


def test_a_later_look_tests_the_suite_at_a_bonferroni_share_of_alpha():
    rng = np.random.default_rng(3)
    per_track = {
        track: TrackPairs(True, 1.0, {"x": Paired(list(b), list(b - 0.05), [0.0] * 4)})
        for track in ("a", "b", "c")
        for b in [rng.uniform(0.5, 0.9, 4)]
    }
    once, twice = (
        to_plain(aggregate_across_tracks(per_track, baseline_name="dense", alpha=looks_alpha(n)))
        for n in (1, 2)
    )
    first, second = once["mixers"]["x"], twice["mixers"]["x"]
    assert first["suite_test"]["p_value"] == second["suite_test"]["p_value"]
    assert (once["alpha"], twice["alpha"]) == (0.025, 0.0125)
    # the interval is the test's at its own level: wider at the smaller alpha
    assert second["suite_effect_ci95"][0] <= first["suite_effect_ci95"][0]
    assert second["suite_effect_ci95"][1] >= first["suite_effect_ci95"][1]


def test_a_run_extended_to_more_seeds_trains_only_the_new_ones_and_counts_the_look(tmp_path):
    out = tmp_path / "out"
    common = (
        "run",
        "--tracks",
        "sequence,tabular",
        "--mixers",
        "dense,identity",
        "--budget",
        "steps=5",
        "--grid",
        "sequence.lr=0.01",
        "--grid",
        "tabular.lr=0.01",
        "--executor",
        "local",
        "--out",
        str(out),
    )
    first = invoke(*common, "--seeds", "2")
    assert first.returncode == 0, first.stderr
    assert "design: suite claims, 2 paired seeds (as given)" in " ".join(first.stdout.split())
    report = json.loads((out / "report.json").read_text())
    verdicts = {
        c["comparison"]["verdict"]
        for t in report["tracks"].values()
        for c in t["comparisons"].values()
    }
    assert verdicts == {"needs_more_seeds"}
    assert report["across_tracks"]["looks"] == [2] and report["across_tracks"]["alpha"] == 0.025
    # two seeds bound no exact interval: said as such, never an interval of impossible values
    cells = [c for t in report["tracks"].values() for c in t["comparisons"].values()]
    intervals = [c["comparison"]["ci95"] for c in cells]
    assert intervals == [[None, None]] * 2
    assert "[interval needs 6 seeds]" in first.stdout

    extended = invoke(*common, "--seeds", "3")
    assert extended.returncode == 0, extended.stderr
    assert "jobs: 4 trained, 8 reused" in extended.stdout + extended.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["across_tracks"]["looks"] == [2, 3]
    assert report["across_tracks"]["alpha"] == 0.0125
    # the second look's test uses every seed: the first look's and the new one, in two stages
    assert report["across_tracks"]["stages"] == [2, 3]
    identity = report["across_tracks"]["mixers"]["identity"]
    assert identity["n_cells"] == 6 and identity["suite_test"]["stages"] == 2

    refused = invoke(*common[:-2], "--out", str(out), "--seeds", "4", "--budget", "steps=6")
    assert refused.returncode == 2
    assert "holds a 3-seed run of the same mixers and tracks" in refused.stderr
    assert json.loads((out / "report.json").read_text())["across_tracks"]["looks"] == [2, 3]

"""Track options checked together: every built-in track refuses an impossible combination with one
line naming the options and the limit, before anything trains or is written (the real CLI), and
each limit sits where the data stops being possible (in-process, on both sides of the boundary)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import invoke

from benchsuite import Budget, PluginError, Track, UsageError, lr_grid
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.seeds import Streams
from benchsuite.settings import RunSettings
from benchsuite.specs import TrackData, resolve_options
from benchsuite.tracks import mad_tasks, sequence
from benchsuite.tracks.mad_tasks import IGNORE

TRACKS = load_registry().tracks

# One impossible combination per built-in track, as a user types it. Under the full preset the
# MAD ladders set every generator option of compression and memorization, so only their example
# counts are left to get wrong.
CLI_CASES = [
    (
        "sequence",
        "quick",
        ["sequence.lookback=128"],
        "lookback (128) + horizon (8) must be ≤ length (128)",
    ),
    (
        "sequence_long",
        "full",
        ["sequence_long.horizon=600"],
        "lookback (256) + horizon (600) must be ≤ length (768)",
    ),
    (
        "vision",
        "quick",
        ["vision.dataset=digits", "vision.patch=3"],
        "patch (3) must divide the 8×8 digits images (1, 2, 4, 8) with dataset=digits",
    ),
    (
        "tabular",
        "quick",
        ["tabular.dataset=randhie", "tabular.task=classification"],
        "task (classification) contradicts dataset (randhie), a regression table",
    ),
    ("dynamics", "quick", ["dynamics.vpt_threshold=0"], "vpt_threshold (0) must be > 0"),
    (
        "recall",
        "quick",
        ["recall.num_queries=121"],
        "2 × num_pairs (4) + num_queries (121) must be ≤ seq_len (128)",
    ),
    (
        "noisy_recall",
        "full",
        ["noisy_recall.num_queries=125"],
        "2 × num_pairs (8) + num_queries (125) must be ≤ seq_len (128) (rung 1 of the full ladder)",
    ),
    (
        "fuzzy_recall",
        "full",
        ["fuzzy_recall.query_fraction=0.99"],
        "num_pairs (7) × (key_len + value_len) (6) must be ≤ the context",
    ),
    (
        "selective_copying",
        "quick",
        ["selective_copying.num_data=65"],
        "2 × num_data (65) must be ≤ seq_len (128)",
    ),
    ("compression", "full", ["compression.test=0"], "test (0) must be ≥ 1"),
    ("memorization", "full", ["memorization.val=0"], "val (0) must be ≥ 1"),
]


def test_every_built_in_track_has_a_cli_case():
    assert sorted(case[0] for case in CLI_CASES) == sorted(TRACKS)


@pytest.mark.parametrize(
    ("track", "preset", "given", "limit"), CLI_CASES, ids=[c[0] for c in CLI_CASES]
)
def test_an_impossible_combination_stops_the_run_in_one_line(tmp_path, track, preset, given, limit):
    out = tmp_path / "out"
    flags = [flag for option in given for flag in ("--track-option", option)]
    done = invoke(
        "run",
        "--tracks",
        track,
        "--mixers",
        "dense,identity",
        "--preset",
        preset,
        *flags,
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout.strip() == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: track {track}: ") and limit in line
    assert not out.exists()  # no store, no report, no log


# ----------------------------------------------------------------------------- in-process limits


def options(name: str, **given) -> dict:
    return resolve_options(TRACKS[name].options, given, name)


def refused(name: str, **given) -> str:
    """The one-line message ``check_options`` gives for ``given`` on track ``name``."""
    with pytest.raises(UsageError) as caught:
        TRACKS[name].check_options(options(name, **given))
    text = str(caught.value)
    assert text.startswith(f"track {name}: ") and "\n" not in text
    return text


def accepted(name: str, preset: str, **given) -> TrackData:
    """The data ``name`` loads at ``given``, after ``check_options`` accepted it."""
    TRACKS[name].check_options(options(name, **given))
    return TRACKS[name].load(Streams("test", name, 0), options(name, **given), preset, None)


def test_sequence_window_and_split_limits():
    edge = accepted("sequence", "quick", lookback=120, horizon=8, series=7)
    assert edge.tokens == 120 and min(len(edge.x_train), len(edge.x_val), len(edge.x_test)) >= 1
    assert "lookback (121) + horizon (8) must be ≤ length (128)" in refused(
        "sequence", lookback=121
    )
    with pytest.raises(ValueError, match="need at least one array"):  # what the check prevents
        sequence.windows(np.zeros((1, 128, 1)), 121, 8, stride=4)
    assert "series (6) must be ≥ 7" in refused("sequence", series=6)
    assert "horizon (0) must be ≥ 1" in refused("sequence", horizon=0)


def test_sequence_period_and_noise_limits():
    TRACKS["sequence"].check_options(options("sequence", min_period=32.0, max_period=32.0))
    assert "min_period (33) must be ≤ max_period (32)" in refused("sequence", min_period=33.0)
    assert "min_period (0) must be > 0" in refused("sequence", min_period=0.0)
    assert "noise (nan) must be finite" in refused("sequence", noise=math.nan)


def test_vision_patch_must_tile_the_images():
    whole = accepted("vision", "quick", dataset="digits", patch=8)
    assert whole.tokens == 1
    expected = "patch (16) must divide the 8×8 digits images (1, 2, 4, 8) with dataset=digits"
    assert expected in refused("vision", dataset="digits", patch=16)
    TRACKS["vision"].check_options(options("vision", patch=16))  # auto: CIFAR-10's 32×32 may
    assert "32×32 CIFAR-10 images" in refused("vision", patch=64)
    assert "patch (5)" in refused("vision", dataset="cifar10", patch=5)
    assert "patch (-1) must be ≥ 0" in refused("vision", patch=-1)
    TRACKS["vision"].check_options(options("vision", halo=-1))
    assert "halo (-2) must be ≥ -1" in refused("vision", halo=-2)


def test_tabular_task_and_target_must_fit_the_table():
    for dataset, task in [("fair", "classification"), ("randhie", "regression"), ("wine", "auto")]:
        TRACKS["tabular"].check_options(options("tabular", dataset=dataset, task=task))
    TRACKS["tabular"].check_options(options("tabular", csv="x.csv", target="y", task="regression"))
    text = refused("tabular", dataset="fair", task="regression")
    assert "task (regression) contradicts dataset (fair), a classification table" in text
    assert "target (y) names a CSV column, but csv is not set" in refused("tabular", target="y")
    with pytest.raises(UsageError, match="contradicts"):  # load applies the same check
        TRACKS["tabular"].load(
            Streams("test", "tabular", 0), options("tabular", task="regression"), "quick", None
        )


def test_dynamics_threshold_must_be_positive_and_finite():
    TRACKS["dynamics"].check_options(options("dynamics", vpt_threshold=1e-3))
    for bad in (0.0, -1.0, math.inf, math.nan):
        assert "vpt_threshold" in refused("dynamics", vpt_threshold=bad)


def scored(data: TrackData) -> int:
    return int(np.sum(data.y_test != IGNORE))


SMALL = {"train": 8, "val": 4, "test": 4}


def test_recall_pairs_and_queries_fill_the_sequence_exactly():
    edge = accepted("recall", "quick", num_pairs=8, num_keys=8, num_queries=112, **SMALL)
    assert scored(edge) == 4 * 112
    assert "2 × num_pairs (8) + num_queries (113) must be ≤ seq_len (128)" in refused(
        "recall", num_pairs=8, num_keys=8, num_queries=113
    )
    assert "num_pairs (9) must be ≤ num_keys (8)" in refused("recall", num_pairs=9, num_keys=8)
    with pytest.raises(ValueError, match="num_pairs must be at most num_keys"):
        mad_tasks.make_in_context_recall(np.random.default_rng(0), 2, num_pairs=9, num_keys=8)
    assert "noise_vocab ≥ 1 (got 0)" in refused("recall", noise_ratio=0.5)
    assert "noise_ratio (1) must be < 1" in refused("recall", noise_ratio=1.0, noise_vocab=4)
    edge = accepted("noisy_recall", "full", num_queries=120, **SMALL)  # pairs among no free slot
    assert edge.tokens == 128 and scored(edge) > 0
    assert "num_queries (121)" in refused("noisy_recall", num_queries=121)


def test_fuzzy_recall_keys_and_context_limits():
    one_token = {"key_len": 1, "value_len": 1, "seq_len": 16, "query_fraction": 0.5}
    edge = accepted("fuzzy_recall", "full", num_pairs=4, num_keys=4, **one_token, **SMALL)
    assert scored(edge) > 0  # 4 distinct one-token keys out of 4: the redraws end
    assert "num_pairs (5) must be ≤ num_keys (4)" in refused(
        "fuzzy_recall", num_pairs=5, num_keys=4, key_len=1
    )
    text = refused("fuzzy_recall", num_pairs=4, **{**one_token, "query_fraction": 0.5625})
    assert "num_pairs (4) × (key_len + value_len) (2) must be ≤ the context" in text
    assert text.endswith("= 7")
    accepted("fuzzy_recall", "full", num_pairs=2, **{**one_token, "query_fraction": 0.125}, **SMALL)
    assert "= 1 must be ≥ 2" in refused("fuzzy_recall", **{**one_token, "query_fraction": 0.0625})
    assert "query_fraction (nan) must be finite" in refused("fuzzy_recall", query_fraction=math.nan)


def test_copying_compression_and_memorization_lengths():
    edge = accepted("selective_copying", "quick", num_data=64, **SMALL)
    assert scored(edge) == 4 * 64
    assert "2 × num_data (65) must be ≤ seq_len (128)" in refused("selective_copying", num_data=65)
    assert "vocab (0) must be ≥ 1" in refused("selective_copying", vocab=0)
    assert accepted("compression", "full", seq_len=3, **SMALL).y_test.shape == (4, 1)
    assert "seq_len (2) must be ≥ 3" in refused("compression", seq_len=2)
    assert scored(accepted("memorization", "full", seq_len=2, **SMALL)) == 4
    assert "seq_len (1) must be ≥ 2" in refused("memorization", seq_len=1)


def test_example_counts():
    accepted("memorization", "full", seq_len=8, train=1, val=1, test=1)
    TRACKS["recall"].check_options(options("recall", train=0))  # 0: steps x batch size
    assert "train (-1) must be ≥ 0" in refused("recall", train=-1)
    assert "test (0) must be ≥ 1" in refused("compression", test=0)


# ----------------------------------------------------------------------------- at resolve time


def run_settings(track: str, preset: str, **given) -> RunSettings:
    return RunSettings(
        tracks=(track,), mixers=("dense", "identity"), preset=preset, track_options={track: given}
    )


def test_every_rung_of_the_ladder_is_checked_and_named():
    registry = load_registry()
    resolve(run_settings("noisy_recall", "full", num_queries="64"), registry)
    with pytest.raises(UsageError, match=r"num_queries \(96\).*\(rung 3 of the full ladder\)$"):
        resolve(run_settings("noisy_recall", "full", num_queries="96"), registry)  # rungs 1, 2 fit
    with pytest.raises(UsageError) as caught:
        resolve(run_settings("recall", "quick", num_queries="121"), registry)
    assert "rung" not in str(caught.value)  # the quick preset has one rung


class Crashing(Track):
    """A plugin track whose check has a bug."""

    name = "crashing"
    budgets = {"quick": Budget(steps=1, batch_size=1, dim=4, depth=1, grid=lr_grid(0.1))}

    def check_options(self, options: dict) -> None:
        raise KeyError("lookback")


def test_a_check_that_crashes_is_the_plugin_s_error():
    registry = load_registry()
    registry.add(Crashing())
    with pytest.raises(PluginError, match="track crashing: check_options raised KeyError"):
        resolve(run_settings("crashing", "quick"), registry)
    assert Track().check_options({}) is None  # the default accepts everything

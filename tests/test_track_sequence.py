"""The forecasting tracks of seasonal series: the short default and the long-lookback variant."""

from __future__ import annotations

import numpy as np
import pytest

from benchsuite import UsageError
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.seeds import Streams
from benchsuite.settings import RunSettings
from benchsuite.specs import resolve_options
from benchsuite.tracks import sequence


def load(track: sequence.SequenceTrack, preset: str = "quick", **given):
    options = resolve_options(track.options, given, track.name)
    return track.load(Streams("test", track.name, 0), options, preset, None)


def test_short_and_long_lookback_windows():
    short = load(sequence.SequenceTrack())
    assert short.tokens == 16 and short.x_train.shape[1:] == (16, 4)
    assert short.y_train.shape[1:] == (8, 4)
    long = load(sequence.LongSequenceTrack(), preset="full", series=16)
    assert long.tokens == 256 and long.x_train.shape[1:] == (256, 4)
    assert long.y_train.shape[1:] == (32, 4) and "lookback 256" in long.description


def test_periods_follow_their_options():
    rng = np.random.default_rng(0)
    slow = sequence.generate_series(rng, 8, 512, 1, noise=0.0, periods=(100, 128))
    fast = sequence.generate_series(rng, 8, 512, 1, noise=0.0, periods=(8, 10))

    def sign_changes(series: np.ndarray) -> float:
        centred = series - series.mean(axis=1, keepdims=True)
        return float(np.mean(np.abs(np.diff(np.sign(centred), axis=1)) > 0))

    assert sign_changes(fast) > 5 * sign_changes(slow)


def test_a_window_longer_than_a_series_is_one_line_naming_the_options():
    too_long = r"lookback \(128\) \+ horizon \(8\) must be ≤ length \(128\)"
    with pytest.raises(UsageError, match=too_long):
        load(sequence.SequenceTrack(), lookback=128)
    with pytest.raises(UsageError, match=r"min_period \(40\) must be ≤ max_period \(32\)"):
        load(sequence.SequenceTrack(), min_period=40.0)


def test_the_long_variant_runs_in_the_full_preset_only():
    registry = load_registry()
    quick = resolve(RunSettings(mixers=("dense", "identity")), registry)
    assert "sequence_long" not in quick.tracks and "sequence" in quick.tracks
    full = resolve(RunSettings(mixers=("dense", "identity"), preset="full"), registry)
    assert "sequence_long" in full.tracks

"""A test set no tuning has seen: on every dataset with a fixed pool (digits, diabetes, a CSV,
CIFAR's test batch) one test partition, the same for every seed, never in any seed's training or
validation data (every seed tunes on its own validation split)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from data_files import write_cifar, write_csv

from benchsuite.seeds import Streams
from benchsuite.specs import resolve_options
from benchsuite.tracks import cifar, tabular, vision
from benchsuite.train.job import digest, identity_of_test_set

SEEDS = range(13)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHSUITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "scikit_learn_data"))
    monkeypatch.delenv("BENCHSUITE_DATA", raising=False)


def test_partition_fixes_the_test_rows_and_never_lets_a_seed_touch_them():
    first_test = None
    for seed in SEEDS:
        train, val, test = Streams("salt", "track", seed).partition(1000, val=0.2, test=0.2)
        assert len(test) == 200 and len(val) == 200 and len(train) == 600
        assert not (set(test) & set(train)) and not (set(test) & set(val))
        assert not (set(train) & set(val))
        first_test = test if first_test is None else first_test
        np.testing.assert_array_equal(test, first_test)
    other_track = Streams("salt", "other", 0).partition(1000, val=0.2, test=0.2)[2]
    assert not np.array_equal(other_track, first_test)  # fixed per track, not globally


def rows(array: np.ndarray) -> set[bytes]:
    """Each example's raw bytes (its identity within one seed's encoding)."""
    return {row.tobytes() for row in array.reshape(len(array), -1)}


def test_digits_test_images_are_in_no_seeds_training_or_validation_split(tmp_path):
    from sklearn.datasets import load_digits

    images = load_digits().images
    track = vision.VisionTrack()
    options = resolve_options(track.options, {}, "vision")
    tests, digests = [], set()
    for seed in SEEDS:
        streams = Streams("salt", "vision", seed)
        data = track.load(streams, options, "quick", str(tmp_path))
        train, val, test = streams.partition(len(images), val=0.2, test=0.2)
        np.testing.assert_array_equal(data.y_test, load_digits().target[test])  # these rows
        tests.append(test)
        assert not set(test) & (set(train) | set(val))
        digests.add(digest(*identity_of_test_set(data)))
    assert all(np.array_equal(t, tests[0]) for t in tests)
    assert len(digests) == 1  # report.json: test_set.fixed, although x_test is normalised per seed


def test_diabetes_and_csv_test_rows_are_fixed_and_never_trained_or_tuned_on(tmp_path):
    path = write_csv(tmp_path / "table.csv", rows=400)
    track = tabular.TabularTrack()
    for given in ({"dataset": "diabetes"}, {"csv": str(path), "target": "price"}):
        options = resolve_options(track.options, given, "tabular")
        seen_test: set[bytes] | None = None
        digests = set()
        for seed in SEEDS:
            data = track.load(Streams("salt", "tabular", seed), options, "quick", None)
            target = data.y_test * data.info["target_std"]  # unscaled up to the train mean
            test = rows(np.round(target - target.mean(), 3))  # same rows whatever the scaling
            seen_test = test if seen_test is None else seen_test
            assert test == seen_test
            # within one seed's encoding, no test row equals a training or validation row
            assert not rows(data.x_test) & (rows(data.x_train) | rows(data.x_val))
            digests.add(digest(*identity_of_test_set(data)))
        assert len(digests) == 1, given  # the records' test digest: one test set


def test_cifar_test_subset_is_the_same_for_every_seed(tmp_path):
    write_cifar(tmp_path)
    track = vision.VisionTrack()
    options = resolve_options(track.options, {"verify": False}, "vision")
    labels, digests = None, set()
    for seed in range(4):
        data = track.load(Streams("salt", "vision", seed), options, "quick", str(tmp_path))
        labels = data.y_test if labels is None else labels
        np.testing.assert_array_equal(data.y_test, labels)
        digests.add(digest(*identity_of_test_set(data)))
    assert len(digests) == 1
    assert (tmp_path / cifar.FOLDER).is_dir()


def test_a_truncated_test_set_is_a_random_subset_of_its_table(tmp_path):
    """fair is stored sorted by its target; the quick preset keeps 1000 test rows, and they must
    be a random sample of the table, not its first rows."""
    track = tabular.TabularTrack()
    options = resolve_options(track.options, {"dataset": "fair"}, "tabular")
    data = track.load(Streams("salt", "tabular", 0), options, "quick", None)
    assert len(data.y_test) == 1000
    assert abs(data.y_test.mean() - 0.3225) < 0.05  # 32% of the 6366 rows had an affair
    assert abs(data.y_train.mean() - 0.3225) < 0.05

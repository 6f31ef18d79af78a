"""The MAD tracks: every generator (shapes, determinism from the seed streams, read-outs after the
information they need), and every task trained for real at the quick budget: the no-mixing
control at chance, a built-in mixer far above it (memorization, MAD's capacity control, needs no
mixing: there the control is not at chance, by design)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.seeds import Streams
from benchsuite.settings import RunSettings
from benchsuite.specs import resolve_options
from benchsuite.tracks import mad, mad_tasks
from benchsuite.tracks.mad_tasks import IGNORE
from benchsuite.train.job import run_job

CHANCE = {
    "recall": 1 / 8,
    "fuzzy_recall": 1 / 8,
    "noisy_recall": 1 / 8,
    "compression": 1 / 16,
    "memorization": 1 / 16,
    "selective_copying": 1 / 4,
}


def track_at_quick_size(name: str) -> mad.MadTrack:
    """A MAD track whose quick preset is its generator's defaults (compression at 8 tokens), far
    smaller than the full ladder's (MAD-Lab's) rungs."""
    task, description = mad.TRACKS[name]
    small = {"seq_len": 8 if name == "compression" else 128}
    return mad.MadTrack(
        name,
        task,
        description,
        mad.QUICK.get(name, small),
        mad.LADDERS[name],
        metric=mad.SCORED_BY.get(name, mad.ACCURACY),
    )


@pytest.mark.parametrize("name", sorted(mad.TRACKS))
def test_generators_are_deterministic_from_the_seed_streams(name):
    track = track_at_quick_size(name)
    options = resolve_options(track.options, {}, name)
    first, again, other = (
        track.load(Streams("salt", name, seed), options, "quick", None) for seed in (0, 0, 1)
    )
    np.testing.assert_array_equal(first.x_test, again.x_test)
    assert not np.array_equal(first.x_train, other.x_train)
    vocab, classes = first.info["vocab"], first.info["classes"]
    for x, y in ((first.x_train, first.y_train), (first.x_test, first.y_test)):
        assert x.dtype == np.int64 and y.dtype == np.int64
        assert x.shape[1] == first.tokens and x.min() >= 0 and x.max() < vocab
        scored = y[y != IGNORE]
        assert len(scored) and scored.min() >= 0 and scored.max() < classes
    if track.metric.name == "accuracy":  # the majority class
        assert first.cap == pytest.approx(CHANCE[name], abs=0.06)
    else:  # the cross-entropy of the training targets' frequencies, about uniform here
        assert first.cap == pytest.approx(-np.log(CHANCE[name]), abs=0.05)


def test_recall_reads_out_after_each_pair_and_never_sees_its_answer():
    x, y = mad_tasks.make_in_context_recall(
        np.random.default_rng(0), 64, seq_len=128, num_pairs=8, num_keys=16, num_values=16
    )
    for row in range(len(x)):
        for t in np.nonzero(y[row] != IGNORE)[0]:
            key = x[row, t] - (1 + 16 + 16)  # a query id names its key
            [where] = np.nonzero(x[row, :t] == 1 + key)[0]
            assert x[row, where + 1] - (1 + 16) == y[row, t] and where + 1 < t
            assert 1 + 16 + y[row, t] not in x[row, t:]  # the answer is not after the query


def test_selective_copying_targets_are_the_data_tokens_in_order():
    x, y = mad_tasks.make_selective_copying(
        np.random.default_rng(0), 64, seq_len=128, num_data=8, vocab=8
    )
    for row in range(len(x)):
        data = np.nonzero((x[row] >= 1) & (x[row] <= 8))[0]
        scored = np.nonzero(y[row] != IGNORE)[0]
        assert (y[row, scored] == x[row, data] - 1).all() and scored.min() > data.max()


def test_compression_targets_are_the_sequence_itself():
    x, y = mad_tasks.make_compression(np.random.default_rng(0), 8, seq_len=16, vocab=16)
    assert y.shape == (8, 14) and (x[:, :-2] - 1 == y).all() and (x[:, -2] == 0).all()


@pytest.fixture(scope="module")
def registry():
    registry = load_registry()
    for name in mad.TRACKS:  # the quick size of every task, for this test only
        registry.tracks[name] = track_at_quick_size(name)
    return registry


def trained_metrics(registry, name: str, mixer: str, lr: float | tuple) -> dict[str, float]:
    """Test metrics of one seed trained at the quick budget with one learning rate (or the one
    of several chosen on validation)."""
    torch.set_num_threads(1)
    track = registry.tracks[name]
    other = "dense" if mixer == "identity" else "identity"  # resolve wants one comparison
    grid = {name: {"lr": lr if isinstance(lr, tuple) else (lr,)}}
    settings = resolve(
        RunSettings(tracks=(name,), mixers=(mixer, other), baseline=mixer, seeds=2, grids=grid),
        registry,
    )
    job = cell_jobs(settings, track, registry.mixers[mixer], grid_of(track, settings), "t")[1]
    return run_job(job, track, registry.mixers[mixer]).metrics.to_plain()


def accuracy(registry, name: str, mixer: str, lr: float) -> float:
    """Test accuracy of one seed trained at the quick budget with one learning rate."""
    return trained_metrics(registry, name, mixer, lr)["test.accuracy"]


@pytest.mark.parametrize(
    ("name", "solver", "lr"),
    [
        ("recall", "attention", 0.016),
        ("fuzzy_recall", "attention", 0.008),
        ("noisy_recall", "attention", 0.016),
        ("compression", "attention", 0.008),
    ],
)
def test_no_mixing_is_at_chance_and_a_mixer_is_far_above_it(registry, name, solver, lr):
    chance = CHANCE[name]
    assert accuracy(registry, name, "identity", lr) == pytest.approx(chance, abs=0.03)
    assert accuracy(registry, name, solver, lr) > 3 * chance


def test_selective_copying_at_the_quick_size_separates_dense_from_no_mixing(registry):
    """At the quick budget dense learns where the data tokens usually sit (a position prior), far
    from real copying but well clear of the control (0.44 against 0.25 over 13 seeds), and its
    cross-entropy, the track's metric, is well below the uniform log 4."""
    chance = CHANCE["selective_copying"]
    control = trained_metrics(registry, "selective_copying", "identity", 0.016)
    dense = trained_metrics(registry, "selective_copying", "dense", (0.016, 0.032))
    assert control["test.accuracy"] == pytest.approx(chance, abs=0.03)
    assert control["test.cross_entropy"] == pytest.approx(np.log(4), abs=0.02)
    assert dense["test.accuracy"] > chance + 0.1
    assert dense["test.cross_entropy"] < np.log(4) - 0.05


def test_memorization_needs_no_mixing(registry):
    """MAD's capacity control: the key is handed to its read-out by the tokenizer's shift."""
    identity = accuracy(registry, "memorization", "identity", 0.016)
    assert identity > 3 * CHANCE["memorization"]
    attention = accuracy(registry, "memorization", "attention", 0.016)
    assert attention == pytest.approx(identity, abs=0.1)

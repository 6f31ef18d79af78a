"""The dynamics track: integration (checked by conserved quantities), disk cache, metrics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from benchsuite.seeds import Streams
from benchsuite.specs import resolve_options
from benchsuite.tracks import dynamics

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHSUITE_CACHE", str(tmp_path))
    return tmp_path / "dynamics"


def load(seed: int = 0, **given):
    track = dynamics.DynamicsTrack()
    options = resolve_options(track.options, given, "dynamics")
    return track, options, track.load(Streams("test", "dynamics", seed), options, "quick", None)


def test_trajectories_are_cached_on_disk_and_read_back(_cache: Path) -> None:
    initial = np.array([[1.0, 1.0, 20.0], [-5.0, 3.0, 30.0]])
    first = dynamics.integrate("lorenz63", initial, 50)
    files = list(_cache.glob("lorenz63-*.npz"))
    assert len(files) == 1 and first.shape == (2, 50, 3)
    stamp = files[0].stat().st_mtime_ns
    np.testing.assert_array_equal(dynamics.integrate("lorenz63", initial, 50), first)
    assert files[0].stat().st_mtime_ns == stamp and list(_cache.iterdir()) == files
    np.savez(files[0], states=np.zeros_like(first))  # the cache, not a new integration, answers
    assert not dynamics.integrate("lorenz63", initial, 50).any()
    dynamics.integrate("lorenz63", initial + 1e-9, 50)  # other initial conditions: another file
    assert len(list(_cache.glob("lorenz63-*.npz"))) == 2


def test_lorenz_stays_on_its_attractor() -> None:
    rng = np.random.default_rng(0)
    states = dynamics.integrate("lorenz63", dynamics.SYSTEMS["lorenz63"].initial(rng, 4), 200)
    assert (
        np.abs(states[..., :2]).max() < 30 and 0 < states[..., 2].min() < states[..., 2].max() < 55
    )


def pendulum_energy(s: np.ndarray) -> np.ndarray:
    t1, t2, w1, w2 = np.moveaxis(s, -1, 0)
    kinetic = w1**2 + 0.5 * w2**2 + w1 * w2 * np.cos(t1 - t2)
    return kinetic - 9.81 * (2 * np.cos(t1) + np.cos(t2))


def lotka_volterra_invariant(s: np.ndarray) -> np.ndarray:
    prey, predator = np.moveaxis(s, -1, 0)
    return 0.075 * prey - 1.5 * np.log(prey) + 0.1 * predator - np.log(predator)


@pytest.mark.parametrize(
    ("system", "invariant"),
    [("double_pendulum", pendulum_energy), ("lotka_volterra", lotka_volterra_invariant)],
)
def test_integration_conserves_the_invariant(system: str, invariant) -> None:
    rng = np.random.default_rng(1)
    states = dynamics.integrate(system, dynamics.SYSTEMS[system].initial(rng, 3), 400)
    values = invariant(states)
    drift = np.abs(values - values[:, :1]).max()
    assert drift < 1e-5 * np.abs(values).max()
    assert np.ptp(states[:, :, 0], axis=1).min() > 0.5  # and the system really moves


def test_load_shapes_splits_and_seeds() -> None:
    track, _, data = load()
    assert data.tokens == 16 and data.x_train.shape[1:] == (16, 1)
    assert data.y_train.shape[1:] == (24, 1) and data.x_train.dtype == np.float32
    # 24 steps of dt 0.1 reach past two Lyapunov times of Lorenz-63
    assert 24 * data.info["dt"] * data.info["lyapunov"] > 2
    assert "lorenz63 (observed: x only" in data.description
    assert data.cap == pytest.approx(1.0, abs=0.5)
    assert track.metric.name == "nmse" and not track.metric.higher_is_better
    _, _, again = load()
    np.testing.assert_array_equal(again.x_test, data.x_test)
    _, _, other = load(seed=1)
    assert not np.array_equal(other.x_test[:10], data.x_test[:10])
    _, _, full = load(observe="full")
    assert full.x_train.shape[2] == 3 and "x, y, z" in full.description
    _, _, pendulum = load(system="double_pendulum")
    assert pendulum.x_train.shape[2] == 4


def test_metrics() -> None:
    rng = np.random.default_rng(0)
    actual = rng.normal(size=(50, 8, 2))
    assert dynamics.normalised_mse(actual, actual) == 0.0
    assert dynamics.normalised_mse(np.zeros_like(actual), actual) == pytest.approx(
        float(np.mean(actual.mean(axis=(0, 1)) ** 2 / actual.var(axis=(0, 1)) + 1))
    )
    predicted = actual.copy()
    predicted[:, 3:] += 10.0  # wrong from step 3 on
    np.testing.assert_array_equal(dynamics.valid_steps(predicted, actual, 0.5), 3.0)
    np.testing.assert_array_equal(dynamics.valid_steps(actual, actual, 0.5), 8.0)


def test_tokenizer_head_loss_and_evaluate() -> None:
    track, options, data = load()
    model = nn.Sequential(
        track.tokenizer(data, 8, options), nn.Identity(), track.head(data, 8, options)
    )
    x, y = torch.from_numpy(data.x_train[:16]), torch.from_numpy(data.y_train[:16])
    assert model[0](x).shape == (16, 16, 8)
    track.loss(model(x), y).backward()
    assert all(p.grad is not None for p in model.parameters())
    metrics = track.evaluate(model(x).detach(), y, data)
    assert set(metrics) == {
        "nmse",
        "nmse_first_lyapunov_time",
        "vpt_steps",
        "vpt_time",
        "vpt_lyapunov_times",
    }
    assert metrics["nmse"] > 0 and 0 <= metrics["vpt_steps"] <= 24
    # the training loss weights step h by exp(-lambda h dt), weights of mean 1
    criterion = track.criterion(data, options)
    prediction = torch.zeros_like(y)
    error = torch.zeros_like(y)
    error[:, 0] = 1.0  # an error on the first step only weighs more than on the last
    late = torch.zeros_like(y)
    late[:, -1] = 1.0
    assert criterion(prediction + error, y * 0) > criterion(prediction + late, y * 0)
    flat = torch.ones_like(y)
    assert float(criterion(flat, y * 0)) == pytest.approx(1.0, rel=1e-5)


def test_registers_through_the_hook() -> None:
    registered: list = []
    dynamics.benchsuite_register_tracks(register=registered.append)
    assert [type(t) for t in registered] == [dynamics.DynamicsTrack]

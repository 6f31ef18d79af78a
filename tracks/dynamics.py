"""``dynamics``: multi-step forecasting of chaotic and oscillating dynamical systems.

Trajectories of Lorenz-63, a double pendulum or Lotka–Volterra (option ``system``) are integrated
with ``scipy.integrate.solve_ivp`` from initial conditions drawn from the seed's data stream and
cached on disk (``cache_dir()/dynamics/*.npz``, keyed by every integration parameter and the initial
conditions). Trajectories, not windows, are split between train / validation / test. A window's
``context`` time steps are the tokens; the task is to forecast the next ``horizon`` steps.

By default only part of the state is observed and the head reads only the last token, so a model
must reconstruct the state from the context window, and that is the token mixer's job.

The quick preset forecasts Lorenz-63 24 steps of dt 0.1 ahead (2.2 Lyapunov times, so the valid
prediction time can tell models apart), weights each forecast step by exp(-lambda t) (lambda the
system's largest Lyapunov exponent: the error a perfect model makes grows as exp(lambda t)) and
clips gradients, which made the baseline's error vary x1.14 between seeds instead of x10.
docs/tracks.md gives the measurements behind these choices.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from benchsuite import (
    Budget,
    ForecastTrack,
    Metric,
    Option,
    TrackData,
    UsageError,
    hookimpl,
    lr_grid,
)
from benchsuite.paths import cache_dir

if TYPE_CHECKING:
    from pathlib import Path

    from torch import Tensor

    from benchsuite.seeds import Streams

QUICK_GRID = lr_grid(0.00464, 0.01, 0.0215, 0.0464, 0.1)
FULL_GRID = lr_grid(1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
RTOL, ATOL = 1e-8, 1e-8
FRACTIONS = (0.6, 0.2)  # train, val trajectories; the rest is test


@dataclass(frozen=True)
class Size:
    """How much data a preset generates and the shape of its windows."""

    trajectories: int
    steps: int  # samples per trajectory
    context: int  # tokens
    horizon: int
    stride: int


SIZES = {
    "quick": Size(trajectories=32, steps=256, context=16, horizon=24, stride=4),
    "full": Size(trajectories=256, steps=1024, context=64, horizon=32, stride=4),
}


def lorenz63(_t: float, state: np.ndarray) -> np.ndarray:
    """Lorenz-63 (sigma 10, rho 28, beta 8/3) on (3·n,) stacked states."""
    x, y, z = state.reshape(-1, 3).T
    return np.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z], axis=1).ravel()


def double_pendulum(_t: float, state: np.ndarray) -> np.ndarray:
    """Double pendulum (unit masses and lengths, g 9.81): state (theta1, theta2, omega1, omega2)."""
    t1, t2, w1, w2 = state.reshape(-1, 4).T
    g, delta = 9.81, t2 - t1
    den = 2.0 - np.cos(delta) ** 2
    a1 = (
        w1**2 * np.sin(delta) * np.cos(delta)
        + g * np.sin(t2) * np.cos(delta)
        + w2**2 * np.sin(delta)
        - 2.0 * g * np.sin(t1)
    ) / den
    a2 = (
        -(w2**2) * np.sin(delta) * np.cos(delta)
        + 2.0 * (g * np.sin(t1) * np.cos(delta) - w1**2 * np.sin(delta) - g * np.sin(t2))
    ) / den
    return np.stack([w1, w2, a1, a2], axis=1).ravel()


def lotka_volterra(_t: float, state: np.ndarray) -> np.ndarray:
    """Lotka–Volterra predator-prey (alpha 1, beta 0.1, delta 0.075, gamma 1.5)."""
    prey, predator = state.reshape(-1, 2).T
    return np.stack(
        [prey * (1.0 - 0.1 * predator), predator * (0.075 * prey - 1.5)], axis=1
    ).ravel()


def pendulum_observation(states: np.ndarray, full: bool) -> np.ndarray:
    """(..., 4) angles and velocities -> Cartesian positions of both bobs (+ velocities if full)."""
    t1, t2 = states[..., 0], states[..., 1]
    x1, y1 = np.sin(t1), -np.cos(t1)
    positions = [x1, y1, x1 + np.sin(t2), y1 - np.cos(t2)]
    return np.stack(positions + ([states[..., 2], states[..., 3]] if full else []), axis=-1)


@dataclass(frozen=True)
class System:
    """A dynamical system: its vector field, sampling, initial conditions and observations."""

    rhs: Callable[[float, np.ndarray], np.ndarray]
    dimension: int
    dt: float
    burn_in: float  # integrated time discarded before sampling (to reach the attractor)
    initial: Callable[[np.random.Generator, int], np.ndarray]
    observe: Callable[[np.ndarray, bool], np.ndarray]  # (states, full) -> observations
    observed: dict[str, str]  # what each ``observe`` option shows
    lyapunov: float  # largest Lyapunov exponent (0: not chaotic)


SYSTEMS = {
    "lorenz63": System(
        lorenz63,
        3,
        dt=0.1,
        burn_in=10.0,
        initial=lambda rng, n: rng.uniform([-15, -20, 5], [15, 20, 40], size=(n, 3)),
        observe=lambda s, full: s if full else s[..., :1],
        observed={"partial": "x only", "full": "x, y, z"},
        lyapunov=0.906,
    ),
    "double_pendulum": System(
        double_pendulum,
        4,
        dt=0.05,
        burn_in=0.0,
        initial=lambda rng, n: np.concatenate(
            [
                rng.uniform(0.5, 1.0, size=(n, 2)) * np.pi * rng.choice([-1, 1], size=(n, 2)),
                np.zeros((n, 2)),
            ],
            axis=1,
        ),
        observe=pendulum_observation,
        observed={"partial": "positions of both bobs", "full": "positions and angular velocities"},
        lyapunov=1.5,
    ),
    "lotka_volterra": System(
        lotka_volterra,
        2,
        dt=0.1,
        burn_in=0.0,
        initial=lambda rng, n: rng.uniform([5, 2], [35, 20], size=(n, 2)),
        observe=lambda s, full: s if full else s[..., :1],
        observed={"partial": "prey only", "full": "prey, predator"},
        lyapunov=0.0,
    ),
}


def integrate(system_name: str, initial: np.ndarray, steps: int) -> np.ndarray:
    """States (n, steps, dimension) sampled every ``dt`` after the burn-in; cached on disk."""
    system = SYSTEMS[system_name]
    path = _cache_path(system_name, initial, steps)
    if path.is_file():
        with np.load(path) as cached:
            return cached["states"]
    from scipy.integrate import solve_ivp

    times = system.burn_in + system.dt * np.arange(steps)
    solution = solve_ivp(
        system.rhs,
        (0.0, times[-1]),
        initial.ravel(),
        method="DOP853",
        t_eval=times,
        rtol=RTOL,
        atol=ATOL,
    )
    if not solution.success:
        raise RuntimeError(f"{system_name}: solve_ivp failed: {solution.message}")
    states = solution.y.reshape(len(initial), system.dimension, steps).transpose(0, 2, 1)
    _save_atomically(path, states)
    return states


def _cache_path(system_name: str, initial: np.ndarray, steps: int) -> Path:
    system = SYSTEMS[system_name]
    parameters = json.dumps(
        [system_name, system.dt, system.burn_in, steps, RTOL, ATOL, "DOP853", initial.shape]
    )
    digest = hashlib.sha256(parameters.encode() + initial.astype(np.float64).tobytes())
    return cache_dir() / "dynamics" / f"{system_name}-{digest.hexdigest()[:20]}.npz"


def _save_atomically(path: Path, states: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(handle, "wb") as file:
        np.savez(file, states=states)
    os.replace(temporary, path)


def _windows(series: np.ndarray, size: Size) -> tuple[np.ndarray, np.ndarray]:
    """(context, horizon) windows cut from (n, steps, channels) series every ``stride`` steps."""
    span = size.context + size.horizon
    starts = range(0, series.shape[1] - span + 1, size.stride)
    cut = np.stack([series[:, s : s + span] for s in starts], axis=1)
    cut = cut.reshape(-1, span, series.shape[2])
    return cut[:, : size.context], cut[:, size.context :]


class DynamicsTrack(ForecastTrack):
    """Forecasting dynamical systems; normalised MSE (lower is better) and valid prediction time."""

    name = "dynamics"
    description = "multi-step forecasting of Lorenz-63, double pendulum or Lotka–Volterra"
    metric = Metric("nmse", higher_is_better=False, ideal=0.0, positive=True)
    # median sd of paired log-ratios against dense, measured on the quick preset with 6 seeds of
    # attention, mamba, mlp, longconv (2026-12-04): 0.0745 under the plateau schedule, 0.0673
    # under the cosine at most 1,000 steps (0.048 at 13 seeds under the old fixed 150 steps)
    planning_sd = 0.075
    options = (
        Option("system", str, "lorenz63", "the dynamical system", choices=tuple(SYSTEMS)),
        Option(
            "observe",
            str,
            "partial",
            "partial: part of the state (Lorenz x, pendulum positions, prey), so it must be "
            "reconstructed from the context; full: the whole state",
            choices=("partial", "full"),
        ),
        Option(
            "vpt_threshold",
            float,
            0.5,
            "normalised RMS error at which a forecast stops being valid (valid prediction time)",
        ),
    )
    budgets = {
        # the plateau schedule (docs/protocol.md, "The learning-rate schedule"): under the
        # cosine the most steps bound every mixer's training here, never the rule
        "quick": Budget(
            steps=4000,
            batch_size=32,
            dim=16,
            mlp_ratio=5,
            depth=2,
            grid=QUICK_GRID,
            clip=1.0,
            eval_every=25,
            patience=4,
            min_steps=200,
            checkpoint="best",
            schedule="plateau",
            warmup_steps=50,
            # each seed's grid halved three times, to one config (docs/protocol.md, "Pruning the
            # grid"): 0.629x the track's job-seconds, regret median +0.04% (benchmarks/halving.py)
            halve_at=(300, 600, 1200),
        ),
        "full": Budget(steps=5000, batch_size=128, dim=128, depth=4, grid=FULL_GRID, clip=1.0),
    }

    def check_options(self, options: dict) -> None:
        """A valid prediction time needs a positive, finite error threshold (the context and
        horizon are the preset's, see ``SIZES``, so no option can outgrow a trajectory)."""
        threshold = options["vpt_threshold"]
        if not 0 < threshold < math.inf:
            raise UsageError(
                f"track {self.name}: vpt_threshold ({threshold:g}) must be > 0 and finite "
                "(≤ 0 makes every forecast step invalid, infinity every one valid)"
            )

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        self.budget(preset)  # an unknown preset is a usage error
        size = SIZES[preset]
        name = options["system"]
        system = SYSTEMS[name]
        initial = system.initial(streams.rng("data"), size.trajectories)
        series = system.observe(integrate(name, initial, size.steps), options["observe"] == "full")
        order = streams.rng("split").permutation(size.trajectories)
        n_train = int(FRACTIONS[0] * size.trajectories)
        n_val = int(FRACTIONS[1] * size.trajectories)
        parts = np.split(order, [n_train, n_train + n_val])
        mean = series[parts[0]].mean(axis=(0, 1))
        std = series[parts[0]].std(axis=(0, 1)) + 1e-8
        scaled = ((series - mean) / std).astype(np.float32)
        (x_train, y_train), (x_val, y_val), (x_test, y_test) = (
            _windows(scaled[p], size) for p in parts
        )
        channels = series.shape[2]
        return TrackData(
            x_train,
            y_train,
            x_val,
            y_val,
            x_test,
            y_test,
            tokens=size.context,
            description=(
                f"dynamics: {name} (observed: {system.observed[options['observe']]}; "
                f"dt {system.dt}), {size.trajectories} trajectories of {size.steps} steps "
                "integrated with solve_ivp; "
                f"context {size.context} -> horizon {size.horizon}, "
                f"{len(x_train)}/{len(x_val)}/{len(x_test)} train/val/test windows"
            ),
            info={
                "channels": channels,
                "horizon": size.horizon,
                "vpt_threshold": options["vpt_threshold"],
                "dt": system.dt,
                "lyapunov": system.lyapunov,
            },
            cap=normalised_mse(np.zeros_like(y_test), y_test),  # predicting the training mean
            identity=f"{_cache_path(name, initial, size.steps).stem} (solve_ivp DOP853)",
            val_cap=normalised_mse(np.zeros_like(y_val), y_val),
        )

    def criterion(self, data: TrackData, options: dict) -> Callable[[Tensor, Tensor], Tensor]:
        """MSE with forecast step h weighted by exp(-lambda h dt) (weights of mean 1): a perfect
        model's error grows as exp(lambda t), so the weights keep the far steps from dominating."""
        import torch

        steps = np.arange(1, data.info["horizon"] + 1)
        weights = np.exp(-data.info["lyapunov"] * data.info["dt"] * steps)
        table = torch.tensor(weights / weights.mean(), dtype=torch.float32)[:, None]
        on_device: dict[torch.device, Tensor] = {}  # the table copied once per device, not per step

        def weighted_mse(prediction: Tensor, target: Tensor) -> Tensor:
            if target.device not in on_device:
                on_device[target.device] = table.to(target.device)
            return (on_device[target.device] * (prediction - target) ** 2).mean()

        return weighted_mse

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        predicted = prediction.detach().float().cpu().numpy()
        actual = target.detach().float().cpu().numpy()
        dt, lyapunov = data.info["dt"], data.info["lyapunov"]
        steps = valid_steps(predicted, actual, data.info["vpt_threshold"])
        first = max(1, min(actual.shape[1], round(1 / (lyapunov * dt)))) if lyapunov else 1
        return {
            "nmse": normalised_mse(predicted, actual),
            "nmse_first_lyapunov_time": normalised_mse(predicted[:, :first], actual[:, :first]),
            "vpt_steps": float(steps.mean()),
            "vpt_time": float(steps.mean() * dt),
            "vpt_lyapunov_times": float(steps.mean() * dt * lyapunov),
        }


def normalised_mse(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Mean over channels of MSE / variance of the target channel; arrays (N, horizon, channels)."""
    variance = actual.var(axis=(0, 1))
    return float((((predicted - actual) ** 2).mean(axis=(0, 1)) / variance).mean())


def valid_steps(predicted: np.ndarray, actual: np.ndarray, threshold: float) -> np.ndarray:
    """Per window, the steps before the normalised RMS error first exceeds ``threshold``."""
    variance = actual.var(axis=(0, 1))
    error = np.sqrt((((predicted - actual) ** 2) / variance).mean(axis=2))  # (N, horizon)
    exceeded = error > threshold
    return np.where(exceeded.any(axis=1), exceeded.argmax(axis=1), error.shape[1]).astype(float)


@hookimpl
def benchsuite_register_tracks(register) -> None:
    register(DynamicsTrack())

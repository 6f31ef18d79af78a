"""``sequence``: multi-step forecasting of generated multi-channel seasonal series.

Each series has its own random frequencies, phases, trend and noise, so a model must read the
periodic structure from its lookback window: that is where token mixing matters. Series are split
between train / validation / test (no window of a test series is ever trained on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from benchsuite import Budget, ForecastTrack, Metric, Option, TrackData, hookimpl, lr_grid

if TYPE_CHECKING:
    from torch import Tensor

    from benchsuite.seeds import Streams

GRID = lr_grid(3e-3, 1e-2, 3e-2, 1e-1, 3e-1)


def generate_series(
    rng: np.random.Generator, n_series: int, length: int, channels: int, noise: float
) -> np.ndarray:
    """Series of shape (n_series, length, channels): two sinusoids + linear trend + noise.

    Periods lie between 8 and 32 steps, so a 16-step lookback holds half to two periods: a model
    must infer each series' frequencies from its context window.
    """
    t = np.arange(length, dtype=np.float64)[None, :, None, None]
    shape = (n_series, 1, channels, 2)
    freq = rng.uniform(1 / 32, 1 / 8, size=shape)
    phase = rng.uniform(0, 2 * np.pi, size=shape)
    amp = rng.uniform(0.3, 1.0, size=shape)
    seasonal = (amp * np.sin(2 * np.pi * freq * t + phase)).sum(axis=-1)
    trend = rng.normal(0, 0.5 / length, size=(n_series, 1, channels)) * t[..., 0]
    series = seasonal + trend + noise * rng.standard_normal(seasonal.shape)
    return series.astype(np.float32)


def windows(series: np.ndarray, lookback: int, horizon: int, stride: int) -> tuple[np.ndarray, ...]:
    """Cut (lookback -> horizon) windows from every series."""
    span = lookback + horizon
    starts = range(0, series.shape[1] - span + 1, stride)
    cut = np.stack([series[:, s : s + span] for s in starts], axis=1)  # (n, w, span, c)
    cut = cut.reshape(-1, span, series.shape[2])
    return cut[:, :lookback], cut[:, lookback:]


class SequenceTrack(ForecastTrack):
    """Forecasting on synthetic seasonal series; MSE on standardised values (lower is better)."""

    name = "sequence"
    description = "multi-step forecasting of synthetic multi-channel seasonal series"
    metric = Metric("mse", higher_is_better=False, ideal=0.0, positive=True)
    options = (
        Option("lookback", int, 16, "input window length (= token count)"),
        Option("horizon", int, 8, "steps to forecast"),
        Option("channels", int, 4, "channels per series"),
        Option("series", int, 96, "number of generated series (split 70/15/15 by series)"),
        Option("length", int, 128, "length of each series"),
        Option("noise", float, 0.1, "standard deviation of the additive noise"),
    )
    budgets = {
        "quick": Budget(steps=200, batch_size=32, dim=32, depth=2, grid=GRID),
        "full": Budget(steps=4000, batch_size=128, dim=128, depth=4, grid=GRID),
    }

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        lookback, horizon = options["lookback"], options["horizon"]
        series = generate_series(
            streams.rng("data"),
            options["series"],
            options["length"],
            options["channels"],
            options["noise"],
        )
        order = streams.rng("split").permutation(len(series))
        n_train, n_val = int(0.7 * len(series)), int(0.15 * len(series))
        parts = np.split(order, [n_train, n_train + n_val])
        (xtr, ytr), (xva, yva), (xte, yte) = (
            windows(series[idx], lookback, horizon, stride=4) for idx in parts
        )
        mean, std = xtr.mean(axis=(0, 1)), xtr.std(axis=(0, 1)) + 1e-8
        xtr, xva, xte, ytr, yva, yte = ((a - mean) / std for a in (xtr, xva, xte, ytr, yva, yte))
        cap = float(np.mean(yte**2))  # predicting the training mean (0 after scaling)
        return TrackData(
            xtr, ytr, xva, yva, xte, yte,
            tokens=lookback,
            description=(
                f"synthetic seasonal, {options['channels']} channels, lookback {lookback}, "
                f"horizon {horizon}, {options['series']} series"
            ),
            info={"channels": options["channels"], "horizon": horizon},
            cap=cap,
            identity="generated",
        )  # fmt: skip

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        error = (prediction - target) ** 2
        return {"mse": float(error.mean()), "mse_last_step": float(error[:, -1].mean())}


@hookimpl
def benchsuite_register_tracks(register) -> None:
    register(SequenceTrack())

"""``sequence`` and ``sequence_long``: multi-step forecasting of generated multi-channel seasonal
series.

Each series has its own random frequencies, phases, trend and noise, so a model must read the
periodic structure from its lookback window: that is where token mixing matters. Series are split
between train / validation / test (no window of a test series is ever trained on).
``sequence_long`` is the long-lookback variant (``--preset full``): 256 tokens of noisier series
with periods up to 128 steps, so a forecast improves by reading several periods far back.
"""

from __future__ import annotations

import math
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

if TYPE_CHECKING:
    from torch import Tensor

    from benchsuite.seeds import Streams

QUICK_GRID = lr_grid(0.01, 0.0215, 0.0464, 0.1, 0.215)
FULL_GRID = lr_grid(3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
MIN_SERIES = 7  # the fewest series whose 70/15/15 split (rounded down) leaves each split one


def generate_series(
    rng: np.random.Generator,
    n_series: int,
    length: int,
    channels: int,
    noise: float,
    periods: tuple[float, float] = (8, 32),
) -> np.ndarray:
    """Series of shape (n_series, length, channels): two sinusoids + linear trend + noise.

    Periods lie between ``periods`` steps (8 to 32 by default, so a 16-step lookback holds half
    to two periods): a model must infer each series' frequencies from its context window.
    """
    t = np.arange(length, dtype=np.float64)[None, :, None, None]
    shape = (n_series, 1, channels, 2)
    freq = rng.uniform(1 / periods[1], 1 / periods[0], size=shape)
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


def _options(
    lookback: int,
    horizon: int,
    series: int,
    length: int,
    noise: float,
    periods: tuple[float, float],
) -> tuple[Option, ...]:
    return (
        Option("lookback", int, lookback, "input window length (= token count)"),
        Option("horizon", int, horizon, "steps to forecast"),
        Option("channels", int, 4, "channels per series"),
        Option("series", int, series, "number of generated series (split 70/15/15 by series)"),
        Option("length", int, length, "length of each series"),
        Option("noise", float, noise, "standard deviation of the additive noise"),
        Option("min_period", float, float(periods[0]), "shortest seasonal period, in steps"),
        Option("max_period", float, float(periods[1]), "longest seasonal period, in steps"),
    )


class SequenceTrack(ForecastTrack):
    """Forecasting on synthetic seasonal series; MSE on standardised values (lower is better)."""

    name = "sequence"
    description = "multi-step forecasting of synthetic multi-channel seasonal series"
    metric = Metric("mse", higher_is_better=False, ideal=0.0, positive=True)
    planning_sd = 0.03  # median sd of paired log-ratios, measured (quick, 13 seeds): 0.029
    options = _options(lookback=16, horizon=8, series=96, length=128, noise=0.1, periods=(8, 32))
    budgets = {
        "quick": Budget(
            steps=1000,
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
            # each seed's grid halved (docs/protocol.md, "Pruning the grid"): 0.744x the track's
            # job-seconds, regret median +0.37% (python benchmarks/halving.py, 2026-12-04)
            halve_at=(200, 400),
        ),
        "full": Budget(steps=4000, batch_size=128, dim=128, depth=4, grid=FULL_GRID, clip=1.0),
    }

    def check_options(self, options: dict) -> None:
        """A series holds one window, every split gets a series, periods are ordered and positive,
        and the noise is a number."""
        self.check_at_least(options, {"lookback": 1, "horizon": 1, "channels": 1})
        span = options["lookback"] + options["horizon"]
        if span > options["length"]:
            raise UsageError(
                f"track {self.name}: lookback ({options['lookback']}) + horizon "
                f"({options['horizon']}) must be ≤ length ({options['length']})"
            )
        if options["series"] < MIN_SERIES:
            raise UsageError(
                f"track {self.name}: series ({options['series']}) must be ≥ {MIN_SERIES}, so that "
                "the 70/15/15 split gives every split a series"
            )
        low, high = options["min_period"], options["max_period"]
        if not low > 0:
            raise UsageError(f"track {self.name}: min_period ({low:g}) must be > 0")
        if not low <= high:
            raise UsageError(
                f"track {self.name}: min_period ({low:g}) must be ≤ max_period ({high:g})"
            )
        if not math.isfinite(options["noise"]):
            raise UsageError(f"track {self.name}: noise ({options['noise']:g}) must be finite")

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        lookback, horizon = options["lookback"], options["horizon"]
        self.check_options(options)
        series = generate_series(
            streams.rng("data"),
            options["series"],
            options["length"],
            options["channels"],
            options["noise"],
            (options["min_period"], options["max_period"]),
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
            xtr,
            ytr,
            xva,
            yva,
            xte,
            yte,
            tokens=lookback,
            description=(
                f"synthetic seasonal, {options['channels']} channels, lookback {lookback}, "
                f"horizon {horizon}, {options['series']} series"
            ),
            info={"channels": options["channels"], "horizon": horizon},
            cap=cap,
            identity="generated",
            val_cap=float(np.mean(yva**2)),
        )

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        error = (prediction - target) ** 2
        return {"mse": float(error.mean()), "mse_last_step": float(error[:, -1].mean())}


class LongSequenceTrack(SequenceTrack):
    """The long-lookback variant: 256 tokens, periods of 32 to 128 steps, noisier series."""

    name = "sequence_long"
    description = "long-lookback forecasting (256 tokens) of noisy seasonal series"
    options = _options(
        lookback=256, horizon=32, series=64, length=768, noise=0.5, periods=(32, 128)
    )
    budgets = {
        "full": Budget(steps=2000, batch_size=32, dim=64, depth=2, grid=FULL_GRID, clip=1.0),
    }


@hookimpl
def benchsuite_register_tracks(register) -> None:
    register(SequenceTrack())
    register(LongSequenceTrack())

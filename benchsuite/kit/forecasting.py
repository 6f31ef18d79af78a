"""A base for forecasting tracks: time steps as tokens, the forecast read from the last token.

A subclass sets ``info["channels"]`` and ``info["horizon"]`` in the data it loads; the targets are
(batch, horizon, channels). Reading only the last token makes the token mixer the sole path across
time (a head over all tokens would mix time itself and hide what the mixer does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite.specs import Track, TrackData

if TYPE_CHECKING:
    from torch import Tensor, nn


class ForecastTrack(Track):
    """Tokenizer, head and MSE loss shared by the ``sequence`` and ``dynamics`` tracks."""

    def tokenizer(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        from benchsuite.kit.layers import embed_tokens

        return embed_tokens(data.info["channels"], data.tokens, dim)

    def head(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        """The whole forecast from the last token: mixing is the only path across time."""
        from torch import nn

        from benchsuite.kit.layers import LastToken

        horizon, channels = data.info["horizon"], data.info["channels"]
        return nn.Sequential(
            LastToken(), nn.Linear(dim, horizon * channels), nn.Unflatten(1, (horizon, channels))
        )

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        from torch.nn import functional

        return functional.mse_loss(prediction, target)

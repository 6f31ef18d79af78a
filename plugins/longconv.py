"""``longconv``: a Hyena-style gated long convolution over tokens (order 2, FFT convolution).

y = out(q * (h * (k * v)) + bias * k * v), with q, k, v linear projections of x and h a per-feature
filter as long as the sequence: *implicit* (a small sine-activated MLP of the lag, times an
exponential decay window, as in Hyena) or *explicit* (one free weight per lag and feature). Causal
by default (lags >= 0); ``causal=false`` uses a two-sided filter (lags -(T-1) .. T-1).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(
    tokens: int, dim: int, filter: str = "implicit", causal: bool = True, order: int = 16
) -> nn.Module:
    """Gated long convolution; ``order`` is the width of the implicit filter's MLP."""
    import torch
    from torch import nn

    lags = torch.arange(0 if causal else 1 - tokens, tokens, dtype=torch.float32)

    class ImplicitFilter(nn.Module):
        """h[lag, d] = MLP(positional features of lag)[d] * exp(-rate[d] * |lag| / T)."""

        def __init__(self) -> None:
            super().__init__()
            frequencies = torch.arange(1, 5, dtype=torch.float32)
            angle = 2 * math.pi * lags[:, None] / tokens * frequencies
            features = torch.cat([lags[:, None] / tokens, angle.sin(), angle.cos()], dim=1)
            self.register_buffer("features", features)
            rates = torch.linspace(math.log(100) / 0.3, math.log(100) / 1.5, dim)
            self.register_buffer("window", torch.exp(-lags.abs()[:, None] / tokens * rates))
            self.first, self.second = nn.Linear(features.shape[1], order), nn.Linear(order, dim)

        def forward(self) -> torch.Tensor:
            return self.second(torch.sin(self.first(self.features))) * self.window

    class ExplicitFilter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(len(lags), dim) / len(lags) ** 0.5)

        def forward(self) -> torch.Tensor:
            return self.weight

    filters = {"implicit": ImplicitFilter, "explicit": ExplicitFilter}
    if filter not in filters:
        raise ValueError(f"mixer longconv: filter must be implicit or explicit (got {filter!r})")

    class LongConv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.project = nn.Linear(dim, 3 * dim)
            self.filter = filters[filter]()
            self.bias = nn.Parameter(torch.randn(dim))
            self.out = nn.Linear(dim, dim)

        def convolve(self, u: torch.Tensor) -> torch.Tensor:
            """y[t] = sum over lags of h[lag] * u[t - lag], by FFT, for u of shape (B, T, D)."""
            h, size = self.filter(), 2 * len(lags)
            full = torch.fft.irfft(
                torch.fft.rfft(u, n=size, dim=1) * torch.fft.rfft(h, n=size, dim=0), n=size, dim=1
            )
            start = int(-lags[0])  # full[m] holds lag index m - start
            return full[:, start : start + tokens].to(u.dtype)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.project(x).chunk(3, dim=-1)
            u = k * v
            return self.out(q * (self.convolve(u) + self.bias * u))

    return LongConv()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="longconv",
            build=build,
            description="Hyena-style gated long convolution over tokens via FFT",
            options=(
                Option(
                    "filter", str, "implicit", "filter parameterisation", ("implicit", "explicit")
                ),
                Option("causal", bool, True, "lags >= 0 only (false: a two-sided filter)"),
                Option("order", int, 16, "hidden width of the implicit filter MLP"),
            ),
            size_option="order",
            fixed_tokens=True,
            causal=True,
        )
    )

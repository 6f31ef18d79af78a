"""``pooling``: PoolFormer's token mixer, average pooling over neighbouring tokens minus the input.

The subtraction makes the branch a pure "difference to the local mean" (the residual adds x back).
Padding is not counted in the average, so every row of the pooling matrix sums to 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, pool_size: int = 3) -> nn.Module:
    """A module y = avgpool_k(x) - x along tokens (window k centred on each token, stride 1)."""
    import torch
    from torch import nn

    if pool_size < 1 or pool_size % 2 == 0:
        raise ValueError(f"mixer pooling: pool_size must be odd and >= 1 (got {pool_size})")

    class Pooling(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pool = nn.AvgPool1d(pool_size, 1, pool_size // 2, count_include_pad=False)

        def token_matrix(self, x: torch.Tensor) -> torch.Tensor:
            size = x.shape[1]
            eye = torch.eye(size, dtype=x.dtype, device=x.device)
            return self(eye.unsqueeze(0)).expand(x.shape[0], size, size)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.pool(x.transpose(1, 2)).transpose(1, 2) - x

    return Pooling()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="pooling",
            build=build,
            description="average pooling over neighbouring tokens minus identity (PoolFormer)",
            options=(Option("pool_size", int, 3, "odd window length in tokens"),),
            fixed_tokens=False,
            causal=False,
        )
    )

"""``monarch``: a Monarch token matrix M = P^T L P R with L, R block-diagonal (Dao et al., 2022).

The T tokens are viewed as a b1 x b2 grid (T = b1 * b2, b1 the largest factor <= sqrt(T)); R mixes
within each of the b1 rows (b1 blocks of b2 x b2), P transposes the grid, L mixes within each of
the b2 columns (b2 blocks of b1 x b1). T * (b1 + b2) parameters instead of T**2.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def factors(tokens: int) -> tuple[int, int] | None:
    """(b1, b2) with b1 * b2 == tokens, 2 <= b1 <= b2 and b1 as large as possible; None if prime."""
    for b1 in range(math.isqrt(tokens), 1, -1):
        if tokens % b1 == 0:
            return b1, tokens // b1
    return None


def supports(tokens: int, dim: int) -> str | None:
    """Monarch needs a token count with a non-trivial factorisation."""
    if factors(tokens) is None:
        return f"tokens must factor as b1 * b2 with b1, b2 >= 2 (got {tokens})"
    return None


def build(tokens: int, dim: int, init_scale: float = 1.0) -> nn.Module:
    """A module y[b, :, d] = M x[b, :, d] with M a Monarch matrix of two block-diagonal factors."""
    import torch
    from torch import nn

    if (grid := factors(tokens)) is None:
        raise ValueError(f"mixer monarch: {supports(tokens, dim)}")
    b1, b2 = grid

    def blocks(count: int, size: int) -> nn.Parameter:
        bound = init_scale / size**0.5
        return nn.Parameter(torch.empty(count, size, size).uniform_(-bound, bound))

    class Monarch(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.right = blocks(b1, b2)  # mixes within each grid row
            self.left = blocks(b2, b1)  # mixes within each grid column

        def token_matrix(self, x: torch.Tensor) -> torch.Tensor:
            eye = torch.eye(tokens, dtype=x.dtype, device=x.device)
            return self(eye.unsqueeze(0)).expand(x.shape[0], tokens, tokens)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            grid = x.reshape(x.shape[0], b1, b2, x.shape[2])
            rows = torch.einsum("ikj,bijd->bikd", self.right, grid)
            cols = torch.einsum("kmi,bikd->bmkd", self.left, rows)
            return cols.reshape(x.shape)

    return Monarch()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="monarch",
            build=build,
            description="Monarch token matrix: block-diagonal x permutation x block-diagonal",
            options=(Option("init_scale", float, 1.0, "uniform init bound times 1/sqrt(block)"),),
            fixed_tokens=True,
            causal=False,
            supports=supports,
        )
    )

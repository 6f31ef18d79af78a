"""``butterfly``: a trainable orthogonal butterfly over tokens (log2(T) stages of Givens rotations).

Stage ``s`` rotates every token pair ``(i, i + 2**s)`` inside blocks of ``2**(s+1)`` tokens by its
own trainable angle. A product of rotations is orthogonal, so the token mixing preserves the norm of
every feature column exactly and its inverse is its transpose.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchsuite import ISOMETRY, Mixer, hookimpl

if TYPE_CHECKING:
    from torch import nn


def supports(tokens: int, dim: int) -> str | None:
    """Butterflies need a power-of-two token count of at least 2."""
    if tokens < 2 or tokens & (tokens - 1):
        return f"tokens must be a power of two >= 2 (got {tokens})"
    return None


def build(tokens: int, dim: int) -> nn.Module:
    """A module y[b, :, d] = B x[b, :, d] with B an orthogonal butterfly of trainable angles."""
    import torch
    from torch import nn

    if reason := supports(tokens, dim):
        raise ValueError(f"mixer butterfly: {reason}")
    stages = tokens.bit_length() - 1

    class Butterfly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.angles = nn.Parameter(torch.empty(stages, tokens // 2).uniform_(-math.pi, math.pi))

        def token_matrix(self, x: torch.Tensor) -> torch.Tensor:
            eye = torch.eye(tokens, dtype=x.dtype, device=x.device)
            return self(eye.unsqueeze(0)).expand(x.shape[0], tokens, tokens)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            batch, _, features = x.shape
            for stage in range(stages):
                half = 2**stage
                pairs = x.reshape(batch, tokens // (2 * half), 2, half, features)
                top, bottom = pairs[:, :, 0], pairs[:, :, 1]
                angle = self.angles[stage].view(1, tokens // (2 * half), half, 1)
                cos, sin = torch.cos(angle), torch.sin(angle)
                rotated = torch.stack((cos * top - sin * bottom, sin * top + cos * bottom), dim=2)
                x = rotated.reshape(batch, tokens, features)
            return x

    return Butterfly()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="butterfly",
            build=build,
            description="trainable orthogonal butterfly over tokens (Givens rotations, isometric)",
            fixed_tokens=True,
            causal=False,
            signature=ISOMETRY,
            supports=supports,
        )
    )

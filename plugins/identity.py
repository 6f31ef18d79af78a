"""``identity``: the no-token-mixing control.

In the block x + mixer(norm(x)) this mixer returns a per-token map, a learned per-feature scale
``gamma * x`` (gamma starts at 1), so the branch stays a live, trainable path while no token ever
sees another: the model is a token-wise MLP with the same block structure. (Returning zeros would
remove the branch entirely and leave the mechanism probes undefined.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Signature, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int) -> nn.Module:
    """A module y[b, t, d] = gamma[d] * x[b, t, d]; no token mixing."""
    import torch
    from torch import nn

    class TokenWise(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.scale

    return TokenWise()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="identity",
            build=build,
            description="no token mixing: a learned per-feature scale of each token (control)",
            fixed_tokens=False,
            causal=True,
            tags=("control",),
            signature=Signature(
                prediction="no output token depends on any other input token",
                predicted={"cross_token_influence": 0.0},
            ),
        )
    )

"""``mlp``: MLP-Mixer's token-mixing MLP, Linear(T, e*T) -> GELU -> Linear(e*T, T) per feature."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, expansion: int = 2) -> nn.Module:
    """A two-layer MLP applied along the token axis of every feature column."""
    import torch
    from torch import nn

    if expansion < 1:
        raise ValueError(f"mixer mlp: expansion must be >= 1 (got {expansion})")

    class TokenMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(tokens, expansion * tokens),
                nn.GELU(),
                nn.Linear(expansion * tokens, tokens),
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x.transpose(1, 2)).transpose(1, 2)

    return TokenMLP()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="mlp",
            build=build,
            description="token-mixing MLP (MLP-Mixer), nonlinear",
            options=(Option("expansion", int, 2, "hidden width as a multiple of the token count"),),
            size_option="expansion",
            fixed_tokens=True,
            causal=False,
        )
    )

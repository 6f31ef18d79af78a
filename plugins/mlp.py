"""``mlp``: MLP-Mixer's token-mixing MLP, Linear(T, h) -> GELU -> Linear(h, T) per feature, h = e*T
or the width ``hidden`` (D_S in the paper, free of T)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, expansion: int = 2, hidden: int = 0) -> nn.Module:
    """A two-layer MLP applied along the token axis of every feature column, ``hidden`` wide
    (0: ``expansion`` times the token count)."""
    import torch
    from torch import nn

    if expansion < 1 or hidden < 0:
        raise ValueError(
            f"mixer mlp: expansion must be >= 1 and hidden >= 0 (got {expansion}, {hidden})"
        )
    width = hidden or expansion * tokens

    class TokenMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(tokens, width),
                nn.GELU(),
                nn.Linear(width, tokens),
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
            options=(
                Option("expansion", int, 2, "hidden width as a multiple of the token count"),
                Option("hidden", int, 0, "hidden width (0: expansion x tokens); MLP-Mixer's D_S"),
            ),
            size_option="hidden",
            fixed_tokens=True,
            causal=False,
        )
    )

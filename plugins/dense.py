"""``dense``: a learned tokens x tokens matrix (MLP-Mixer token mixing). The default baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, init_scale: float = 1.0) -> nn.Module:
    """A module y[b, s, d] = sum_t W[s, t] x[b, t, d] + c[s], W initialised near uniform mixing."""
    import torch
    from torch import nn

    class DenseTokenMixer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            bound = init_scale / tokens**0.5
            self.weight = nn.Parameter(torch.empty(tokens, tokens).uniform_(-bound, bound))
            self.bias = nn.Parameter(torch.zeros(tokens, 1))

        def token_matrix(self, x: torch.Tensor) -> torch.Tensor:
            return self.weight.expand(x.shape[0], tokens, tokens)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.einsum("st,btd->bsd", self.weight, x) + self.bias

    return DenseTokenMixer()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="dense",
            build=build,
            description="learned token x token matrix (MLP-Mixer style, linear)",
            options=(Option("init_scale", float, 1.0, "uniform init bound times 1/sqrt(tokens)"),),
            fixed_tokens=True,
            causal=False,
        )
    )

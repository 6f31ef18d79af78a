"""``random``: a frozen random orthogonal T x T token matrix (a control with no trainable mixing).

The matrix is drawn from torch's global RNG when the module is built (the runner seeds it per
module), orthogonalised by a QR decomposition in float64, and kept as a buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import ISOMETRY, Mixer, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int) -> nn.Module:
    """A module y[b, :, d] = Q x[b, :, d] with Q a fixed Haar-random orthogonal matrix."""
    import torch
    from torch import nn

    class RandomOrthogonal(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            q, r = torch.linalg.qr(torch.randn(tokens, tokens, dtype=torch.float64))
            self.register_buffer("matrix", (q * torch.sign(torch.diagonal(r))).float())

        def token_matrix(self, x: torch.Tensor) -> torch.Tensor:
            return self.matrix.to(x.dtype).expand(x.shape[0], tokens, tokens)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.einsum("st,btd->bsd", self.matrix.to(x.dtype), x)

    return RandomOrthogonal()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="random",
            build=build,
            description="frozen random orthogonal token matrix (untrained control)",
            fixed_tokens=True,
            causal=False,
            tags=("control",),
            signature=ISOMETRY,
        )
    )

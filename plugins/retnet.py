"""``retnet``: multi-scale retention (Sun, Dong, Huang, Ma, Xia, Xue, Wang & Wei, "Retentive
Network: A Successor to Transformer for Large Language Models", 2023, arXiv:2307.08621), causal.

Head h keeps S_t = gamma_h S_{t-1} + k_t v_t^T with a fixed decay gamma_h = 1 - 2^(-5-h) (a
different time scale per head), reads o_t = S_t^T q_t, with q and k rotated by their position
(the xPos/rotary angle of the paper). Then a per-head RMS norm (the paper's GroupNorm), a SiLU
gate and a linear map; values are ``expand`` times wider than the model.
Training runs the chunked form (:func:`parallel`); :func:`recurrent` is the token-by-token one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, UsageError, hookimpl

if TYPE_CHECKING:
    import torch
    from torch import nn


def parallel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor, chunk: int = 16
) -> torch.Tensor:
    """Chunked retention: q, k (B, H, T, dk), v (B, H, T, dv), log_decay (B or 1, H, T, 1)."""
    from benchsuite.mixers._linear import chunk_linear_attention

    return chunk_linear_attention(q, k, v, log_decay.expand(*q.shape[:3], 1), chunk)


def recurrent(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor
) -> torch.Tensor:
    """Retention one token at a time: S_t = exp(log_decay) S_{t-1} + k_t v_t^T."""
    from benchsuite.mixers._linear import recurrent_linear_attention

    return recurrent_linear_attention(q, k, v, log_decay.expand(*q.shape[:3], 1))


def build(tokens: int, dim: int, heads: int = 4, expand: int = 2) -> nn.Module:
    """Multi-scale retention with ``heads`` heads and values ``expand * dim`` wide."""
    import torch
    from torch import nn
    from torch.nn import functional

    from benchsuite.mixers._linear import check_heads, head_norm, merge_heads, split_heads

    head_dim = check_heads("retnet", dim, heads)
    if head_dim % 2:
        raise UsageError(f"mixer retnet: the head width dim/heads = {head_dim} must be even")
    if expand < 1:
        raise UsageError(f"mixer retnet: expand must be >= 1 (got {expand})")
    values = expand * dim

    class Retention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkvg = nn.Linear(dim, 2 * dim + 2 * values, bias=False)
            gamma = 1 - 2.0 ** (-5 - torch.arange(heads, dtype=torch.float32))
            self.register_buffer("log_gamma", gamma.log()[:, None, None])
            angle = 1e4 ** -torch.linspace(0, 1, head_dim // 2)
            self.register_buffer("angle", angle)
            self.norm = nn.Parameter(torch.ones(values // heads))
            self.out = nn.Linear(values, dim, bias=False)

        def rotate(self, x: torch.Tensor) -> torch.Tensor:
            """Rotate feature pairs of x (B, H, T, d) by position times their angle."""
            theta = torch.arange(x.shape[2], device=x.device, dtype=x.dtype)[:, None] * self.angle
            cos, sin = theta.cos(), theta.sin()
            even, odd = x[..., 0::2], x[..., 1::2]
            return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v, g = self.qkvg(x).split([dim, dim, values, values], dim=-1)
            q, k, v = (split_heads(z, heads) for z in (q, k, v))
            q, k = self.rotate(q), self.rotate(k) / math.sqrt(head_dim)
            o = parallel(q, k, v, self.log_gamma.to(x.dtype)[None])
            return self.out(merge_heads(head_norm(o, self.norm)) * functional.silu(g))

    return Retention()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="retnet",
            build=build,
            description="multi-scale retention (RetNet), causal, chunked form",
            options=(
                Option("heads", int, 4, "number of heads (one decay each); must divide dim"),
                Option("expand", int, 2, "value width as a multiple of dim"),
            ),
            fixed_tokens=False,
            causal=True,
            tags=("recurrent",),
            size_option="expand",
        )
    )

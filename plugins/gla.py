"""``gla``: gated linear attention (Yang, Wang, Shen, Panda & Kim, "Gated Linear Attention
Transformers with Hardware-Efficient Training", ICML 2024, arXiv:2312.06635), causal.

Each head keeps a matrix state S_t = diag(a_t) S_{t-1} + k_t v_t^T and reads o_t = S_t^T q_t; the
forget gate a_t = sigmoid(W_2 W_1 x_t + b)^(1/16) is data-dependent per key feature (low-rank, rank
16, temperature 16 as in the paper). Then a per-head RMS norm, a SiLU output gate and a linear map.
With ``conv`` taps, q, k and v first pass a short causal depthwise convolution and SiLU (as
flash-linear-attention's ``use_short_conv``; Zoology gives every non-attention mixer one "for fair
comparison"); the default, 0, is the paper's GLA without it.
Training runs the chunked form (:func:`parallel`); :func:`recurrent` is the token-by-token one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, UsageError, hookimpl

if TYPE_CHECKING:
    import torch
    from torch import nn

GATE_RANK, TEMPERATURE = 16, 16.0


def parallel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor, chunk: int = 16
) -> torch.Tensor:
    """Chunked GLA: q, k, log_decay (B, H, T, dk), v (B, H, T, dv) -> (B, H, T, dv)."""
    from benchsuite.mixers._linear import chunk_linear_attention

    return chunk_linear_attention(q, k, v, log_decay, chunk)


def recurrent(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor
) -> torch.Tensor:
    """GLA one token at a time: S_t = diag(exp(log_decay_t)) S_{t-1} + k_t v_t^T."""
    from benchsuite.mixers._linear import recurrent_linear_attention

    return recurrent_linear_attention(q, k, v, log_decay)


def build(tokens: int, dim: int, heads: int = 4, expand_k: float = 0.5, conv: int = 0) -> nn.Module:
    """GLA with ``heads`` heads and key width ``expand_k * dim`` (values keep ``dim``); q, k and v
    through a short causal convolution of ``conv`` taps first (0: none)."""
    import torch
    from torch import nn
    from torch.nn import functional

    from benchsuite.mixers._linear import (
        ShortConv,
        check_heads,
        head_norm,
        merge_heads,
        split_heads,
    )

    keys = int(dim * expand_k)
    if keys < 1 or keys != dim * expand_k:
        raise UsageError(f"mixer gla: expand_k={expand_k} times dim {dim} is not a whole number")
    check_heads("gla", keys, heads, "key width")
    check_heads("gla", dim, heads)

    class GatedLinearAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkvg = nn.Linear(dim, 2 * keys + 2 * dim, bias=False)
            self.gate = nn.Sequential(
                nn.Linear(dim, GATE_RANK, bias=False), nn.Linear(GATE_RANK, keys)
            )
            self.norm = nn.Parameter(torch.ones(dim // heads))
            self.out = nn.Linear(dim, dim, bias=False)
            self.conv = ShortConv(2 * keys + dim, conv) if conv else None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            qkv, g = self.qkvg(x).split([2 * keys + dim, dim], dim=-1)
            if self.conv is not None:
                qkv = functional.silu(self.conv(qkv))
            q, k, v = qkv.split([keys, keys, dim], dim=-1)
            log_decay = functional.logsigmoid(self.gate(x)) / TEMPERATURE
            q, k, v, log_decay = (split_heads(z, heads) for z in (q, k, v, log_decay))
            o = parallel(q * (keys // heads) ** -0.5, k, v, log_decay)
            return self.out(merge_heads(head_norm(o, self.norm)) * functional.silu(g))

    return GatedLinearAttention()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="gla",
            build=build,
            description="gated linear attention (GLA), causal, chunked form",
            options=(
                Option("heads", int, 4, "number of heads; must divide dim and the key width"),
                Option("expand_k", float, 0.5, "key width as a multiple of dim"),
                Option("conv", int, 0, "taps of a short causal convolution on q, k, v (0: none)"),
            ),
            fixed_tokens=False,
            causal=True,
            tags=("recurrent",),
        )
    )

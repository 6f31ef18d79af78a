"""``deltanet``: linear attention with the delta rule (Schlag, Irie & Schmidhuber, "Linear
Transformers Are Secretly Fast Weight Programmers", ICML 2021, arXiv:2102.11174; chunked
parallel training of Yang, Wang, Zhang, Shen & Kim, "Parallelizing Linear Transformers with the
Delta Rule over Sequence Length", NeurIPS 2024, arXiv:2406.06484), causal.

Each head keeps S_t = S_{t-1} + beta_t k_t (v_t - S_{t-1}^T k_t)^T: it writes v_t at key k_t,
replacing what the key held by a fraction beta_t = sigmoid(w^T x_t), and reads o_t = S_t^T q_t.
q, k, v pass a short causal convolution and SiLU; q and k are L2-normalised. Then a per-head RMS
norm and a linear map. :func:`parallel` is the chunked (WY) form used in training,
:func:`recurrent` the token-by-token one. ``gated_deltanet`` adds a decay and an output gate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    import torch
    from torch import nn


def parallel(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None = None,
    chunk: int = 16,
) -> torch.Tensor:
    """Chunked delta rule: q, k (B, H, T, dk), v (B, H, T, dv), beta (and log_decay) (B, H, T)."""
    from benchsuite.mixers._linear import chunk_delta_rule

    return chunk_delta_rule(q, k, v, beta, log_decay, chunk)


def recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None = None,
) -> torch.Tensor:
    """The delta rule one token at a time (with a decay exp(log_decay_t) when given)."""
    from benchsuite.mixers._linear import recurrent_delta_rule

    return recurrent_delta_rule(q, k, v, beta, log_decay)


def build(
    tokens: int,
    dim: int,
    heads: int = 4,
    conv: int = 4,
    gated: bool = False,
    name: str = "deltanet",
) -> nn.Module:
    """DeltaNet with ``heads`` heads and a ``conv``-tap short convolution; ``gated``: the Gated
    DeltaNet decay a_t = exp(-exp(A) softplus(w^T x_t + b)) and a SiLU output gate."""
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

    head_dim = check_heads(name, dim, heads)

    class DeltaNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(dim, 3 * dim, bias=False)
            self.conv = ShortConv(3 * dim, conv)
            self.beta = nn.Linear(dim, heads)
            if gated:
                self.decay = nn.Linear(dim, heads)
                self.log_rate = nn.Parameter(torch.empty(heads).uniform_(0, 16).log())
                self.gate = nn.Linear(dim, dim, bias=False)
            self.norm = nn.Parameter(torch.ones(head_dim))
            self.out = nn.Linear(dim, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = functional.silu(self.conv(self.qkv(x))).chunk(3, dim=-1)
            q, k, v = (split_heads(z, heads) for z in (q, k, v))
            q, k = functional.normalize(q, dim=-1), functional.normalize(k, dim=-1)
            beta = torch.sigmoid(self.beta(x)).transpose(1, 2)
            log_decay = None
            if gated:
                step = functional.softplus(self.decay(x)).transpose(1, 2)
                log_decay = -self.log_rate.exp()[:, None] * step
            o = merge_heads(head_norm(parallel(q, k, v, beta, log_decay), self.norm))
            return self.out(o * functional.silu(self.gate(x)) if gated else o)

    return DeltaNet()


OPTIONS = (
    Option("heads", int, 4, "number of heads; must divide dim"),
    Option("conv", int, 4, "taps of the short causal convolution on q, k, v"),
)


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="deltanet",
            build=build,
            description="DeltaNet: linear attention with the delta rule, causal, chunked form",
            options=OPTIONS,
            fixed_tokens=False,
            causal=True,
            tags=("recurrent",),
        )
    )

"""``based``: Taylor linear attention with a short convolution (Arora, Eyuboglu, Zhang, Timalsina,
Alberti, Zinsley, Zou, Rudra & Ré, "Simple linear attention language models balance the
recall-throughput tradeoff", ICML 2024, arXiv:2402.18668), causal.

The input passes a short causal depthwise convolution (the paper's local mixing), then each head
projects q and k to ``feature_dim`` features and runs causal linear attention with the
second-order Taylor feature map phi(x) = [1, x, vec(x x^T)/sqrt(2)] of x / feature_dim^(1/4), so
phi(q)^T phi(k) = 1 + s + s^2/2 with s = q^T k / sqrt(feature_dim), always > 0; the output is
sum_j phi(q_t)^T phi(k_j) v_j / sum_j phi(q_t)^T phi(k_j), then a linear map.
:func:`parallel` is the chunked form, :func:`recurrent` the token-by-token one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benchsuite import Mixer, Option, UsageError, hookimpl

if TYPE_CHECKING:
    import torch
    from torch import nn


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = [1, y, vec(y y^T)/sqrt(2)] with y = x / d^(1/4): (..., d) -> (..., 1 + d + d^2)."""
    import torch

    y = x / x.shape[-1] ** 0.25
    square = (y[..., :, None] * y[..., None, :]).flatten(-2) / 2**0.5
    return torch.cat([torch.ones_like(y[..., :1]), y, square], dim=-1)


def _normalised(
    attend: Callable[..., torch.Tensor],
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *args: Any,
) -> torch.Tensor:
    """``attend`` on Taylor features, with a column of ones on v giving the normaliser."""
    import torch

    out = attend(
        taylor_features(q),
        taylor_features(k),
        torch.cat([v, torch.ones_like(v[..., :1])], -1),
        *args,
    )
    return out[..., :-1] / out[..., -1:]


def parallel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk: int = 128) -> torch.Tensor:
    """Chunked Taylor linear attention: q, k (B, H, T, f), v (B, H, T, dv) -> (B, H, T, dv).
    Up to ``chunk`` tokens, the quadratic form phi(q_i).phi(k_j) = 1 + s + s^2 / 2 (s = q_i.k_j /
    sqrt(f)) under a causal mask, without building the features."""
    import torch

    from benchsuite.mixers._linear import chunk_linear_attention

    if q.shape[2] > chunk:
        return _normalised(chunk_linear_attention, q, k, v, None, chunk)
    s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    causal = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
    scores = (1 + s + s * s / 2).masked_fill(~causal, 0.0)
    return (scores @ v) / scores.sum(-1, keepdim=True)


def recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Taylor linear attention one token at a time (running sums of phi(k) v^T and phi(k))."""
    from benchsuite.mixers._linear import recurrent_linear_attention

    return _normalised(recurrent_linear_attention, q, k, v)


def build(tokens: int, dim: int, heads: int = 2, feature_dim: int = 8, conv: int = 3) -> nn.Module:
    """Based with ``heads`` heads of ``feature_dim`` query/key features and a ``conv``-tap
    short convolution."""
    from torch import nn

    from benchsuite.mixers._linear import ShortConv, check_heads, merge_heads, split_heads

    check_heads("based", dim, heads)
    if feature_dim < 1:
        raise UsageError(f"mixer based: feature_dim must be >= 1 (got {feature_dim})")
    features = heads * feature_dim

    class Based(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = ShortConv(dim, conv)
            self.qkv = nn.Linear(dim, 2 * features + dim, bias=False)
            self.out = nn.Linear(dim, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.qkv(self.conv(x)).split([features, features, dim], dim=-1)
            q, k, v = (split_heads(z, heads) for z in (q, k, v))
            return self.out(merge_heads(parallel(q, k, v)))

    return Based()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="based",
            build=build,
            description="Based: Taylor-feature linear attention after a short convolution, causal",
            options=(
                Option("heads", int, 2, "number of heads; must divide dim"),
                Option("feature_dim", int, 8, "query/key features per head (state 1+f+f^2)"),
                Option("conv", int, 3, "taps of the short causal convolution"),
            ),
            fixed_tokens=False,
            causal=True,
            tags=("recurrent",),
        )
    )

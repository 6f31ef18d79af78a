"""``sliding_window``: local causal softmax attention, each token attending to itself and the
``window - 1`` tokens before it (Beltagy, Peters & Cohan, "Longformer: The Long-Document
Transformer", 2020, arXiv:2004.05150; the local attention of Mistral 7B and of MAD-Lab's
comparisons), causal.

:func:`parallel` splits the tokens into blocks of ``window``; each block's queries attend to the
keys of their own and the previous block under a band mask, so time and memory grow as
tokens x window. :func:`recurrent` attends token by token over the last ``window`` keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, UsageError, hookimpl

if TYPE_CHECKING:
    import torch
    from torch import nn


def parallel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    """Banded causal attention: q, k, v (B, H, T, d) -> (B, H, T, d)."""
    import torch
    from torch.nn import functional

    tokens = q.shape[2]
    if window >= tokens:  # the band covers every earlier token
        return functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    count = -(-tokens // window)
    pad = count * window - tokens
    q = functional.pad(q, (0, 0, 0, pad)).unflatten(2, (count, window))
    k, v = (
        functional.pad(z, (0, 0, window, pad)).unflatten(2, (count + 1, window)) for z in (k, v)
    )
    k, v = (torch.cat([z[:, :, :-1], z[:, :, 1:]], dim=3) for z in (k, v))  # (B, H, N, 2w, d)
    query = torch.arange(window, device=q.device)[:, None]
    key = torch.arange(2 * window, device=q.device)[None, :]
    band = (key > query) & (key <= query + window)  # key - window in (query - window, query]
    first = band & (key >= window)  # block 0 has no previous block
    mask = torch.cat([first[None], band.expand(count - 1, -1, -1)])
    out = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.flatten(2, 3)[:, :, :tokens]


def recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    """Sliding-window attention one query at a time over the last ``window`` keys."""
    import torch

    out = []
    for t in range(q.shape[2]):
        start = max(0, t - window + 1)
        scores = q[:, :, t, None] @ k[:, :, start : t + 1].transpose(-1, -2) / q.shape[-1] ** 0.5
        out.append(torch.softmax(scores, dim=-1) @ v[:, :, start : t + 1])
    return torch.cat(out, dim=2)


def build(tokens: int, dim: int, heads: int = 4, window: int = 32) -> nn.Module:
    """Sliding-window attention with ``heads`` heads over ``window`` tokens."""
    from torch import nn

    from benchsuite.mixers._linear import check_heads, merge_heads, split_heads

    check_heads("sliding_window", dim, heads)
    if window < 1:
        raise UsageError(f"mixer sliding_window: window must be >= 1 (got {window})")

    class SlidingWindowAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(dim, 3 * dim)
            self.out = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = (split_heads(z, heads) for z in self.qkv(x).chunk(3, dim=-1))
            return self.out(merge_heads(parallel(q, k, v, window)))

    return SlidingWindowAttention()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="sliding_window",
            build=build,
            description="sliding-window (local causal) softmax attention",
            options=(
                Option("heads", int, 4, "number of heads; must divide dim"),
                Option("window", int, 32, "tokens each token attends to (itself included)"),
            ),
            fixed_tokens=False,
            causal=True,
            tags=("local",),
        )
    )

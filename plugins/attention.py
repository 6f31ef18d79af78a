"""``attention``: softmax multi-head self-attention over tokens (no positional bias, no dropout)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, Signature, UsageError, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, heads: int = 4) -> nn.Module:
    """Multi-head self-attention; ``token_matrix`` gives its softmax weights averaged over heads."""
    import torch
    from torch import nn
    from torch.nn import functional

    if heads < 1 or dim % heads:
        raise UsageError(f"mixer attention: dim {dim} is not divisible by heads={heads}")

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads, self.head_dim = heads, dim // heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.out = nn.Linear(dim, dim)

        def _attend(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Softmax weights (B, H, T, T) and values (B, H, T, head_dim)."""
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
            return torch.softmax(q @ k.transpose(-2, -1) / self.head_dim**0.5, dim=-1), v

        def attention_weights(self, x: torch.Tensor) -> torch.Tensor:
            """The softmax attention weights, (B, heads, T, T); each row sums to 1."""
            return self._attend(x)[0]

        def token_matrix(self, x: torch.Tensor) -> torch.Tensor:
            """The attention weights averaged over heads, (B, T, T)."""
            return self.attention_weights(x).mean(dim=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            """The same attention as ``attention_weights`` @ values, by the fused kernel."""
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
            mixed = functional.scaled_dot_product_attention(q, k, v)
            return self.out(mixed.transpose(1, 2).reshape(x.shape))

    return Attention()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="attention",
            build=build,
            description="softmax multi-head self-attention (Transformer)",
            options=(Option("heads", int, 4, "number of heads; must divide the model dim"),),
            fixed_tokens=False,
            causal=False,
            signature=Signature(
                prediction="each token's output is a convex combination of the value vectors",
                predicted={"row_sum_error": 0.0},
            ),
        )
    )

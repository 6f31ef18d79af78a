"""Small building blocks that tracks share (tokenizers and heads). Imports torch."""

from __future__ import annotations

import torch
from torch import nn


class PositionalTokens(nn.Module):
    """Adds a learned positional embedding to (B, T, D) tokens."""

    def __init__(self, tokens: int, dim: int) -> None:
        super().__init__()
        self.position = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.position


def embed_tokens(features: int, tokens: int, dim: int) -> nn.Module:
    """(B, tokens, features) -> (B, tokens, dim): a shared linear embedding plus positions."""
    return nn.Sequential(nn.Linear(features, dim), PositionalTokens(tokens, dim))


class MeanPool(nn.Module):
    """(B, T, D) -> (B, D): the mean over tokens."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


class LastToken(nn.Module):
    """(B, T, D) -> (B, D): the last token (a CLS token appended last, or the newest time step)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, -1]

"""The shared MetaFormer-style encoder: tokenizer -> blocks -> norm -> head, the mixer a slot.

Every sub-module is constructed under its own seed derived from its qualified name, so models that
share a module (tokenizer, norms, MLPs, head) start from identical weights whatever the mixer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class Block(nn.Module):
    """Pre-norm block: x + mixer(norm(x)); x + mlp(norm(x))."""

    def __init__(
        self, mixer: nn.Module, norm1: nn.Module, norm2: nn.Module, mlp: nn.Module
    ) -> None:
        super().__init__()
        self.norm1, self.mixer, self.norm2, self.mlp = norm1, mixer, norm2, mlp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    """tokenizer -> depth x Block -> LayerNorm -> head."""

    def __init__(self, tokenizer: nn.Module, blocks: list[Block], norm: nn.Module, head: nn.Module):
        super().__init__()
        self.tokenizer, self.blocks, self.norm, self.head = (
            tokenizer,
            nn.ModuleList(blocks),
            norm,
            head,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.tokenizer(x)
        for block in self.blocks:
            tokens = block(tokens)
        return self.head(self.norm(tokens))

    def mixers(self) -> list[nn.Module]:
        """The token-mixing module of every block, in order."""
        return [block.mixer for block in self.blocks]


def mlp(dim: int, ratio: int, hidden: int | None = None) -> nn.Module:
    """The channel MLP of a block: ``hidden`` units (default ``ratio * dim``)."""
    width = ratio * dim if hidden is None else hidden
    return nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, dim))


def build_encoder(
    make: dict[str, Callable[[], nn.Module]],
    make_mixer: Callable[[], nn.Module],
    dim: int,
    depth: int,
    mlp_ratio: int,
    seed_of: Callable[[str], int],
    mlp_hidden: int | None = None,
) -> Encoder:
    """Build the encoder, constructing each named part under ``torch.manual_seed(seed_of(name))``.

    ``make`` holds the track's ``"tokenizer"`` and ``"head"`` factories; ``mlp_hidden`` sets the
    channel MLPs' hidden width (default ``mlp_ratio * dim``; the equal-size rule sets it). Only
    the parts whose shape it changes (the MLPs) start from other weights.
    """

    def seeded(name: str, factory: Callable[[], nn.Module]) -> nn.Module:
        torch.manual_seed(seed_of(name))
        return factory()

    blocks = [
        Block(
            mixer=seeded(f"blocks.{i}.mixer", make_mixer),
            norm1=seeded(f"blocks.{i}.norm1", lambda: nn.LayerNorm(dim)),
            norm2=seeded(f"blocks.{i}.norm2", lambda: nn.LayerNorm(dim)),
            mlp=seeded(f"blocks.{i}.mlp", lambda: mlp(dim, mlp_ratio, mlp_hidden)),
        )
        for i in range(depth)
    ]
    return Encoder(
        tokenizer=seeded("tokenizer", make["tokenizer"]),
        blocks=blocks,
        norm=seeded("norm", lambda: nn.LayerNorm(dim)),
        head=seeded("head", make["head"]),
    )

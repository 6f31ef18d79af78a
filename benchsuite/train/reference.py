"""The reference step: a fixed, hand-written training step that is the suite's unit of cost.

Job-seconds measured on one machine do not compare with another's (machines here differ by 1.5x
and more). Divided by the time of this step, measured in the same run, they do: a suite's cost in
*reference steps* is how many of these steps the same CPU-seconds would have bought. The step is
the quick ``dense`` encoder of the ``sequence`` track (16 tokens of 4 channels, width 16, depth 2,
MLP ratio 2, batch 16, a horizon-8 forecast from the last token, MSE, AdamW with torch's defaults,
gradient norm clipped to 1) on random data, in a plain PyTorch loop on one thread. It is written
out here, apart from the suite's code, so that speeding up benchsuite never changes the unit.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch import nn

TOKENS, CHANNELS, HORIZON, DIM, DEPTH, RATIO, BATCH = 16, 4, 8, 16, 2, 2, 16


class _Dense(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(TOKENS, TOKENS).uniform_(-0.25, 0.25))
        self.bias = nn.Parameter(torch.zeros(TOKENS, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("st,btd->bsd", self.weight, x) + self.bias


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.mixer, self.norm2 = nn.LayerNorm(DIM), _Dense(), nn.LayerNorm(DIM)
        hidden = RATIO * DIM
        self.mlp = nn.Sequential(nn.Linear(DIM, hidden), nn.GELU(), nn.Linear(hidden, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(CHANNELS, DIM)
        self.position = nn.Parameter(torch.randn(1, TOKENS, DIM) * 0.02)
        self.blocks = nn.Sequential(*[_Block() for _ in range(DEPTH)])
        self.norm, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, HORIZON * CHANNELS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.norm(self.blocks(self.embed(x) + self.position))
        return self.head(tokens[:, -1]).view(-1, HORIZON, CHANNELS)


def reference_step_seconds(steps: int = 20, repeats: int = 5, warmup: int = 10) -> float:
    """Median over ``repeats`` of the mean seconds of one reference training step (after
    ``warmup`` untimed steps), on one torch thread: 110 steps of 1-3 ms by default. The caller's
    thread setting and RNG state are restored."""
    threads = torch.get_num_threads()
    state = torch.random.get_rng_state()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        model = _Model()
        x, y = torch.randn(8 * BATCH, TOKENS, CHANNELS), torch.randn(8 * BATCH, HORIZON, CHANNELS)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step(i: int) -> None:
            rows = slice((i % 8) * BATCH, (i % 8 + 1) * BATCH)
            loss = nn.functional.mse_loss(model(x[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

        for i in range(warmup):
            step(i)
        means = []
        for _ in range(repeats):
            start = time.perf_counter()
            for i in range(steps):
                step(i)
            means.append((time.perf_counter() - start) / steps)
        return statistics.median(means)
    finally:
        torch.set_num_threads(threads)
        torch.random.set_rng_state(state)

"""The one training loop, shared by one model and by a stack of batched models.

AdamW (fused: one kernel for all parameters, ~25% faster steps for tiny models on the CPU), linear
warm-up then cosine decay to zero, minibatches from :func:`batch_order`. Every ``CHECK_EVERY``
steps the loss trace is checked: a member whose loss turned non-finite is reported (and, when all
have, training stops early).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import torch

CHECK_EVERY = 50


def batch_order(rng: np.random.Generator, n: int, steps: int, batch_size: int) -> torch.Tensor:
    """Minibatch indices (steps, batch): consecutive slices of fresh permutations per epoch."""
    per_epoch = max(n // batch_size, 1)
    epochs = math.ceil(steps / per_epoch)
    order = np.concatenate([rng.permutation(n)[: per_epoch * batch_size] for _ in range(epochs)])
    size = min(batch_size, n)
    return torch.from_numpy(order[: steps * size].reshape(steps, size).astype(np.int64))


def lr_factor(step: int, steps: int, warmup: int) -> float:
    """Linear warm-up then cosine decay to zero."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(steps - warmup, 1)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (timings on a GPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Trace:
    """What training leaves: the loss of every step done, per member when batched."""

    losses: torch.Tensor  # (steps done,) or (steps done, members), float32 on the CPU
    stopped: dict[int, int]  # member -> steps done when its loss was found non-finite
    seconds_per_step: float

    def member(self, index: int) -> tuple[float, bool]:
        """(mean loss of the last 10 steps, every loss finite) of one member (0 if unbatched)."""
        trace = self.losses if self.losses.dim() == 1 else self.losses[:, index]
        trace = trace[: self.stopped.get(index, len(trace))]
        done = len(trace)
        return float(trace[-min(10, done) :].mean()), bool(torch.isfinite(trace).all())


def train_loop(parameters: Iterable[torch.Tensor], loss_at: Callable[[int], torch.Tensor],
               steps: int, config: Mapping[str, float], warmup_fraction: float,
               device: torch.device, members: int = 0,
               on_stop: Callable[[int, int], None] | None = None) -> Trace:  # fmt: skip
    """Train in place: ``loss_at(step)`` gives the loss (a scalar, or one per member of a stack).

    ``on_stop(member, steps_done)`` is called once for each member whose loss turns non-finite;
    the loop ends when every member has.
    """
    optimizer = torch.optim.AdamW(
        parameters, lr=config["lr"], weight_decay=config.get("weight_decay", 0.0), fused=True
    )
    warmup = max(1, int(warmup_fraction * steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, steps, warmup)
    )
    losses = torch.zeros((steps, members) if members else steps, device=device)
    stopped: dict[int, int] = {}
    synchronize(device)
    start = time.perf_counter()
    done = 0
    for step in range(steps):
        loss = loss_at(step)
        optimizer.zero_grad(set_to_none=True)
        (loss.sum() if members else loss).backward()
        optimizer.step()
        scheduler.step()
        losses[step] = loss.detach()
        done = step + 1
        if done % CHECK_EVERY == 0:
            window = torch.isfinite(losses[done - CHECK_EVERY : done])
            finite = window.all(dim=0).tolist() if members else [bool(window.all())]
            for member, ok in enumerate(finite):
                if not ok and member not in stopped:
                    stopped[member] = done
                    if on_stop is not None:
                        on_stop(member, done)
            if len(stopped) == max(members, 1):
                break
    synchronize(device)
    elapsed = time.perf_counter() - start
    return Trace(losses[:done].float().cpu(), stopped, elapsed / max(done, 1))

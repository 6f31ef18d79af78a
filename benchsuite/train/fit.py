"""The one training loop, shared by one model and by a stack of models trained as one.

AdamW with linear warm-up then cosine decay to zero, minibatches from :func:`batch_order`. One
model uses torch's fused AdamW (one kernel for all parameters: ~25% faster steps for tiny models
on the CPU); a stack of models (:mod:`benchsuite.train.batched`) uses :class:`StackedAdamW`, the
same update with a learning rate and weight decay per member. Every ``CHECK_EVERY`` steps the
loss trace is checked: a member whose loss turned non-finite is reported (and, once all have,
training stops early).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

CHECK_EVERY = 50
BETAS, EPS = (0.9, 0.999), 1e-8  # torch's AdamW defaults, used by both optimisers


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


class Optimizer(Protocol):
    """What the loop needs of an optimiser: clear gradients, step at a scheduled lr factor."""

    def zero_grad(self) -> None: ...

    def step(self, factor: float) -> None: ...


class FusedAdamW:
    """torch's fused AdamW for one model at ``lr * factor``, gradients clipped to a norm of
    ``clip`` first (0: no clipping)."""

    def __init__(self, parameters: Iterable[torch.Tensor], lr: float, weight_decay: float,
                 clip: float = 0.0) -> None:  # fmt: skip
        self.lr, self.clip, self.params = lr, clip, list(parameters)
        self.optimizer = torch.optim.AdamW(
            self.params, lr=lr, weight_decay=weight_decay, betas=BETAS, eps=EPS, fused=True
        )

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self, factor: float) -> None:
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip, foreach=True)
        self.optimizer.param_groups[0]["lr"] = self.lr * factor
        self.optimizer.step()


class StackedAdamW:
    """AdamW over stacked parameters (leading dimension = member), one lr and weight decay per
    member; the same update as torch's AdamW, written with ``torch._foreach`` list operations."""

    def __init__(self, parameters: Sequence[torch.Tensor], lrs: Sequence[float],
                 weight_decays: Sequence[float], clip: float = 0.0) -> None:  # fmt: skip
        self.params, self.clip = list(parameters), clip
        device = self.params[0].device
        lr = torch.tensor(lrs, dtype=torch.float32, device=device)
        decay = torch.tensor(weight_decays, dtype=torch.float32, device=device)
        shape = [(-1,) + (1,) * (p.dim() - 1) for p in self.params]
        self.lrs = [lr.view(s) for s in shape]
        self.decays = [(lr * decay).view(s) for s in shape]
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.steps = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, factor: float) -> None:
        self.steps += 1
        beta1, beta2 = BETAS
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        if self.clip:
            self._clip(grads)
        shrink = torch._foreach_mul(self.decays, -factor)
        torch._foreach_add_(shrink, 1.0)
        torch._foreach_mul_(self.params, shrink)  # decoupled weight decay: p *= 1 - lr wd
        torch._foreach_lerp_(self.exp_avg, grads, 1 - beta1)
        torch._foreach_mul_(self.exp_avg_sq, beta2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, 1 - beta2)
        correction1 = 1 - beta1**self.steps
        correction2 = math.sqrt(1 - beta2**self.steps)
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, correction2)
        torch._foreach_add_(denom, EPS)
        update = torch._foreach_div(self.exp_avg, denom)
        torch._foreach_mul_(update, self.lrs)
        torch._foreach_mul_(update, factor / correction1)
        torch._foreach_sub_(self.params, update)

    def _clip(self, grads: list[torch.Tensor]) -> None:
        """Scale each member's gradients to a norm of at most ``clip`` (as clip_grad_norm_ does
        for one model)."""
        squares = torch.stack([g.pow(2).flatten(1).sum(dim=1) for g in grads]).sum(dim=0)
        scale = (self.clip / (squares.sqrt() + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, [scale.view(-1, *[1] * (g.dim() - 1)) for g in grads])


@dataclass
class Trace:
    """What training leaves: the loss of every step done, per member when stacked."""

    losses: torch.Tensor  # (steps done,) or (steps done, members), float32 on the CPU
    stopped: dict[int, int]  # member -> steps done when its loss was found non-finite
    seconds_per_step: float

    def _done(self, index: int) -> torch.Tensor:
        """One member's losses (0 if unstacked), up to the step its loss was found non-finite."""
        trace = self.losses if self.losses.dim() == 1 else self.losses[:, index]
        return trace[: self.stopped.get(index, len(trace))]

    def member(self, index: int) -> tuple[float, bool]:
        """(mean loss of the last 10 steps, every loss finite) of one member (0 if unstacked)."""
        trace = self._done(index)
        done = len(trace)
        return float(trace[-min(10, done) :].mean()), bool(torch.isfinite(trace).all())

    def slice(self, index: int) -> Trace:
        """The trace of one member of a stack, as if it had trained alone."""
        stopped = {0: self.stopped[index]} if index in self.stopped else {}
        return Trace(self.losses[:, index], stopped, self.seconds_per_step)

    def curve(self, index: int, points: int = 64) -> list[float]:
        """The member's training loss, averaged over at most ``points`` equal windows."""
        trace = self._done(index)
        windows = torch.tensor_split(trace, min(points, max(len(trace), 1)))
        return [float(w.mean()) for w in windows if len(w)]


def train_loop(optimizer: Optimizer, loss_at: Callable[[int], torch.Tensor], steps: int,
               warmup_fraction: float, device: torch.device, members: int = 0,
               on_stop: Callable[[int, int], None] | None = None) -> Trace:  # fmt: skip
    """Train in place: ``loss_at(step)`` gives the loss (a scalar, or one per member of a stack).

    ``on_stop(member, steps_done)`` is called once for each member whose loss turns non-finite;
    the loop ends when every member has.
    """
    warmup = max(1, int(warmup_fraction * steps))
    losses = torch.zeros((steps, members) if members else steps, device=device)
    stopped: dict[int, int] = {}
    synchronize(device)
    start = time.perf_counter()
    done = 0
    for step in range(steps):
        loss = loss_at(step)
        optimizer.zero_grad()
        (loss.sum() if members else loss).backward()
        optimizer.step(lr_factor(step, steps, warmup))
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

"""The one training loop, shared by one model and by a stack of models trained as one.

AdamW (:mod:`benchsuite.train.optimizers`: torch's fused AdamW for one model, :class:`StackedAdamW`
for a stack) with linear warm-up then cosine decay to zero (or, under the plateau schedule, a
constant rate the stopping rule cuts on each plateau: :class:`Schedule`), minibatches from
:func:`batch_order`. Every ``CHECK_EVERY`` steps the loss trace is checked: a member whose loss
turned non-finite is reported (and, once all have, training stops early). With a :class:`StopRule`,
every ``every`` steps each member's validation score is read: a member whose score has not improved
by more than ``min_delta`` (relative) for ``patience`` checks in a row has converged and stops
(under the plateau schedule its rate is cut first, and its patience starts again); with
``keep_best`` the state of each member's best check is kept (the caller restores it); at the first
check at or after each of the rule's ``halve_at`` steps, members outside the better half of the grid
(a quarter at the second, ...) are pruned. Every member of every mixer follows the same rule.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from benchsuite.budget import Budget, RateSchedule
from benchsuite.train.checkpoint import Checkpoint, Resumable
from benchsuite.train.optimizers import Optimizer
from benchsuite.train.stopping import StopRule, Watch, converged_now, halved_now

CHECK_EVERY = 50


def batch_order(rng: np.random.Generator, n: int, steps: int, batch_size: int) -> torch.Tensor:
    """Minibatch indices (steps, batch): consecutive slices of fresh permutations per epoch."""
    per_epoch = max(n // batch_size, 1)
    epochs = math.ceil(steps / per_epoch)
    order = np.concatenate([rng.permutation(n)[: per_epoch * batch_size] for _ in range(epochs)])
    size = min(batch_size, n)
    return torch.from_numpy(order[: steps * size].reshape(steps, size).astype(np.int64))


@dataclass(frozen=True)
class Schedule:
    """The learning rate's factor at each step: a linear warm-up over ``warmup`` steps, then a
    cosine decay to zero at the most steps (``decay``), or a constant rate that the stopping
    rule cuts member by member on each plateau (the plateau schedule, :meth:`Optimizer.cut`)."""

    warmup: int
    decay: bool = True

    @classmethod
    def of(cls, budget: Budget) -> Schedule:
        """The budget's schedule."""
        return cls(budget.warmup, budget.schedule == RateSchedule.COSINE)

    def factor(self, step: int, steps: int) -> float:
        """The factor of step ``step`` (from 0) of at most ``steps``."""
        if step < self.warmup:
            return (step + 1) / self.warmup
        if not self.decay:
            return 1.0
        progress = (step - self.warmup) / max(steps - self.warmup, 1)
        return 0.5 * (1.0 + math.cos(math.pi * progress))


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (timings on a GPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Trace:
    """What training leaves: the loss of every step done, per member when stacked, and where each
    member stopped (diverged, converged or pruned) and had its best validation check."""

    losses: torch.Tensor  # (steps done,) or (steps done, members), float32 on the CPU
    stopped: dict[int, int]  # member -> steps done when its loss was found non-finite
    seconds_per_step: float
    converged: dict[int, int] = field(default_factory=dict)  # member -> steps done at its stop
    best_step: dict[int, int] = field(default_factory=dict)  # member -> step of its best check
    pruned: dict[int, int] = field(default_factory=dict)  # member -> steps done when halved away
    best_score: dict[int, float] = field(default_factory=dict)  # member -> its best check's score
    cuts: dict[int, list[int]] = field(default_factory=dict)  # member -> steps done at its cuts
    resumed_at: int = 0  # steps done when this process took over from a save (0: from the start)

    def steps(self, index: int) -> int:
        """The steps member ``index`` trained (all of the trace unless it stopped)."""
        marks = (self.stopped, self.converged, self.pruned)
        return min(mark.get(index, len(self.losses)) for mark in marks)

    def _done(self, index: int) -> torch.Tensor:
        """One member's losses (0 if unstacked), up to the step it stopped."""
        trace = self.losses if self.losses.dim() == 1 else self.losses[:, index]
        return trace[: self.steps(index)]

    def member(self, index: int) -> tuple[float, bool]:
        """(mean loss of the last 10 steps, every loss finite) of one member (0 if unstacked)."""
        trace = self._done(index)
        done = len(trace)
        return float(trace[-min(10, done) :].mean()), bool(torch.isfinite(trace).all())

    def slice(self, index: int) -> Trace:
        """The trace of one member of a stack, as if it had trained alone."""

        def one(marks: dict[int, int]) -> dict[int, int]:
            return {0: marks[index]} if index in marks else {}

        score = {0: self.best_score[index]} if index in self.best_score else {}
        cuts = {0: self.cuts[index]} if index in self.cuts else {}
        return Trace(
            self.losses[:, index],
            one(self.stopped),
            self.seconds_per_step,
            one(self.converged),
            one(self.best_step),
            one(self.pruned),
            score,
            cuts,
            self.resumed_at,
        )

    def curve(self, index: int, points: int = 64) -> list[float]:
        """The member's training loss, averaged over at most ``points`` equal windows."""
        trace = self._done(index)
        windows = torch.tensor_split(trace, min(points, max(len(trace), 1)))
        return [float(w.mean()) for w in windows if len(w)]


def train_loop(
    optimizer: Optimizer,
    loss_at: Callable[[int], torch.Tensor],
    steps: int,
    schedule: Schedule,
    device: torch.device,
    members: int = 0,
    on_stop: Callable[[int, int], None] | None = None,
    rule: StopRule | None = None,
    drop: Callable[[list[int]], None] | None = None,
    checkpoint: Checkpoint | None = None,
    kept: Resumable | None = None,
) -> Trace:
    """Train in place: ``loss_at(step)`` gives the loss (a scalar, or one per member of a stack
    still training, in the order of the members).

    ``on_stop(member, steps_done)`` is called once for each member that stops: its loss turned
    non-finite, or under ``rule`` its validation score stopped improving or a halving pruned it;
    the loop ends when every member has stopped. ``drop(training)``, when given, is called once
    the members that stopped at a step have been reported, with those still training: from then
    on ``loss_at`` and the rule's score give theirs only (a stack that drops stopped members does
    that much less work).

    ``checkpoint``: the loop's save file, loaded when it starts (it then goes on from the step
    saved, bit for bit as if never stopped) and written every few minutes and when it ends,
    with ``kept`` (what the caller keeps beside the loop, saved and restored with it).
    """
    losses = torch.zeros((steps, members) if members else steps, device=device)
    training = list(range(max(members, 1)))
    stopped: dict[int, int] = {}
    converged: dict[int, int] = {}
    pruned: dict[int, int] = {}
    cuts: dict[int, list[int]] = {}
    watches = [Watch() for _ in training]
    halvings = list(rule.settings.budget.halve_at) if rule is not None else []
    rung = 0  # halvings done

    def running() -> list[int]:
        return [m for m in training if m not in stopped and m not in converged and m not in pruned]

    def stop(member: int, done: int, marks: dict[int, int]) -> None:
        if member in running():
            marks[member] = done
            if on_stop is not None:
                on_stop(member, done)

    done = member_steps = 0
    ended = False

    def save(into: Checkpoint, end: bool) -> None:
        into.save(
            {
                "done": done,
                "ended": end,
                "member_steps": member_steps,
                "losses": losses[:done].cpu(),
                "training": training,
                "marks": (stopped, converged, pruned, cuts),
                "watches": watches,
                "halvings": (halvings, rung),
                "optimizer": optimizer.state(),
                "rng": torch.get_rng_state(),
                "kept": kept.state() if kept is not None else {},
            }
        )

    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        done, ended, member_steps = saved["done"], saved["ended"], saved["member_steps"]
        losses[:done] = saved["losses"].to(device)
        stopped, converged, pruned, cuts = saved["marks"]
        watches, (halvings, rung) = saved["watches"], saved["halvings"]
        if drop is not None and saved["training"] != training:
            drop(saved["training"])  # the stack of the members still training, as saved
        training = saved["training"]
        optimizer.restore(saved["optimizer"])
        torch.set_rng_state(saved["rng"])
        if kept is not None:
            kept.restore(saved["kept"])
    resumed_at = member_steps
    synchronize(device)
    start = time.perf_counter()
    for step in range(done, done if ended else steps):  # a loop saved at its end runs no step
        loss = loss_at(step)
        optimizer.zero_grad()
        (loss.sum() if members else loss).backward()
        optimizer.step(schedule.factor(step, steps))
        if members:
            losses[step, training] = loss.detach()
        else:
            losses[step] = loss.detach()
        done, member_steps = step + 1, member_steps + len(training)
        if done % CHECK_EVERY == 0:
            window = torch.isfinite(losses[done - CHECK_EVERY : done])
            finite = window.all(dim=0).tolist() if members else [bool(window.all())]
            for member in training:
                if not finite[member]:
                    stop(member, done, stopped)
        if rule is not None and (done % rule.settings.budget.eval_every == 0 or done == steps):
            check = converged_now(rule, watches, done, training, running())
            for member in check.converged:
                stop(member, done, converged)
            for member in check.cut:  # the optimiser holds the members still in ``training``
                optimizer.cut(training.index(member), rule.settings.budget.cut_factor)
                cuts.setdefault(member, []).append(done)
            while halvings and halvings[0] <= done < steps:  # none at the end: nothing saved
                halvings.pop(0)
                rung += 1
                if rule.on_halving is not None:
                    rule.on_halving(rung, done, {m: watches[m] for m in running()})
                for member in halved_now(watches, running(), list(converged), rung, rule.groups):
                    stop(member, done, pruned)
        still = running()
        if not still:
            break
        if drop is not None and len(still) < len(training):
            drop(still)
            training = still
        if checkpoint is not None and checkpoint.due():
            save(checkpoint, False)
    synchronize(device)
    elapsed = time.perf_counter() - start
    if checkpoint is not None and not ended and (checkpoint.written or checkpoint.due()):
        save(checkpoint, True)  # a long loop's end: kept until the job's record is stored
    checked = {m: w for m, w in enumerate(watches) if rule is not None and w.best_step}
    return Trace(
        losses[:done].float().cpu(),
        stopped,
        elapsed / max(member_steps - resumed_at, 1),  # this process's steps
        converged,
        {m: w.best_step for m, w in checked.items()},
        pruned,
        {m: w.best for m, w in checked.items()},
        cuts,
        saved["done"] if saved is not None else 0,
    )

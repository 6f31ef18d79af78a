"""The one training loop, shared by one model and by a stack of models trained as one.

AdamW with linear warm-up then cosine decay to zero (or, under the plateau schedule, a constant rate
the stopping rule cuts on each plateau: :class:`Schedule`), minibatches from :func:`batch_order`.
One model uses torch's fused AdamW (one kernel for all parameters: ~25% faster steps for tiny models
on the CPU); a stack of models (:mod:`benchsuite.train.batched`) uses :class:`StackedAdamW`, the
same update with a learning rate and weight decay per member. Either optimiser may keep a running
average of the iterates (:func:`average_weight`): the weights the caller checks and scores. Every
``CHECK_EVERY`` steps the loss
trace is checked: a member whose loss turned non-finite is reported (and, once all have, training
stops early). With a :class:`StopRule`, every ``every`` steps each member's validation score is
read: a member whose score has not improved by more than ``min_delta`` (relative) for ``patience``
checks in a row has converged and stops (under the plateau schedule its rate is cut first, and its
patience starts again); with ``keep_best`` the state of each member's best check is kept (the caller
restores it); at the first check at or after each of the rule's ``halve_at`` steps, members outside
the better half of the grid (a quarter at the second, ...) are pruned. Every member of every mixer
follows the same rule.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from benchsuite.budget import Budget, RateSchedule
from benchsuite.train.checkpoint import Checkpoint, Resumable
from benchsuite.train.stopping import StopRule, Watch, converged_now, halved_now

CHECK_EVERY = 50
BETAS, EPS = (0.9, 0.999), 1e-8  # torch's AdamW defaults, used by both optimisers
# Elements: where StackedAdamW starts each parameter's view in its flat buffer (64 bytes of
# float32). An odd offset broke torch.view_as_complex on a parameter (ssm on vision).
ALIGN = 16


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


def average_weight(step: int, steps: int) -> float:
    """The weight of step ``step``'s iterate (from 1) in a running average over about ``steps``
    steps: the plain mean of every iterate up to ``steps``, then an exponential moving average
    that gives the newest iterate the weight ``1 / steps``."""
    return 1.0 / min(step, steps)


@contextmanager
def holding(params: Sequence[torch.Tensor], values: Sequence[torch.Tensor]) -> Iterator[None]:
    """Inside the block, each parameter holds its counterpart in ``values`` (the storages are
    swapped, nothing is copied); after it, its own value again."""

    def swap() -> None:
        for param, value in zip(params, values, strict=True):
            if param is not value:
                param.data, value.data = value.data, param.data

    swap()
    try:
        yield
    finally:
        swap()


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (timings on a GPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Optimizer(Protocol):
    """What the loop needs of an optimiser: clear gradients, step at a scheduled lr factor, cut
    one member's rate (its position in the optimiser: 0 for one model)."""

    def zero_grad(self) -> None: ...

    def step(self, factor: float) -> None: ...

    def cut(self, position: int, factor: float) -> None: ...

    def state(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...

    def averaged(self) -> list[torch.Tensor]: ...


class FusedAdamW:
    """torch's fused AdamW for one model at ``lr * factor``, gradients clipped to a norm of
    ``clip`` first (0: no clipping); with ``average`` (steps, 0: none), the running average of
    its iterates (:func:`average_weight`)."""

    def __init__(
        self,
        parameters: Iterable[torch.Tensor],
        lr: float,
        weight_decay: float,
        clip: float = 0.0,
        average: int = 0,
    ) -> None:
        self.lr, self.clip, self.params = lr, clip, list(parameters)
        self.optimizer = torch.optim.AdamW(
            self.params, lr=lr, weight_decay=weight_decay, betas=BETAS, eps=EPS, fused=True
        )
        self.average_steps, self.steps = average, 0
        self.average = [p.detach().clone() for p in self.params] if average else []

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def step(self, factor: float) -> None:
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip, foreach=True)
        self.optimizer.param_groups[0]["lr"] = self.lr * factor
        self.optimizer.step()
        self.steps += 1
        if self.average:
            weight = average_weight(self.steps, self.average_steps)
            torch._foreach_lerp_(self.average, [p.detach() for p in self.params], weight)

    def averaged(self) -> list[torch.Tensor]:
        """The weights checked and scored: the running average, or the parameters themselves."""
        return self.average or self.params

    def cut(self, position: int, factor: float) -> None:
        """Multiply the learning rate by ``factor`` from the next step on."""
        self.lr *= factor

    def state(self) -> dict[str, Any]:
        """The parameters, the moments and the rate, to resume from."""
        return {
            "params": [p.detach().clone() for p in self.params],
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "lr": self.lr,
            "steps": self.steps,
            "average": [a.clone() for a in self.average],
        }

    @torch.no_grad()
    def restore(self, state: dict[str, Any]) -> None:
        """Back to a :meth:`state`, bit for bit."""
        for param, value in zip(self.params, state["params"], strict=True):
            param.copy_(value)
        self.optimizer.load_state_dict(state["optimizer"])
        self.lr, self.steps = state["lr"], state["steps"]
        for kept, value in zip(self.average, state["average"], strict=True):
            kept.copy_(value)


class StackedAdamW:
    """AdamW over stacked parameters (leading dimension = member), one lr and weight decay per
    member: the same update as torch's AdamW on one flat buffer.

    The parameters are rebound as views of one flat tensor and their gradients as views of
    another, so that every step is a dozen elementwise operations on all parameters at once
    (instead of a dozen per parameter tensor), zeroing the gradients is one fill and autograd
    accumulates into the flat gradient in place. Every value equals the per-tensor update's bit
    for bit (the gradient norms are summed in the same order). :meth:`keep` drops members that
    have stopped. With ``average`` (steps, 0: none), a third flat buffer holds the running
    average of the iterates (:func:`average_weight`).
    """

    def __init__(
        self,
        parameters: Sequence[torch.Tensor],
        lrs: Sequence[float],
        weight_decays: Sequence[float],
        clip: float = 0.0,
        average: int = 0,
    ) -> None:
        self.params, self.clip = list(parameters), clip
        self.lrs, self.decays = list(lrs), list(weight_decays)
        self.steps, self.average_steps = 0, average
        values = [p.detach().clone() for p in self.params]
        self._lay_out(values, [], [], values)

    def _lay_out(self, values: list[torch.Tensor], *kept: list[torch.Tensor]) -> None:
        """Rebind the parameters (stacked ``values``) as views of one new flat buffer, their
        gradients as views of another, with the two moments and the average given in ``kept``
        (one given empty: zero; the average's view of each parameter in :attr:`averages`)."""
        device, members = values[0].device, len(self.lrs)
        sizes = [v.numel() for v in values]
        # each tensor's chunk starts on an ALIGN boundary (zeros between: their gradient is
        # zero, so their update is too), as the tensor's own storage would
        starts = [0, *np.cumsum([-(-n // ALIGN) * ALIGN for n in sizes]).tolist()]
        self.flat = torch.zeros(starts[-1], dtype=values[0].dtype, device=device)
        self.grad = torch.zeros_like(self.flat)
        self.exp_avg, self.exp_avg_sq = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self.average = torch.zeros_like(self.flat) if self.average_steps else None
        buffers = [self.exp_avg, self.exp_avg_sq, self.average]
        member = torch.zeros(starts[-1], dtype=torch.long, device=device)
        self.chunks, self.spans, self.averages = [], [], []
        for index, (p, start, n) in enumerate(zip(self.params, starts[:-1], sizes, strict=True)):
            value, grad = self.flat[start : start + n], self.grad[start : start + n]
            with torch.no_grad():
                value.copy_(values[index].reshape(-1))
                for buffer, given in zip(buffers, kept, strict=True):
                    if buffer is not None and given:
                        buffer[start : start + n].copy_(given[index].reshape(-1))
            p.data = value.view_as(values[index])  # member-major chunk: contiguous views
            p.grad = grad.view_as(values[index])
            if self.average is not None:
                self.averages.append(self.average[start : start + n].view_as(values[index]))
            self.chunks.append(grad.view(members, -1))
            self.spans.append((start, n))
            member[start : start + n] = torch.arange(members, device=device).repeat_interleave(
                n // members
            )
        self.member = member
        self._rates()

    def _rates(self) -> None:
        """Each element's learning rate and decoupled decay (lr × weight decay), by member."""
        device = self.flat.device
        lr = torch.tensor(self.lrs, dtype=torch.float32, device=device)
        decay = torch.tensor(self.decays, dtype=torch.float32, device=device)
        self.lr, self.decay = lr[self.member], (lr * decay)[self.member]

    def cut(self, position: int, factor: float) -> None:
        """Multiply the learning rate of the member at ``position`` by ``factor``."""
        self.lrs[position] *= factor
        self._rates()

    def keep(self, positions: Sequence[int]) -> None:
        """Keep only the members at ``positions`` (in that order), with their parameters and
        moments: the others have stopped, and stepping them further would be wasted work. The
        parameters become new tensors (``params``, in the same order). Every kept member's
        update is the same as before, bit for bit, except that clipping norms are summed over
        fewer rows."""
        index = torch.tensor(list(positions), device=self.flat.device)
        members = len(self.lrs)

        def rows(buffer: torch.Tensor) -> list[torch.Tensor]:
            return [buffer[start : start + n].view(members, -1)[index] for start, n in self.spans]

        shapes = [(len(positions), *p.shape[1:]) for p in self.params]

        def stacked(buffer: torch.Tensor | None) -> list[torch.Tensor]:
            if buffer is None:
                return []
            return [r.reshape(shape) for r, shape in zip(rows(buffer), shapes, strict=True)]

        values = stacked(self.flat)
        kept = stacked(self.exp_avg), stacked(self.exp_avg_sq), stacked(self.average)
        self.lrs = [self.lrs[i] for i in positions]
        self.decays = [self.decays[i] for i in positions]
        # new leaf tensors: autograd keeps a leaf's shape from its first use, so a parameter
        # cannot shrink in place
        self.params = [
            torch.empty(0, dtype=v.dtype, device=v.device).requires_grad_() for v in values
        ]
        self._lay_out(values, *kept)

    def zero_grad(self) -> None:
        self.grad.zero_()

    def averaged(self) -> list[torch.Tensor]:
        """The weights checked and scored, one stacked tensor per parameter: views of the
        running average, or the parameters themselves."""
        return self.averages or self.params

    def state(self) -> dict[str, Any]:
        """The stacked parameters, the moments, the steps and each member's rates."""
        return {
            "flat": self.flat.detach().clone(),
            "exp_avg": self.exp_avg.clone(),
            "exp_avg_sq": self.exp_avg_sq.clone(),
            "average": None if self.average is None else self.average.clone(),
            "steps": self.steps,
            "lrs": list(self.lrs),
            "decays": list(self.decays),
        }

    @torch.no_grad()
    def restore(self, state: dict[str, Any]) -> None:
        """Back to a :meth:`state` of the same members (the parameters are views of ``flat``)."""
        for name in ("flat", "exp_avg", "exp_avg_sq", "average"):
            if state[name] is not None:
                getattr(self, name).copy_(state[name])
        self.steps = state["steps"]
        self.lrs, self.decays = list(state["lrs"]), list(state["decays"])
        self._rates()

    @torch.no_grad()
    def step(self, factor: float) -> None:
        self.steps += 1
        beta1, beta2 = BETAS
        grad = self.grad
        if self.clip:  # summed per tensor, then over tensors: the same sums as clip_grad_norm_
            squares = torch.stack([g.pow(2).sum(dim=1) for g in self.chunks]).sum(dim=0)
            grad = grad * (self.clip / (squares.sqrt() + 1e-6)).clamp(max=1.0)[self.member]
        shrink = self.decay * -factor
        shrink += 1.0
        self.flat.mul_(shrink)  # decoupled weight decay: p *= 1 - lr wd
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        correction1 = 1 - beta1**self.steps
        correction2 = math.sqrt(1 - beta2**self.steps)
        denom = self.exp_avg_sq.sqrt()
        denom.div_(correction2).add_(EPS)
        update = self.exp_avg / denom
        update.mul_(self.lr).mul_(factor / correction1)
        self.flat.sub_(update)
        if self.average is not None:
            self.average.lerp_(self.flat, average_weight(self.steps, self.average_steps))


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
    halvings = list(rule.settings.halve_at) if rule is not None else []
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
        if rule is not None and (done % rule.settings.every == 0 or done == steps):
            check = converged_now(rule, watches, done, training, running())
            for member in check.converged:
                stop(member, done, converged)
            for member in check.cut:  # the optimiser holds the members still in ``training``
                optimizer.cut(training.index(member), rule.settings.cut_factor)
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

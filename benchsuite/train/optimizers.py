"""The optimisers of the training loop (:mod:`benchsuite.train.fit`): torch's fused AdamW for one
model, :class:`StackedAdamW` for a stack of models trained as one (the same update with a learning
rate and weight decay per member), and the running average of the iterates either may keep
(:func:`average_weight`): the weights the caller checks and scores when the budget asks for it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np
import torch

BETAS, EPS = (0.9, 0.999), 1e-8  # torch's AdamW defaults, used by both optimisers
# Elements: where StackedAdamW starts each parameter's view in its flat buffer (64 bytes of
# float32). An odd offset broke torch.view_as_complex on a parameter (ssm on vision).
ALIGN = 16


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

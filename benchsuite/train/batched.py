"""Several models of one (track, mixer) trained as one: their parameters and buffers stacked along
a leading member dimension and trained with ``torch.vmap`` over ``torch.func.functional_call``.

Two uses: a job trains every config of its grid on its seed's data as one stack (the members
share data and minibatches and differ in learning rate and weight decay), and on a GPU
(``--batch-seeds``) the driver trains every seed x config of a cell as one stack (the members
differ in data and minibatch order too). Each member keeps its own AdamW state (the stacked
optimiser of :mod:`benchsuite.train.optimizers`) and its own divergence stop, so its result equals
training it alone within float tolerance (vmap may reorder reductions). A module vmap cannot run
(``.item()``, data-dependent control flow, in-place writes to captured tensors, random ops) raises
:class:`Unbatchable`, and the caller trains the members one by one instead.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, stack_module_state

from benchsuite.errors import one_line
from benchsuite.train.checkpoint import Checkpoint
from benchsuite.train.fit import Schedule, Trace, train_loop
from benchsuite.train.optimizers import StackedAdamW
from benchsuite.train.stopping import Stopping, StopRule

# Under vmap, torch runs operators without a batching rule (the CPU's fused attention kernel)
# once per member and warns; measured here that loop is still faster than unfused attention
warnings.filterwarnings("ignore", message="There is a performance drop because we have not yet")

Tensors = dict[str, torch.Tensor]
Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Unbatchable(Exception):
    """These models cannot be trained as one stack (the message says why)."""


@dataclasses.dataclass
class Member:
    """One model to train in a stack: its data, minibatch order (steps, batch) and config.

    Members that hold the very same ``x``, ``y`` and ``order`` objects share every minibatch.
    """

    model: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    order: torch.Tensor
    config: dict[str, float]
    stopping: Stopping | None = None  # early stopping on its validation split (None: none)


def _plain_tensors(model: nn.Module) -> list[torch.Tensor]:
    """Tensors a module holds as plain attributes (neither parameter nor buffer)."""
    return [
        value
        for module in model.modules()
        for value in vars(module).values()
        if isinstance(value, torch.Tensor)
    ]


def _stack_models(models: list[nn.Module]) -> tuple[nn.Module, Tensors, Tensors]:
    """A stateless template of the model and the members' stacked parameters and buffers."""
    tensors = [_plain_tensors(model) for model in models]
    for other in tensors[1:]:
        same = len(other) == len(tensors[0]) and all(
            a.shape == b.shape and torch.equal(a, b) for a, b in zip(other, tensors[0], strict=True)
        )
        if not same:
            raise Unbatchable("the model holds plain tensor attributes that differ between members")
    try:
        params, buffers = stack_module_state(models)
    except Exception as error:
        raise Unbatchable(f"cannot stack the members' parameters: {error}") from error
    return copy.deepcopy(models[0]).to("meta"), params, buffers


def _tied(model: nn.Module) -> bool:
    """Whether the model holds one tensor under several names (tied weights)."""
    named = [
        *model.named_parameters(remove_duplicate=False),
        *model.named_buffers(remove_duplicate=False),
    ]
    return len({id(tensor) for _, tensor in named}) < len(named)


def _vmapped(template: nn.Module, shared: bool, loss_of: Any = None) -> Any:
    """vmap of the template's forward (or of ``loss_of(prediction, target)`` after it) over the
    members; inputs are per member unless ``shared``.

    Tied weights are looked for only in a model that has them (the search walks every module on
    every call: a quarter of a quick sequence step)."""
    data = None if shared else 0
    tie = _tied(template)

    def forward(p: Tensors, b: Tensors, x: torch.Tensor) -> torch.Tensor:
        return functional_call(template, (p, b), (x,), tie_weights=tie)

    def loss(p: Tensors, b: Tensors, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return loss_of(forward(p, b, x), y)

    if loss_of is None:
        return torch.vmap(forward, in_dims=(0, 0, data))
    return torch.vmap(loss, in_dims=(0, 0, data, data))


@dataclasses.dataclass
class Stack:
    """Members trained as one: the template, the stacked state, how to feed it, and which of the
    original members it still holds (``ids``, in stack order: a stopped member leaves it)."""

    template: nn.Module
    params: Tensors
    buffers: Tensors
    shared: bool
    members: list[Member]
    ids: list[int] = dataclasses.field(default_factory=list)

    def at(self, member: int) -> int:
        """Where original member ``member`` sits in the stack now."""
        return self.ids.index(member)

    def keep(self, members: list[int], params: Tensors) -> None:
        """Keep only the original ``members`` (in that order), with ``params``: their stacked
        parameters, cut by the optimiser that owns their storage."""
        positions = [self.at(member) for member in members]
        self.members = [self.members[at] for at in positions]
        self.buffers = {name: value[positions] for name, value in self.buffers.items()}
        self.params, self.ids = params, list(members)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every member's minibatch of ``step``: (batch, ...) when shared, else (members, ...)."""
        if self.shared:
            index = self.members[0].order[step]
            return self.members[0].x[index], self.members[0].y[index]
        xs = torch.stack([m.x[m.order[step]] for m in self.members])
        ys = torch.stack([m.y[m.order[step]] for m in self.members])
        return xs, ys


def _stack(members: list[Member]) -> Stack:
    first = members[0]
    shared = all(m.x is first.x and m.y is first.y and m.order is first.order for m in members)
    template, params, buffers = _stack_models([m.model for m in members])
    return Stack(template, params, buffers, shared, members, list(range(len(members))))


def _try_vmap(stack: Stack, loss: Loss) -> None:
    """One stacked forward/backward and one stacked evaluation forward, leaving no trace."""
    scratch = {name: b.clone() for name, b in stack.buffers.items()}
    x, y = stack.batch(0)
    try:
        stack.template.train()
        _vmapped(stack.template, stack.shared, loss)(stack.params, scratch, x, y).sum().backward()
        stack.template.eval()
        with torch.inference_mode():
            _vmapped(stack.template, stack.shared)(stack.params, scratch, x)
    except Exception as error:
        raise Unbatchable(f"vmap cannot run this model: {one_line(error)}") from error
    finally:
        for p in stack.params.values():
            p.grad = None


def train_stack(
    members: list[Member],
    loss: Loss,
    schedule: Schedule,
    clip: float = 0.0,
    checkpoint: Checkpoint | None = None,
    average: int = 0,
) -> Trace:
    """Train the members as one stack, in place (each member's model ends with its own trained
    state); raises :class:`Unbatchable` before training when vmap cannot run the model. A member
    that stops (converged or diverged) leaves the stack: the others train on without it.
    ``checkpoint``: the stack's save (:mod:`benchsuite.train.checkpoint`); ``average``: the
    running average's steps (0: the members are checked and kept at their raw iterate)."""
    stack = _stack(members)
    _try_vmap(stack, loss)
    losses = _vmapped(stack.template, stack.shared, loss)
    frozen: dict[int, tuple[Tensors, Tensors]] = {}  # member -> its state when it stopped
    best: dict[int, tuple[Tensors, Tensors]] = {}  # member -> its state at its best check

    def weights() -> Tensors:  # what is checked and kept: the average, or the iterate
        return dict(zip(stack.params, optimizer.averaged(), strict=True))

    def state(member: int) -> tuple[Tensors, Tensors]:
        at = stack.at(member)
        return _slice(weights(), at), _slice(stack.buffers, at)

    def loss_at(step: int) -> torch.Tensor:
        return losses(stack.params, stack.buffers, *stack.batch(step))

    def on_stop(member: int, _done: int) -> None:
        frozen[member] = state(member)

    def snapshot(member: int) -> None:
        best[member] = state(member)

    optimizer = StackedAdamW(
        list(stack.params.values()),
        [m.config["lr"] for m in members],
        [m.config.get("weight_decay", 0.0) for m in members],
        clip,
        average,
    )

    def drop(still: list[int]) -> None:
        optimizer.keep([stack.at(member) for member in still])
        stack.keep(still, dict(zip(stack.params, optimizer.params, strict=True)))

    stack.template.train()
    trace = train_loop(
        optimizer,
        loss_at,
        members[0].order.shape[0],
        schedule,
        members[0].x.device,
        members=len(members),
        on_stop=on_stop,
        rule=_stop_rule(stack, weights, snapshot),
        drop=drop,
        checkpoint=checkpoint,
        kept=_Kept(stack, frozen, best),
    )
    for index, member in enumerate(members):
        _load(member.model, best.get(index) or frozen.get(index) or state(index))
    return trace


@dataclasses.dataclass
class _Kept:
    """What :func:`train_stack` keeps beside its loop: the states of the members that stopped
    and of each member's best check, and the stack's buffers."""

    stack: Stack
    frozen: dict[int, tuple[Tensors, Tensors]]
    best: dict[int, tuple[Tensors, Tensors]]

    def state(self) -> dict[str, Any]:
        buffers = {name: value.detach().clone() for name, value in self.stack.buffers.items()}
        return {"frozen": self.frozen, "best": self.best, "buffers": buffers}

    @torch.no_grad()
    def restore(self, state: dict[str, Any]) -> None:
        self.frozen.update(state["frozen"])
        self.best.update(state["best"])
        for name, value in state["buffers"].items():
            self.stack.buffers[name].copy_(value)


def _stop_rule(
    stack: Stack, weights: Callable[[], Tensors], snapshot: Callable[[int], None]
) -> StopRule | None:
    """The members' early stopping as one rule: the validation score of every member still in
    the stack (at its ``weights()``) from one stacked forward pass (the members must all stop
    early or none)."""
    stoppings = [m.stopping for m in stack.members]
    if stoppings[0] is None:
        if any(s is not None for s in stoppings):
            raise Unbatchable("only some members stop early")
        return None
    ruled: list[Stopping] = [s for s in stoppings if s is not None]
    shared = all(s.x is ruled[0].x for s in ruled)
    if not shared and len({tuple(s.x.shape) for s in ruled}) > 1:
        raise Unbatchable("the members' validation splits differ in shape")
    forward = _vmapped(stack.template, shared)
    examples, size = len(ruled[0].x), ruled[0].budget.eval_batch_size

    def score() -> list[float]:
        now = [m.stopping for m in stack.members if m.stopping is not None]
        x = now[0].x if shared else torch.stack([s.x for s in now])
        stack.template.eval()
        with torch.inference_mode():
            parts = [
                forward(
                    weights(),
                    stack.buffers,
                    x[start : start + size] if shared else x[:, start : start + size],
                )
                for start in range(0, examples, size)
            ]
            prediction = torch.cat(parts, dim=1)
        stack.template.train()
        return [s.score(prediction[m]) for m, s in enumerate(now)]

    grids: dict[int, int] = {}  # each seed's configs share one Stopping: one grid to halve
    groups = [grids.setdefault(id(s), len(grids)) for s in ruled]
    return ruled[0].rule(score, snapshot, groups=groups)


def _slice(stacked: Tensors, member: int) -> Tensors:
    return {name: value[member].detach().clone() for name, value in stacked.items()}


@torch.no_grad()
def _load(model: nn.Module, state: tuple[Tensors, Tensors]) -> None:
    """Copy one member's trained parameters and buffers into its own model."""
    values = {**state[0], **state[1]}
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        tensor.copy_(values[name])

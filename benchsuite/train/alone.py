"""One model trained alone: the path of a config whose model vmap cannot run (the configs of a
grid then train one after the other), and its predictions on a whole split."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch

from benchsuite.specs import Track
from benchsuite.train.batched import Loss, Member
from benchsuite.train.checkpoint import Checkpoint
from benchsuite.train.encoder import Encoder
from benchsuite.train.fit import Schedule, Trace, train_loop
from benchsuite.train.halving import HalvingMark, recorder
from benchsuite.train.optimizers import FusedAdamW, holding


def fit(
    model: Encoder,
    track: Track,
    member: Member,
    schedule: Schedule,
    clip: float = 0.0,
    loss: Loss | None = None,
    marks: dict[int, HalvingMark] | None = None,
    checkpoint: Checkpoint | None = None,
    average: int = 0,
) -> Trace:
    """Train one model in place in its minibatch order at its config (gradient norm clipped to
    ``clip`` when it is not 0); ``marks``, when given, receives its :class:`HalvingMark` at each
    halving of the budget it is still training at (halving number, from 1 -> mark);
    ``checkpoint``: its save (:mod:`benchsuite.train.checkpoint`); ``average``: the running
    average's steps (0: the model is checked and kept at its raw iterate).

    On a GPU the forward pass runs under bf16 autocast when the track allows it.
    """
    x, y, order = member.x, member.y, member.order
    criterion = loss or track.loss
    autocast = torch.autocast(
        x.device.type,
        dtype=torch.bfloat16,
        enabled=x.device.type == "cuda" and track.mixed_precision,
    )

    def loss_at(step: int) -> torch.Tensor:
        index = order[step]
        with autocast:
            return criterion(model(x[index]), y[index])

    optimizer = FusedAdamW(
        model.parameters(),
        member.config["lr"],
        member.config.get("weight_decay", 0.0),
        clip,
        average,
    )
    best: list[dict[str, torch.Tensor]] = []  # the state of the best validation check

    def weighed() -> AbstractContextManager[None]:
        """Inside the block, the model holds the weights checked and kept."""
        return holding(optimizer.params, optimizer.averaged())

    def state() -> dict[str, torch.Tensor]:
        with weighed():
            return {k: v.detach().clone() for k, v in model.state_dict().items()}

    rule = None
    if (stopping := member.stopping) is not None:

        def score() -> list[float]:
            with weighed():
                value = stopping.score(predict(model, stopping.x, stopping.budget.eval_batch_size))
            model.train()
            return [value]

        def snapshot(_member: int) -> None:
            best[:] = [state()]

        rule = stopping.rule(score, snapshot, recorder(marks, state, best))
    model.train()
    trace = train_loop(
        optimizer,
        loss_at,
        order.shape[0],
        schedule,
        x.device,
        rule=rule,
        checkpoint=checkpoint,
        kept=_LoneKept(model, best, marks),
    )
    model.load_state_dict(best[0] if best else state())
    return trace


@dataclass
class _LoneKept:
    """What :func:`fit` keeps beside its loop: the state of the best check, the halving marks,
    the model's buffers."""

    model: Encoder
    best: list[dict[str, torch.Tensor]]
    marks: dict[int, HalvingMark] | None

    def state(self) -> dict[str, Any]:
        buffers = {name: b.detach().clone() for name, b in self.model.named_buffers()}
        return {"best": self.best, "marks": dict(self.marks or {}), "buffers": buffers}

    @torch.no_grad()
    def restore(self, state: dict[str, Any]) -> None:
        self.best[:] = state["best"]
        if self.marks is not None:
            self.marks.update(state["marks"])
        buffers = dict(self.model.named_buffers())
        for name, value in state["buffers"].items():
            buffers[name].copy_(value)


@torch.inference_mode()
def predict(model: Encoder, x: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Predictions on a whole split, in batches."""
    model.eval()
    return torch.cat([model(x[i : i + batch_size]) for i in range(0, len(x), batch_size)])

"""Successive halving inside each seed (docs/protocol.md, "Pruning the grid") for configs that
trained one after the other (a model vmap cannot run): what each records at the halvings, and the
halvings applied after the fact, so that they are pruned as a stack prunes while training (the
rule itself: :func:`benchsuite.train.stopping.halved_now`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from benchsuite.train.stopping import Halving, Watch, halved_now

if TYPE_CHECKING:
    from torch import nn

    from benchsuite.train.fit import Trace


@dataclass
class HalvingMark:
    """What a model trained alone was at a halving of its grid: the steps done, its best
    validation score so far, that check's step, and the state it is scored in if pruned there."""

    done: int
    best: float
    best_step: int
    state: dict[str, torch.Tensor]


def recorder(
    marks: dict[int, HalvingMark] | None,
    current: Callable[[], dict[str, torch.Tensor]],
    best: list[dict[str, torch.Tensor]],
) -> Halving:
    """The rule's ``on_halving`` for a model trained alone: at each halving it is still training
    at, its mark in ``marks`` (its state at its best check so far, held in ``best``, or its
    ``current()`` state before any)."""

    def on_halving(rung: int, done: int, live: dict[int, Watch]) -> None:
        if marks is not None and 0 in live:
            state = best[0] if best else current()
            marks[rung] = HalvingMark(done, live[0].best, live[0].best_step, state)

    return on_halving


def halve_one_by_one(
    traces: list[Trace], marks: list[dict[int, HalvingMark]], models: list[nn.Module]
) -> None:
    """Apply the budget's halvings to configs that trained one after the other, as a stack would
    have: at each halving, those still training (not stopped, not pruned) and those that had
    converged are ranked by their best score so far; each one pruned gets the state, trace, best
    step and rate cuts it had there."""
    pruned: set[int] = set()
    for rung in sorted({number for mark in marks for number in mark}):
        done = next(mark[rung].done for mark in marks if rung in mark)
        live = [i for i, mark in enumerate(marks) if rung in mark and i not in pruned]
        finished = [
            i
            for i, trace in enumerate(traces)
            if i not in pruned and trace.converged.get(0, done + 1) <= done
        ]
        watches = [
            Watch(marks[i][rung].best)
            if i in live
            else Watch(traces[i].best_score.get(0, -math.inf))
            for i in range(len(traces))
        ]
        for i in halved_now(watches, live, finished, rung):
            pruned.add(i)
            mark, trace = marks[i][rung], traces[i]
            models[i].load_state_dict(mark.state)
            trace.pruned, trace.stopped, trace.converged = {0: done}, {}, {}  # live until then
            trace.best_step = {0: mark.best_step} if mark.best_step else {}
            trace.best_score = {0: mark.best} if mark.best_step else {}
            kept = [at for at in trace.cuts.get(0, []) if at <= done]
            trace.cuts = {0: kept} if kept else {}

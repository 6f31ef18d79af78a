"""What the hand-written loops of ``overhead.py``, ``handloop.py`` and ``schedules.py`` share: one
job's data, minibatch order and loss as plain tensors, one plain training step, the suite's
learning-rate schedule, and the validation and test metrics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from benchsuite.budget import Budget
from benchsuite.records import Job
from benchsuite.registry import Registry
from benchsuite.seeds import Streams
from benchsuite.specs import Mixer, Track, TrackData
from benchsuite.train.fit import batch_order
from benchsuite.train.job import load_data


@dataclass
class Plain:
    """One job's track, mixer, data, budget, training tensors, minibatch order and loss."""

    track: Track
    mixer: Mixer
    data: TrackData
    budget: Budget
    x: torch.Tensor
    y: torch.Tensor
    order: torch.Tensor
    loss_of: Any


def plain(job: Job, registry: Registry) -> Plain:
    """The job's data and minibatch order (the suite's own, so both sides see the same batches)."""
    track, mixer = registry.tracks[job.track], registry.mixers[job.mixer]
    data, budget = load_data(track, job), job.budget
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    order = batch_order(
        Streams(job.salt, job.track, job.seed).rng("order"), len(x), budget.steps, budget.batch_size
    )
    return Plain(
        track, mixer, data, budget, x, y, order, track.criterion(data, dict(job.track_options))
    )


def step(model: torch.nn.Module, job: Plain, index: int, optimizer: torch.optim.Optimizer) -> None:
    """One plain training step on minibatch ``index``, gradients clipped as the budget says."""
    batch = job.order[index]
    loss = job.loss_of(model(job.x[batch]), job.y[batch])
    optimizer.zero_grad()
    loss.backward()
    if job.budget.clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), job.budget.clip)
    optimizer.step()


def cosine(warmup: int, steps: int) -> Callable[[int], float]:
    """The suite's learning-rate factor: linear warm-up, then cosine decay to zero at ``steps``."""

    def factor(index: int) -> float:
        if index < warmup:
            return (index + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (index - warmup) / max(steps - warmup, 1)))

    return factor


def validation_score(model: torch.nn.Module, job: Plain) -> float:
    """The model's primary metric on the job's validation split, signed so that higher is better
    (predicted in batches of the budget's ``eval_batch_size``)."""
    metric = job.data.metric or job.track.metric
    x_val, y_val = torch.from_numpy(job.data.x_val), torch.from_numpy(job.data.y_val)
    size = job.budget.eval_batch_size
    model.eval()
    with torch.no_grad():
        prediction = torch.cat([model(x_val[i : i + size]) for i in range(0, len(x_val), size)])
    model.train()
    sign = 1.0 if metric.higher_is_better else -1.0
    return sign * float(job.track.evaluate(prediction, y_val, job.data)[metric.name])


def test_metric(model: torch.nn.Module, job: Plain) -> float:
    """The model's primary metric on the job's test split."""
    metric = job.data.metric or job.track.metric
    model.eval()
    with torch.no_grad():
        prediction = model(torch.from_numpy(job.data.x_test))
    scores = job.track.evaluate(prediction, torch.from_numpy(job.data.y_test), job.data)
    return float(scores[metric.name])

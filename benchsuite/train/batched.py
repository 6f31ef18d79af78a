"""The evaluation seeds of one (track, mixer, config) trained together as one batched model.

Each seed's model is built exactly as :func:`benchsuite.train.build_model` builds it; the seeds'
parameters and buffers are stacked along a leading seed dimension and trained with
``torch.vmap`` over ``torch.func.functional_call``. Each seed keeps its own data, minibatch order
and AdamW state (AdamW is elementwise, so one optimizer over stacked tensors is the per-seed
optimizer), so the per-seed metrics equal :func:`benchsuite.train.run_job`'s within float
tolerance (vmap may reorder reductions). The point is GPU throughput for many tiny models; a
module vmap cannot run (``.item()``, data-dependent control flow, in-place writes to captured
tensors, random ops) or seeds whose data differ in shape fall back to ``run_job`` one by one.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state

from benchsuite.errors import one_line
from benchsuite.plan.stages import EVAL
from benchsuite.seeds import Streams
from benchsuite.specs import Mixer, Track, TrackData
from benchsuite.train.fit import batch_order, train_loop
from benchsuite.train.job import (
    build_model,
    is_diverged,
    job_budget,
    load_data,
    measure_model,
    result_fields,
    run_job,
)
from benchsuite.train.measures import parameter_counts

if TYPE_CHECKING:
    from benchsuite.plan.jobs import Job

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
Tensors = dict[str, torch.Tensor]


class Unbatchable(Exception):
    """These jobs cannot be trained as one batched model (the message says why)."""


def run_jobs_batched(jobs: list[Job], track: Track, mixer: Mixer) -> list[dict[str, Any]]:
    """``run_job``'s result fields for each job (in order), training all seeds as one model.

    ``jobs`` must differ only in ``seed`` (and ``measure``). ``costs["batched_seeds"]`` is the
    number of seeds trained together (1.0 when it fell back to ``run_job`` one by one, which is
    logged with the reason); when batched, ``seconds_per_step`` is the batched step time divided
    by that number.
    """
    _check_same_cell(jobs)
    reason = "fewer than two seeds" if len(jobs) < 2 else ""
    if not reason:
        try:
            return _run_batched(jobs, track, mixer)
        except Unbatchable as error:
            reason = str(error)
    log.info("%s: seeds trained one by one: %s", jobs[0].label if jobs else "-", reason)
    results = [run_job(job, track, mixer) for job in jobs]
    for result in results:
        result["costs"]["batched_seeds"] = 1.0
    return results


def _check_same_cell(jobs: list[Job]) -> None:
    def cell(job: Job) -> dict[str, Any]:
        return {**dataclasses.asdict(job), "seed": None, "measure": None}

    if any(cell(job) != cell(jobs[0]) for job in jobs[1:]):
        raise ValueError("batched jobs must differ only in their seed")
    if len({job.seed for job in jobs}) != len(jobs):
        raise ValueError("batched jobs must have distinct seeds")


def _stack_data(datas: list[TrackData], device: torch.device) -> dict[str, torch.Tensor]:
    """Each split's x and y stacked over seeds, (seeds, n, ...); Unbatchable if shapes differ."""
    stacked = {}
    for split in SPLITS:
        for part in ("x", "y"):
            arrays = [getattr(data, f"{part}_{split}") for data in datas]
            if any(a.shape != arrays[0].shape or a.dtype != arrays[0].dtype for a in arrays):
                raise Unbatchable(f"seeds have different {part}_{split} shapes or dtypes")
            stacked[f"{part}_{split}"] = torch.stack(
                [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
            ).to(device)
    return stacked


def _plain_tensors(model: nn.Module) -> list[torch.Tensor]:
    """Tensors a module holds as plain attributes (neither parameter nor buffer)."""
    return [
        value
        for module in model.modules()
        for value in vars(module).values()
        if isinstance(value, torch.Tensor)
    ]


def _stack_models(models: list[nn.Module]) -> tuple[nn.Module, Tensors, Tensors]:
    """A stateless template of the model and the seeds' stacked parameters and buffers."""
    tensors = [_plain_tensors(model) for model in models]
    for other in tensors[1:]:
        same = len(other) == len(tensors[0]) and all(
            a.shape == b.shape and torch.equal(a, b) for a, b in zip(other, tensors[0], strict=True)
        )
        if not same:
            raise Unbatchable("the model holds plain tensor attributes that differ between seeds")
    try:
        params, buffers = stack_module_state(models)
    except Exception as error:
        raise Unbatchable(f"cannot stack the seeds' parameters: {error}") from error
    return copy.deepcopy(models[0]).to("meta"), params, buffers


def _try_vmap(template: nn.Module, track: Track, params: Tensors, buffers: Tensors,
              x: torch.Tensor, y: torch.Tensor, x_eval: torch.Tensor) -> None:  # fmt: skip
    """One batched forward/backward and one batched evaluation forward, leaving no trace."""
    scratch = {name: b.clone() for name, b in buffers.items()}
    try:
        template.train()
        _losses(template, track, params, scratch, x, y).sum().backward()
        template.eval()
        with torch.inference_mode():
            _forward(template, params, scratch, x_eval)
    except Exception as error:
        raise Unbatchable(f"vmap cannot run this model: {one_line(error)}") from error
    finally:
        for p in params.values():
            p.grad = None


def _losses(template: nn.Module, track: Track, params: Tensors, buffers: Tensors,
            x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """Each seed's training loss on its own batch, shape (seeds,)."""

    def one(p: Tensors, b: Tensors, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return track.loss(functional_call(template, (p, b), (xs,)), ys)

    return torch.vmap(one)(params, buffers, x, y)


def _forward(template: nn.Module, params: Tensors, buffers: Tensors,
             x: torch.Tensor) -> torch.Tensor:  # fmt: skip
    def one(p: Tensors, b: Tensors, xs: torch.Tensor) -> torch.Tensor:
        return functional_call(template, (p, b), (xs,))

    return torch.vmap(one)(params, buffers, x)


@dataclasses.dataclass
class _Trained:
    """What batched training leaves: each seed's final state and its loss summary."""

    params: Tensors
    buffers: Tensors
    final_loss: list[float]
    finite: list[bool]
    seconds_per_step: float


def _fit(template: nn.Module, track: Track, params: Tensors, buffers: Tensors,
         x: torch.Tensor, y: torch.Tensor, order: torch.Tensor,
         config: dict[str, float], warmup_fraction: float) -> _Trained:  # fmt: skip
    """The shared training loop over stacked seeds; a seed whose loss turns non-finite keeps its
    state from then."""
    seeds, steps = order.shape[:2]
    rows = torch.arange(seeds, device=x.device)[:, None]
    frozen: dict[int, tuple[Tensors, Tensors]] = {}  # seed -> (params, buffers) when it stopped

    def loss_at(step: int) -> torch.Tensor:
        index = order[:, step]
        return _losses(template, track, params, buffers, x[rows, index], y[rows, index])

    def on_stop(seed: int, _done: int) -> None:
        frozen[seed] = (_slice(params, seed), _slice(buffers, seed))

    template.train()
    trace = train_loop(params.values(), loss_at, steps, config, warmup_fraction, x.device,
                       members=seeds, on_stop=on_stop)  # fmt: skip
    final_params = {name: p.detach().clone() for name, p in params.items()}
    final_buffers = {name: b.clone() for name, b in buffers.items()}
    for seed, (seed_params, seed_buffers) in frozen.items():
        for stacked, state in ((final_params, seed_params), (final_buffers, seed_buffers)):
            for name, value in state.items():
                stacked[name][seed] = value
    summary = [trace.member(seed) for seed in range(seeds)]
    return _Trained(final_params, final_buffers, [loss for loss, _ in summary],
                    [finite for _, finite in summary], trace.seconds_per_step / seeds)  # fmt: skip


def _slice(stacked: Tensors, seed: int) -> Tensors:
    return {name: value[seed].detach().clone() for name, value in stacked.items()}


@torch.inference_mode()
def _predict(template: nn.Module, trained: _Trained, x: torch.Tensor,
             batch_size: int) -> torch.Tensor:  # fmt: skip
    """train.predict for every seed at once: (seeds, n, ...)."""
    template.eval()
    return torch.cat(
        [
            _forward(template, trained.params, trained.buffers, x[:, i : i + batch_size])
            for i in range(0, x.shape[1], batch_size)
        ],
        dim=1,
    )


def _run_batched(jobs: list[Job], track: Track, mixer: Mixer) -> list[dict[str, Any]]:
    first = jobs[0]
    torch.set_num_threads(first.threads)
    device = torch.device(first.device)
    budget = job_budget(first)
    datas = [load_data(track, job) for job in jobs]
    stacked = _stack_data(datas, device)
    models = [
        build_model(track, mixer, data, job).to(device)
        for data, job in zip(datas, jobs, strict=True)
    ]
    template, params, buffers = _stack_models(models)
    x_train, y_train = stacked["x_train"], stacked["y_train"]
    order = torch.stack([
        batch_order(Streams(job.salt, job.track, job.seed).rng("order"), x_train.shape[1],
                    budget.steps, budget.batch_size)
        for job in jobs
    ]).to(device)  # fmt: skip
    rows = torch.arange(len(jobs), device=device)[:, None]
    first_batch = order[:, 0]
    _try_vmap(template, track, params, buffers, x_train[rows, first_batch],
              y_train[rows, first_batch], stacked["x_val"][:, :2])  # fmt: skip

    trained = _fit(template, track, params, buffers, x_train, y_train, order, dict(first.config),
                   budget.warmup_fraction)  # fmt: skip
    splits = ["val", "test"] if first.stage == EVAL else ["val"]
    predictions = {
        split: _predict(template, trained, stacked[f"x_{split}"], budget.eval_batch_size)
        for split in splits
    }
    results = []
    for seed, (job, data, model) in enumerate(zip(jobs, datas, models, strict=True)):
        metrics: dict[str, float] = {"train_loss": trained.final_loss[seed]}
        for split in splits:
            scores = track.evaluate(predictions[split][seed], stacked[f"y_{split}"][seed], data)
            for name, value in scores.items():
                metrics[f"{split}.{name}"] = float(value)
        costs = {
            **parameter_counts(model, model.mixers()),
            "seconds_per_step": trained.seconds_per_step,
            "examples_per_second": budget.batch_size / max(trained.seconds_per_step, 1e-12),
            "batched_seeds": float(len(jobs)),
        }
        probes: dict[str, float] = {}
        if job.measure:
            _load_seed(model, trained, seed)
            probes = measure_model(model, mixer, x_train[seed], data, costs)
        diverged = is_diverged(track, job, data, metrics, trained.finite[seed])
        results.append(result_fields(metrics, diverged, probes, costs, data))
    return results


@torch.no_grad()
def _load_seed(model: nn.Module, trained: _Trained, seed: int) -> None:
    """Copy one seed's trained parameters and buffers into its own (unstacked) model."""
    state = {**trained.params, **trained.buffers}
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        tensor.copy_(state[name][seed])

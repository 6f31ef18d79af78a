"""One job: its data, its model, training, scoring and measuring; a Job in, metrics out. Never
prints.

Everything random comes from the job's named seed streams, and the torch thread count is fixed per
job, so the same job gives bit-identical metrics on any executor.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from benchsuite.errors import PluginError
from benchsuite.plan.stages import EVAL
from benchsuite.seeds import Streams
from benchsuite.specs import Budget, Mixer, Track, TrackData
from benchsuite.train.encoder import Encoder, build_encoder
from benchsuite.train.fit import batch_order, train_loop
from benchsuite.train.measures import forward_flops, parameter_counts
from benchsuite.train.preflight import check_mixer

if TYPE_CHECKING:
    from benchsuite.plan.jobs import Job


@lru_cache(maxsize=64)
def _cached_load(track: Track, options_json: str, preset: str, data_dir: str | None,
                 salt: str, seed: int) -> TrackData:  # fmt: skip
    import json

    return track.load(Streams(salt, track.name, seed), json.loads(options_json), preset, data_dir)


def load_data(track: Track, job: Job) -> TrackData:
    """The track's data for the job's seed (cached per process)."""
    import json

    options = json.dumps(dict(job.track_options), sort_keys=True)
    return _cached_load(track, options, job.preset, job.data_dir, job.salt, job.seed)


def job_budget(job: Job) -> Budget:
    """The training budget the job carries."""
    return Budget(**dict(job.budget), grid=())


def build_model(track: Track, mixer: Mixer, data: TrackData, job: Job) -> Encoder:
    """The shared encoder with the job's mixer in every block, initialised from the init streams."""
    budget = job_budget(job)
    streams = Streams(job.salt, job.track, job.seed)
    build = mixer.builder()
    options = dict(job.track_options)
    return build_encoder(
        make={
            "tokenizer": lambda: track.tokenizer(data, budget.dim, options),
            "head": lambda: track.head(data, budget.dim, options),
        },
        make_mixer=lambda: build(data.tokens, budget.dim, **dict(job.mixer_options)),
        dim=budget.dim,
        depth=budget.depth,
        mlp_ratio=budget.mlp_ratio,
        seed_of=lambda name: streams.int_seed(f"init/{name}"),
    )


def fit(model: Encoder, track: Track, x: torch.Tensor, y: torch.Tensor, order: torch.Tensor,
        config: dict[str, float], budget: Budget) -> tuple[float, bool, float]:  # fmt: skip
    """Train ``model`` in place in the given batch order; (final loss, finite, seconds per step).

    On a GPU the forward pass runs under bf16 autocast when the track allows it.
    """
    autocast = torch.autocast(
        x.device.type, dtype=torch.bfloat16,
        enabled=x.device.type == "cuda" and track.mixed_precision,
    )  # fmt: skip

    def loss_at(step: int) -> torch.Tensor:
        index = order[step]
        with autocast:
            return track.loss(model(x[index]), y[index])

    model.train()
    trace = train_loop(model.parameters(), loss_at, order.shape[0], config,
                       budget.warmup_fraction, x.device)  # fmt: skip
    final_loss, finite = trace.member(0)
    return final_loss, finite, trace.seconds_per_step


@torch.inference_mode()
def predict(model: Encoder, x: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Predictions on a whole split, in batches."""
    model.eval()
    return torch.cat([model(x[i : i + batch_size]) for i in range(0, len(x), batch_size)])


def capture_mixer_inputs(model: Encoder, x: torch.Tensor) -> list[torch.Tensor]:
    """The tokens each block's mixer receives for input ``x``."""
    captured: list[torch.Tensor] = []
    handles = [
        m.register_forward_pre_hook(lambda _m, args: captured.append(args[0].detach()))
        for m in model.mixers()
    ]
    try:
        predict(model, x, len(x))
    finally:
        for handle in handles:
            handle.remove()
    return captured


def is_diverged(track: Track, job: Job, data: TrackData, metrics: dict[str, float],
                finite: bool) -> bool:  # fmt: skip
    """A non-finite loss or score, or (on test) a score worse than the trivial predictor's."""
    scored = metrics[f"{'test' if job.stage == EVAL else 'val'}.{track.metric.name}"]
    if not finite or not math.isfinite(scored):
        return True
    if data.cap is None or job.stage != EVAL:
        return False
    return bool(scored < data.cap if track.metric.higher_is_better else scored > data.cap)


def measure_model(model: Encoder, mixer: Mixer, x_train: torch.Tensor, data: TrackData,
                  costs: dict[str, float]) -> dict[str, float]:  # fmt: skip
    """FLOPs per example (added to ``costs``) and the mechanism probes of a trained model."""
    from benchsuite.train.probes import measure, probes_for

    sample = x_train[: min(len(x_train), 8)]
    costs["flops_per_example"] = forward_flops(model, sample) / len(sample)
    inputs = capture_mixer_inputs(model, to_device(data.x_test[:64], x_train.device))
    return measure(model.mixers(), inputs, *probes_for(mixer.signature))


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A numpy split as a tensor on ``device`` (no copy on the CPU)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def result_fields(metrics: dict[str, float], diverged: bool, probes: dict[str, float],
                  costs: dict[str, float], data: TrackData) -> dict[str, Any]:  # fmt: skip
    """The fields of a RunRecord that a training run fills in."""
    return {
        "metrics": metrics,
        "diverged": diverged,
        "probes": probes,
        "costs": costs,
        "data_description": data.description,
        "data_verified": data.verified,
        "cap": data.cap,
    }


def run_job(job: Job, track: Track, mixer: Mixer) -> dict[str, Any]:
    """Train and score one job; returns the result fields of a RunRecord (raises on failure)."""
    torch.set_num_threads(job.threads)
    device = torch.device(job.device)
    budget = job_budget(job)
    data = load_data(track, job)
    broken = check_mixer(mixer, data.tokens, budget.dim, dict(job.mixer_options))
    if broken:
        raise PluginError(broken)
    model = build_model(track, mixer, data, job).to(device)
    streams = Streams(job.salt, job.track, job.seed)
    x_train, y_train = to_device(data.x_train, device), to_device(data.y_train, device)
    order = batch_order(streams.rng("order"), len(x_train), budget.steps, budget.batch_size)
    final_loss, finite, seconds_per_step = fit(model, track, x_train, y_train, order.to(device),
                                               dict(job.config), budget)  # fmt: skip

    splits = {"val": (data.x_val, data.y_val)}
    if job.stage == EVAL:
        splits["test"] = (data.x_test, data.y_test)
    metrics: dict[str, float] = {"train_loss": final_loss}
    for split, (xs, ys) in splits.items():
        prediction = predict(model, to_device(xs, device), budget.eval_batch_size)
        for name, value in track.evaluate(prediction, to_device(ys, device), data).items():
            metrics[f"{split}.{name}"] = float(value)

    costs = {
        **parameter_counts(model, model.mixers()),
        "seconds_per_step": seconds_per_step,
        "examples_per_second": budget.batch_size / max(seconds_per_step, 1e-12),
    }
    probes = measure_model(model, mixer, x_train, data, costs) if job.measure else {}
    diverged = is_diverged(track, job, data, metrics, finite)
    return result_fields(metrics, diverged, probes, costs, data)

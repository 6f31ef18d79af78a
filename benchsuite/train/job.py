"""One job: every config of the grid trained on one seed's data, the config that scores best on
that seed's validation split chosen, and its test metrics, probes and costs; a Job in, the fields
of a record out. Never prints.

The configs of a job share the seed's data, minibatch order and initial weights; they train as one
stack (:mod:`benchsuite.train.batched`) when vmap can run the model, else one by one. Everything
random comes from the job's named seed streams, and the torch thread count is fixed per job, so the
same job gives bit-identical metrics on any executor.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from benchsuite.budget import Budget
from benchsuite.errors import PluginError
from benchsuite.measures import Costs, Scores
from benchsuite.records import JobResult, SweepPoint
from benchsuite.seeds import Streams
from benchsuite.selection import Candidate, divergence, select_best_config
from benchsuite.specs import Mixer, OptionValue, Track, TrackData
from benchsuite.train.alone import fit, predict
from benchsuite.train.batched import Member, Unbatchable, train_stack
from benchsuite.train.checkpoint import Saves, checkpoint
from benchsuite.train.encoder import Encoder, build_encoder
from benchsuite.train.fit import Schedule, Trace, batch_order
from benchsuite.train.halving import HalvingMark, halve_one_by_one
from benchsuite.train.measures import forward_flops, parameter_counts
from benchsuite.train.preflight import check_mixer
from benchsuite.train.stopping import stopping_fields, stopping_of
from benchsuite.vocabulary import Split

if TYPE_CHECKING:
    from benchsuite.records import Job

log = logging.getLogger(__name__)


@lru_cache(maxsize=64)
def _cached_load(
    track: Track, options_json: str, preset: str, data_dir: str | None, salt: str, seed: int
) -> TrackData:
    import json

    return track.load(Streams(salt, track.name, seed), json.loads(options_json), preset, data_dir)


def load_data(track: Track, job: Job, options: dict[str, Any] | None = None) -> TrackData:
    """The track's data for the job's seed under ``options`` (default: the job's track options;
    a ladder rung's otherwise), cached per process."""
    import json

    given = json.dumps(dict(job.track_options) if options is None else options, sort_keys=True)
    return _cached_load(track, given, job.preset, job.data_dir, job.salt, job.seed)


def build_model(
    track: Track, mixer: Mixer, data: TrackData, job: Job, options: dict[str, Any] | None = None
) -> Encoder:
    """The shared encoder with the job's mixer in every block, initialised from the init streams
    (``options``: the track options the data was loaded with; default the job's)."""
    budget = job.budget
    streams = Streams(job.salt, job.track, job.seed)
    build = mixer.builder()
    options = dict(job.track_options) if options is None else options
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
        mlp_hidden=job.mlp_hidden,
    )


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


def measure_model(
    model: Encoder, mixer: Mixer, x_train: torch.Tensor, data: TrackData, costs: Costs
) -> dict[str, float]:
    """FLOPs per example (set in ``costs``) and the mechanism probes of a trained model."""
    from benchsuite.train.probes import measure, probes_for

    sample = x_train[: min(len(x_train), 8)]
    costs.flops_per_example = forward_flops(model, sample) / len(sample)
    inputs = capture_mixer_inputs(model, to_device(data.x_test[:64], x_train.device))
    return measure(model.mixers(), inputs, *probes_for(mixer.signature))


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A numpy split as a tensor on ``device`` (no copy on the CPU)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def identity_of_test_set(data: TrackData) -> tuple[np.ndarray, ...]:
    """What names a record's test set: a fixed pool's identity and test row numbers, else the
    test arrays themselves."""
    if data.test_rows is None:
        return data.x_test, data.y_test
    return np.frombuffer(data.identity.encode(), dtype=np.uint8), np.asarray(data.test_rows)


def digest(*arrays: np.ndarray) -> str:
    """A short hash of arrays' contents (the test set a record was scored on)."""
    hashed = hashlib.sha256()
    for array in arrays:
        hashed.update(np.ascontiguousarray(array).tobytes())
    return hashed.hexdigest()[:16]


@dataclass
class Rung:
    """One rung of a job's ladder (most tracks have one): its options, data and one member per
    config of the grid."""

    options: dict[str, OptionValue]
    data: TrackData
    members: list[Member]


@dataclass
class Prepared:
    """A job ready to train: its budget and its rungs."""

    job: Job
    budget: Budget
    rungs: list[Rung]


def prepare(job: Job, track: Track, mixer: Mixer) -> Prepared:
    """Per rung of the track's ladder: load the seed's data, check the mixer, and build one model
    per config (identical initial weights, from the same init streams) on shared data and
    minibatch order."""
    torch.set_num_threads(job.threads)
    device = torch.device(job.device)
    budget = job.budget
    rungs = []
    for options in track.ladder(dict(job.track_options), job.preset):
        data = load_data(track, job, options)
        broken = check_mixer(mixer, data.tokens, budget.dim, dict(job.mixer_options))
        if broken:
            raise PluginError(broken)
        model = build_model(track, mixer, data, job, options).to(device)
        streams = Streams(job.salt, job.track, job.seed)
        x, y = to_device(data.x_train, device), to_device(data.y_train, device)
        order = batch_order(streams.rng("order"), len(x), budget.steps, budget.batch_size)
        order = order.to(device)  # one tensor for every config: the stack sees shared batches
        stopping = (
            stopping_of(
                budget, track, data, to_device(data.x_val, device), to_device(data.y_val, device)
            )
            if budget.eval_every
            else None
        )
        models = [model] + [copy.deepcopy(model) for _ in job.grid[1:]]
        members = [
            Member(m, x, y, order, dict(config), stopping)
            for m, config in zip(models, job.grid, strict=True)
        ]
        rungs.append(Rung(options, data, members))
    return Prepared(job, budget, rungs)


def _predicted(
    data: TrackData, model: Encoder, split: Split, batch_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``model``'s prediction of a split's inputs, and the split's targets, on its device."""
    x, y = getattr(data, f"x_{split}"), getattr(data, f"y_{split}")
    device = next(model.parameters()).device
    return predict(model, to_device(x, device), batch_size), to_device(y, device)


def _val_scores(track: Track, data: TrackData, model: Encoder, batch_size: int) -> Scores:
    scores = track.evaluate(*_predicted(data, model, Split.VAL, batch_size), data)
    return Scores(val={name: float(value) for name, value in scores.items()})


NOISE_FOLDS = 20
"""The test split is cut into this many consecutive folds to estimate its score's noise."""


def _test_scores(
    track: Track, data: TrackData, model: Encoder, metric: str, batch_size: int
) -> tuple[Scores, float]:
    """``model``'s test metrics and the standard error of its score ``metric`` over the test
    examples: the spread of the score on ``NOISE_FOLDS`` consecutive folds over the square root
    of their number (NaN with fewer than two examples). Consecutive folds keep neighbouring
    examples (windows of one trajectory) together, so their correlation widens the error
    rather than hiding in it; the folds cost one more ``evaluate`` of the same predictions."""
    prediction, target = _predicted(data, model, Split.TEST, batch_size)
    scores = track.evaluate(prediction, target, data)
    metrics = Scores(test={name: float(value) for name, value in scores.items()})
    folds = min(NOISE_FOLDS, len(target))
    if folds < 2:
        return metrics, float("nan")
    bounds = np.linspace(0, len(target), folds + 1).round().astype(int)
    per_fold = [
        track.evaluate(prediction[a:b], target[a:b], data)[metric]
        for a, b in itertools.pairwise(bounds)
    ]
    return metrics, float(np.std(per_fold, ddof=1) / np.sqrt(folds))


def score(
    ready: Prepared, track: Track, mixer: Mixer, traces: list[list[Trace]], seconds_per_step: float
) -> JobResult:
    """Choose the config with the best validation score (its mean over the rungs) and describe
    the job's result; ``traces[rung][config]``."""
    job, budget, rungs = ready.job, ready.budget, ready.rungs
    metric = rungs[0].data.metric or track.metric
    sweep = []
    for index, config in enumerate(job.grid):
        summaries = [traces[r][index].member(0) for r in range(len(rungs))]
        val = [
            _val_scores(track, rung.data, rung.members[index].model, budget.eval_batch_size)
            for rung in rungs
        ]
        curves = [traces[r][index].curve(0) for r in range(len(rungs))]
        curves = [curve[: min(map(len, curves))] for curve in curves]  # rungs may stop apart
        sweep.append(
            SweepPoint(
                index=index,
                config=dict(config),
                metrics=Scores.over_rungs(val, float(np.mean([loss for loss, _ in summaries]))),
                finite=all(finite for _, finite in summaries),
                curve=[float(v) for v in np.mean(curves, axis=0)] if curves[0] else [],
                **stopping_fields([traces[r][index] for r in range(len(rungs))], budget),
            )
        )
    chosen, _ = select_best_config(
        [
            Candidate(point.index, point.config, [point.val(metric.name)], [not point.finite])
            for point in sweep
        ],
        metric.higher_is_better,
    )
    tested = [
        _test_scores(
            track, rung.data, rung.members[chosen].model, metric.name, budget.eval_batch_size
        )
        for rung in rungs
    ]
    metrics = sweep[chosen].metrics.with_test(Scores.over_rungs([m for m, _ in tested]))
    # the score is the rungs' mean: its error, theirs added in quadrature over their number
    test_se = float(np.sqrt(np.sum(np.square([se for _, se in tested]))) / len(tested))
    first = rungs[0]
    model = first.members[chosen].model
    costs = parameter_counts(model, model.mixers())
    costs.seconds_per_step = seconds_per_step
    costs.examples_per_second = budget.batch_size / max(seconds_per_step, 1e-12)
    costs.members = float(len(job.grid))
    if budget.eval_every:  # the steps the job trained: its longest config's, over the rungs
        costs.steps = float(sum(max(t.steps(0) for t in rung) for rung in traces))
    if resumed := max(t.resumed_at for rung in traces for t in rung):
        costs.resumed_at_step = float(resumed)  # its training went on from a save
    probes = (
        measure_model(model, mixer, first.members[chosen].x, first.data, costs)
        if job.measure
        else {}
    )
    caps = [rung.data.cap for rung in rungs]
    cap = None if None in caps else float(np.mean(caps))
    reason = divergence(
        metrics.of(Split.TEST, metric.name),
        cap,
        metric.higher_is_better,
        sweep[chosen].finite,
    )
    described = first.data.description + (
        f" (and {len(rungs) - 1} harder rungs: the score is the mean over the ladder)"
        if len(rungs) > 1
        else ""
    )
    return JobResult(
        metrics=metrics,
        chosen=chosen,
        sweep=sweep,
        diverged=bool(reason),
        divergence=reason,
        probes=probes,
        costs=costs,
        data_description=described,
        data_verified=all(rung.data.verified for rung in rungs),
        cap=cap,
        test_se=test_se if np.isfinite(test_se) else None,
        test_digest=digest(*[a for r in rungs for a in identity_of_test_set(r.data)]),
    )


def _train_rung(
    rung: Rung, track: Track, job: Job, budget: Budget, saves: Saves | None, index: int
) -> tuple[list[Trace], float, bool]:
    """Every config of rung ``index``, as one stack when vmap can run the model, else one by
    one: the traces, the seconds per step of one model, and whether they trained as one stack
    (``saves``: where they save as they go)."""
    schedule, clip = Schedule.of(budget), budget.clip
    loss = track.criterion(rung.data, rung.options)
    if len(rung.members) > 1:
        try:
            saved = checkpoint(saves, job.key, f"rung{index}")
            trace = train_stack(rung.members, loss, schedule, clip, saved, budget.average_steps)
            traces = [trace.slice(i) for i in range(len(rung.members))]
            return traces, trace.seconds_per_step, True
        except Unbatchable as reason:  # raised before training: the models are untouched
            log.info("%s: configs trained one by one: %s", job.label, reason)
    marks: list[dict[int, HalvingMark]] = [{} for _ in rung.members]
    traces = [
        fit(
            m.model,
            track,
            m,
            schedule,
            clip,
            loss,
            marks[i],
            checkpoint(saves, job.key, f"rung{index}-config{i}"),
            budget.average_steps,
        )
        for i, m in enumerate(rung.members)
    ]
    halve_one_by_one(traces, marks, [m.model for m in rung.members])
    return traces, sum(t.seconds_per_step for t in traces) / len(traces), False


def run_job(job: Job, track: Track, mixer: Mixer, saves: Saves | None = None) -> JobResult:
    """Train every config of the job's grid on its seed (every rung), choose on validation, score
    the choice (raises on failure). ``saves``: where training saves as it goes, so that a job
    stopped in flight resumes (its saves are removed once it has a result)."""
    ready = prepare(job, track, mixer)
    trained = [
        _train_rung(rung, track, job, ready.budget, saves, index)
        for index, rung in enumerate(ready.rungs)
    ]
    seconds = float(np.mean([s for _, s, _ in trained]))
    result = score(ready, track, mixer, [traces for traces, _, _ in trained], seconds)
    stacked = all(together for _, _, together in trained)
    result.costs.members = float(len(job.grid)) if stacked else 1.0
    if saves is not None:
        saves.clear(job.key)
    return result


def run_jobs_batched(
    jobs: list[Job], track: Track, mixer: Mixer, saves: Saves | None = None
) -> list[JobResult]:
    """The result of each job (in order), training every seed x config of the jobs as one
    stack per rung; ``jobs`` must differ only in ``seed`` (and ``measure``). Falls back to
    training each job on its own (as :func:`run_job`) when vmap cannot run the model or the
    seeds' data differ in shape; ``costs.batched_seeds`` says how many seeds trained together
    (1 when it fell back); ``saves`` as for :func:`run_job`, the cell's under its own name."""
    _check_same_cell(jobs)
    prepared = [prepare(job, track, mixer) for job in jobs]
    budget = prepared[0].budget
    name = "cell-" + hashlib.sha256(" ".join(job.key for job in jobs).encode()).hexdigest()[:24]
    per_rung = []
    try:
        for r in range(len(prepared[0].rungs)):
            members = [m for ready in prepared for m in ready.rungs[r].members]
            if len({tuple(m.x.shape[1:]) for m in members}) > 1:
                raise Unbatchable("the seeds' data differ in shape")
            loss = track.criterion(prepared[0].rungs[r].data, prepared[0].rungs[r].options)
            saved = checkpoint(saves, name, f"rung{r}")
            schedule = Schedule.of(budget)
            trace = train_stack(members, loss, schedule, budget.clip, saved, budget.average_steps)
            per_rung.append(trace)
    except Unbatchable:
        results = [run_job(job, track, mixer, saves) for job in jobs]
        for result in results:
            result.costs.batched_seeds = 1.0
        return results
    results = []
    configs = len(jobs[0].grid)
    for position, ready in enumerate(prepared):
        traces = [
            [trace.slice(position * configs + i) for i in range(configs)] for trace in per_rung
        ]
        seconds = float(np.mean([t.seconds_per_step for t in per_rung]))
        result = score(ready, track, mixer, traces, seconds)
        result.costs.batched_seeds = float(len(jobs))
        results.append(result)
    if saves is not None:
        saves.clear(name)
    return results


def _check_same_cell(jobs: list[Job]) -> None:
    def cell(job: Job) -> Job:
        return dataclasses.replace(job, seed=0, measure=False)

    if any(cell(job) != cell(jobs[0]) for job in jobs[1:]):
        raise ValueError("batched jobs must differ only in their seed")
    if len({job.seed for job in jobs}) != len(jobs):
        raise ValueError("batched jobs must have distinct seeds")

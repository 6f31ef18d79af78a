"""Stacked training (torch.func): every cell of the default run trains through it, a job's configs
trained as one stack equal each trained alone, a cell's seeds batched equal each job alone; a
fallback when vmap fails."""

from __future__ import annotations

import dataclasses
import logging
import math
import textwrap
from pathlib import Path

import pytest
import torch
from helpers import built_in_mixers, default_tracks, parts, seed_jobs
from torch.utils._python_dispatch import TorchDispatchMode

from benchsuite.plan.plan import Plan, plan_run
from benchsuite.plan.resolve import resolve
from benchsuite.records import JobResult
from benchsuite.registry import load_registry
from benchsuite.settings import RunSettings
from benchsuite.train.alone import fit, predict
from benchsuite.train.batched import train_stack
from benchsuite.train.fit import Schedule
from benchsuite.train.job import prepare, run_job, run_jobs_batched
from benchsuite.train.optimizers import StackedAdamW
from benchsuite.train.size import parameter_count

# One mixer per way vmap can fail: a Python number read from a tensor, and Python control flow
# on a tensor's value. Both are ordinary modules that train fine one by one.
UNBATCHABLE = {
    "item_scale": "return self.proj(x) * (1.0 + 0.0 * x.abs().max().item())",
    "branchy": "return self.proj(x) if x.mean() > -1e9 else -self.proj(x)",
}
PLUGIN = """
from benchsuite import Mixer, hookimpl


def build(tokens, dim):
    from torch import nn

    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            {forward}

    return Odd()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name={name!r}, build=build))
"""

# A mixer whose output is NaN throughout for the seeds whose initial draw is below 0.
NAN_FOR_SOME_SEEDS = """
from benchsuite import Mixer, hookimpl


def build(tokens, dim):
    import torch
    from torch import nn

    class SometimesNaN(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.register_buffer("bad", (torch.randn(()) < 0).float())

        def forward(self, x):
            return self.proj(x) + torch.sqrt(-self.bad)

    return SometimesNaN()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="nan_seeds", build=build))
"""


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def default_plan(registry) -> Plan:
    """The default run's plan (every built-in mixer x every default track, sizes matched), two
    seeds and each config cut to 3 steps."""
    settings = resolve(RunSettings(seeds=2, budget={"steps": 3}), registry)
    return plan_run(settings, registry.tracks, registry.mixers, parameter_count)


@pytest.mark.parametrize("track", default_tracks())
@pytest.mark.parametrize("mixer", built_in_mixers())
def test_every_cell_of_the_default_run_trains_through_the_stacked_trainer(
    registry, default_plan, track, mixer
):
    """The default run's cell (its real data, model, size and grid) trains a few steps as one stack
    of its configs and is scored: a mixer that fails on a track fails here, not hours into a run
    (ssm on vision failed every seed: a parameter viewed at an odd offset of the stack's buffer)."""
    cell = default_plan.cells.get(track, {}).get(mixer)
    if cell is None:
        (skip,) = [s for s in default_plan.skipped if (s.track, s.mixer) == (track, mixer)]
        assert skip.kind == "unsupported", skip  # the plan skips a cell only for a stated reason
        return
    job = dataclasses.replace(default_plan.jobs[cell.jobs[0]], measure=False)
    assert len(job.grid) >= 2 and job.budget.steps == 3
    result = run_job(job, registry.tracks[track], registry.mixers[mixer])
    assert result.chosen in range(len(job.grid))
    metric = registry.tracks[track].metric.name
    assert math.isfinite(result.metrics.test[metric]), result.metrics


def same(a: float, b: float, rtol: float, atol: float = 1e-7) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


def assert_matches(batched: JobResult, single: JobResult, rtol: float) -> None:
    """One seed's batched result against run_job's: values within ``rtol``."""
    ours, theirs = batched.metrics.to_plain(), single.metrics.to_plain()
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        assert same(ours[name], value, rtol), (name, ours[name], value)
    assert batched.diverged == single.diverged
    assert set(batched.probes) == set(single.probes)
    for name, value in single.probes.items():
        assert same(batched.probes[name], value, 1e-3, 1e-3), (name, batched.probes[name])
    for name in ("params", "mixer_params", "flops_per_example"):
        assert batched.costs.get(name) == single.costs.get(name)
    for name in ("data_description", "data_verified", "cap"):
        assert getattr(batched, name) == getattr(single, name)


@pytest.mark.parametrize(
    ("track", "mixer"),
    [("sequence", "dense"), ("sequence", "attention"), ("sequence", "fnet"), ("dynamics", "ssm")],
)
def test_configs_trained_as_one_stack_equal_each_trained_alone(registry, track, mixer):
    """The stacked AdamW (an lr per member) against torch's fused AdamW, model by model."""
    job = seed_jobs(registry, track, mixer, seeds=2)[0]
    [stacked], [alone] = (prepare(job, *parts(registry, [job])).rungs for _ in range(2))
    trace = train_stack(stacked.members, registry.tracks[track].loss, Schedule.of(job.budget))
    x_val = torch.from_numpy(alone.data.x_val)
    for index, member in enumerate(alone.members):
        single = fit(member.model, registry.tracks[track], member, Schedule.of(job.budget))
        assert same(trace.slice(index).member(0)[0], single.member(0)[0], rtol=1e-4)
        # the trained models agree on held-out data (parameters whose gradient is ~0 may not:
        # Adam turns float noise in a tiny gradient into a full-size step)
        ours = predict(stacked.members[index].model, x_val, 512)
        theirs = predict(member.model, x_val, 512)
        assert torch.allclose(ours, theirs, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize(("track", "mixer"), [("sequence", "attention"), ("dynamics", "ssm")])
def test_batched_seeds_equal_one_by_one(registry, track, mixer):
    jobs = seed_jobs(registry, track, mixer)
    batched = run_jobs_batched(jobs, *parts(registry, jobs))
    single = [run_job(job, *parts(registry, jobs)) for job in jobs]
    assert [b.costs.batched_seeds for b in batched] == [3.0, 3.0, 3.0]
    for b, s in zip(batched, single, strict=True):
        assert b.chosen == s.chosen
        assert_matches(b, s, rtol=1e-4)
    assert single[0].probes and batched[0].probes  # seed 0 measures probes
    assert not batched[1].probes
    metric = registry.tracks[track].metric.name
    scores = [b.metrics.test[metric] for b in batched]
    assert len(set(scores)) == 3  # each seed really trained on its own data and order


class CountOps(TorchDispatchMode):
    """Counts the tensor operations dispatched inside it."""

    count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("clip", [0.0, 1.0])
def test_a_stacked_step_costs_a_fixed_number_of_operations(clip):
    """The stacked AdamW updates one flat buffer: whether the model holds 2 or 40 parameter
    tensors its step is the same ~20 operations, plus two per tensor when gradients are clipped
    (their norms are summed per tensor, as clip_grad_norm_ does); the per-tensor update it
    replaced cost ~12 per tensor, a third of a quick sequence job."""
    counts = []
    for tensors in (2, 40):
        params = [torch.randn(3, 4, 5, requires_grad=True) for _ in range(tensors)]
        optimizer = StackedAdamW(params, [1e-3, 1e-2, 1e-1], [0.0, 0.1, 0.0], clip)
        before = [p.detach().clone() for p in params]
        sum((p * p).sum() for p in params).backward()
        with CountOps() as ops:
            optimizer.step(1.0)
        counts.append(ops.count - (2 * tensors if clip else 0))
        assert all(not torch.equal(p, b) for p, b in zip(params, before, strict=True))
        optimizer.zero_grad()
        assert all(p.grad is not None and not p.grad.any() for p in params)
    assert counts[0] == counts[1] <= 25


def test_members_that_leave_the_stack_leave_the_others_updates_unchanged():
    """Three members step twice; then the first leaves (keep([2, 1]) also reorders): the kept
    members' parameters and moments continue exactly as in the full stack, and autograd
    accepts the smaller parameters."""
    torch.manual_seed(0)
    start = [torch.randn(3, 4, 5), torch.randn(3, 7)]

    def stepped(keep: list[int] | None) -> list[torch.Tensor]:
        params = [value.clone().requires_grad_() for value in start]
        optimizer = StackedAdamW(params, [1e-3, 1e-2, 1e-1], [0.0, 0.1, 0.0])
        for step in range(4):
            if step == 2 and keep is not None:
                optimizer.keep(keep)
            rows = keep if keep is not None and step >= 2 else [0, 1, 2]
            targets = [value[rows] for value in start]  # each member its own target
            optimizer.zero_grad()
            pairs = zip(optimizer.params, targets, strict=True)
            sum(((p - 2 * t) ** 2).sum() for p, t in pairs).backward()
            optimizer.step(1.0)
        return [p.detach() for p in optimizer.params]

    full, kept = stepped(None), stepped([2, 1])
    for whole, part in zip(full, kept, strict=True):
        assert part.shape[0] == 2
        assert torch.equal(part, whole[[2, 1]])


@pytest.mark.parametrize("name", sorted(UNBATCHABLE))
def test_falls_back_to_run_job_when_vmap_fails(tmp_path: Path, caplog, name):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"{name}.py").write_text(
        textwrap.dedent(PLUGIN).format(forward=UNBATCHABLE[name], name=name)
    )
    registry = load_registry(str(folder))
    jobs = seed_jobs(registry, "sequence", name, seeds=2)
    with caplog.at_level(logging.INFO, logger="benchsuite.train.job"):
        batched = run_jobs_batched(jobs, *parts(registry, jobs))
        single = [run_job(job, *parts(registry, jobs)) for job in jobs]

    assert "configs trained one by one: vmap cannot run this model" in caplog.text
    assert all(s.costs.members == 1.0 for s in single)
    assert [b.costs.batched_seeds for b in batched] == [1.0, 1.0]
    for b, s in zip(batched, single, strict=True):
        assert b.metrics == s.metrics
        assert b.probes == s.probes
        assert b.diverged == s.diverged


def test_a_seed_that_diverges_leaves_the_others_untouched(tmp_path: Path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "nan_seeds.py").write_text(NAN_FOR_SOME_SEEDS)
    registry = load_registry(str(folder))
    jobs = seed_jobs(registry, "sequence", "nan_seeds", seeds=3, steps=60)
    jobs = [dataclasses.replace(job, measure=False) for job in jobs]
    batched = run_jobs_batched(jobs, *parts(registry, jobs))
    single = [run_job(job, *parts(registry, jobs)) for job in jobs]

    # the premise: some seeds' losses are NaN, the others' finite
    assert {math.isnan(s.metrics.train_loss) for s in single} == {True, False}
    assert [b.costs.batched_seeds for b in batched] == [3.0] * 3
    for b, s in zip(batched, single, strict=True):
        assert_matches(b, s, rtol=1e-4)


def test_jobs_must_differ_only_in_seed(registry):
    jobs = seed_jobs(registry, "sequence", "dense", seeds=2)
    other = dataclasses.replace(jobs[1], grid=({"lr": 1.0},))
    with pytest.raises(ValueError, match="differ only in their seed"):
        run_jobs_batched([jobs[0], other], *parts(registry, jobs))


def test_batch_seeds_flag_runs_cells_batched_through_the_cli(tmp_path):
    """`run --batch-seeds` (the GPU default) trains each cell's seeds together, with the same
    per-seed results as the one-by-one path, and says so in every record."""
    import json
    import sqlite3

    from helpers import TINY, invoke

    base = ["run", "--tracks", "sequence", "--mixers", "dense,fnet", "--seeds", "3", *TINY]
    for name, extra in (("one", []), ("batched", ["--batch-seeds"])):
        done = invoke(*base, *extra, "--out", str(tmp_path / name))
        assert done.returncode == 0, done.stderr

    def eval_records(name):
        with sqlite3.connect(tmp_path / name / "benchsuite.sqlite") as db:
            rows = db.execute("SELECT record FROM results").fetchall()
        records = [json.loads(text) for (text,) in rows]
        return {(r["job"]["mixer"], r["job"]["seed"]): r for r in records}

    one, batched = eval_records("one"), eval_records("batched")
    assert one.keys() == batched.keys() and len(one) == 6
    for cell, record in batched.items():
        assert record["job"]["batched"] and record["environment"]["batched"]
        assert record["metrics"]["test.mse"] == pytest.approx(
            one[cell]["metrics"]["test.mse"], rel=1e-4
        )

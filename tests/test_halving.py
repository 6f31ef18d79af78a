"""Successive halving inside each seed (``Budget.halve_at``): at each halving the better half of
a seed's configs trains on, ranked by that seed's own validation score; the stack, configs
trained one by one and a cell's seeds trained as one stack prune alike; the settings are checked.
"""

from __future__ import annotations

import math

import pytest
import torch

from benchsuite.errors import UsageError
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.records import Job
from benchsuite.registry import Registry
from benchsuite.settings import RunSettings
from benchsuite.train.alone import fit, predict
from benchsuite.train.batched import train_stack
from benchsuite.train.fit import Schedule
from benchsuite.train.halving import halve_one_by_one
from benchsuite.train.job import prepare, run_job, run_jobs_batched
from benchsuite.train.stopping import Watch, halved_now

TINY = {"series": 24, "length": 64}
LRS = (0.0003, 0.001, 0.003, 0.01, 0.03)
HALVING = {
    "steps": 60,
    "eval_every": 10,
    "patience": 0,
    "min_steps": 0,
    "checkpoint": "best",
    "halve_at": (20, 40),
}

pytestmark = pytest.mark.usefixtures("one_thread")


def jobs_of(registry: Registry, budget: dict, seeds: int = 2, mixer: str = "dense") -> list[Job]:
    settings = RunSettings(
        tracks=("sequence",),
        mixers=(mixer,),
        baseline="fnet",
        seeds=seeds,
        budget=budget,
        track_options={"sequence": TINY},
        grids={"sequence": {"lr": LRS}},
    )
    settings = resolve(settings, registry)
    track, mixer_ = registry.tracks["sequence"], registry.mixers[mixer]
    return cell_jobs(settings, track, mixer_, grid_of(track, settings), "test-data")


def test_each_halving_keeps_the_better_half_by_validation_score(registry):
    """Five configs: the first halving (step 20) prunes two, the second (step 40) one of the
    three left, two train to the end; a pruned config is scored in its best state up to its
    pruning, which no survivor's best score is worse than (MSE: lower is better)."""
    job = jobs_of(registry, HALVING)[0]
    result = run_job(job, registry.tracks["sequence"], registry.mixers["dense"])
    rows = result.sweep
    assert [row.pruned_at for row in rows].count([20]) == 2
    assert [row.pruned_at for row in rows].count([40]) == 1
    assert [row.pruned_at for row in rows].count([None]) == 2
    for row in rows:
        (pruned,) = row.pruned_at
        assert row.steps == (pruned or 60)
        assert not (pruned and row.converged)
        survivors = [other for other in rows if pruned and (other.pruned_at[0] or 61) > pruned]
        for other in survivors:
            assert other.metrics.val["mse"] <= row.metrics.val["mse"]
    assert rows[result.chosen].pruned_at == [None]
    assert result.costs.steps == 60


def test_a_halving_ranks_the_whole_grid_converged_configs_included():
    """Halving k keeps the best ceil(n / 2**k) of a grid's n configs: a config that converged
    keeps its place (it costs nothing more), so fewer of those still training go on; a diverged
    one has none. Each seed's grid is ranked apart."""
    scores = [0.5, 0.9, 0.7, 0.6, 0.8]
    watches = [Watch(best=score) for score in scores]
    assert halved_now(watches, [0, 1, 2, 3, 4], [], 1) == [0, 3]
    assert halved_now(watches, [0, 2, 3, 4], [1], 1) == [0, 3]  # 1 converged: top 3 is 1, 4, 2
    assert halved_now(watches, [0, 2, 3, 4], [], 1) == [0]  # 1 diverged: top 3 is 4, 2, 3
    assert halved_now(watches, [0, 2, 3], [1, 4], 2) == [0, 2, 3]  # top 2 of 5: 1 and 4
    assert halved_now(watches, [0, 2, 3], [], 1) == []  # 1 and 4 diverged: 3 left, 3 places
    two_seeds = watches + [Watch(best=score) for score in reversed(scores)]
    assert halved_now(two_seeds, list(range(10)), [], 1, groups=[0] * 5 + [1] * 5) == [0, 3, 6, 9]


@pytest.mark.parametrize(("patience", "schedule"), [(0, "cosine"), (1, "cosine"), (1, "plateau")])
def test_the_stack_and_configs_trained_one_by_one_prune_alike(registry, patience, schedule):
    """A model vmap cannot run trains its configs one after the other; the halvings are then
    applied afterwards from what each recorded, and prune the same configs at the same steps,
    leaving each in the same state, as the stack does while training (with patience 1, configs
    that converge before a halving keep their place in it; under the plateau schedule each has
    its rate cut at the same steps, none after its pruning)."""
    budget = {**HALVING, "patience": patience, "min_delta": 0.01, "schedule": schedule}
    job = jobs_of(registry, budget)[0]
    track, mixer = registry.tracks["sequence"], registry.mixers["dense"]
    stacked, alone = prepare(job, track, mixer).rungs[0], prepare(job, track, mixer).rungs[0]
    loss = track.criterion(stacked.data, stacked.options)
    trace = train_stack(stacked.members, loss, Schedule.of(job.budget), 1.0)
    marks: list[dict] = [{} for _ in alone.members]
    singles = [
        fit(member.model, track, member, Schedule.of(job.budget), 1.0, loss, marks[index])
        for index, member in enumerate(alone.members)
    ]
    assert all(sorted(mark) in ([], [1], [1, 2]) for mark in marks)
    assert all(single.pruned == {} for single in singles)  # alone, nothing to rank against
    halve_one_by_one(singles, marks, [member.model for member in alone.members])

    assert trace.pruned and (trace.converged if patience else not trace.converged)
    x_test = torch.from_numpy(alone.data.x_test)
    for index, single in enumerate(singles):
        assert single.pruned.get(0) == trace.pruned.get(index)
        assert single.steps(0) == trace.steps(index)
        assert single.best_step.get(0) == trace.best_step.get(index)
        assert single.converged.get(0) == trace.converged.get(index)
        assert single.cuts.get(0, []) == trace.cuts.get(index, [])
        ours = predict(stacked.members[index].model, x_test, 512)
        theirs = predict(alone.members[index].model, x_test, 512)
        torch.testing.assert_close(ours, theirs, rtol=1e-3, atol=1e-4)


def test_seeds_trained_as_one_stack_are_halved_each_on_its_own(registry):
    """With a cell's seeds in one stack (``--batch-seeds``), each seed's grid is ranked apart:
    every seed keeps its own better half, as when its job trains alone."""
    jobs = [job for job in jobs_of(registry, HALVING, seeds=3)]
    track, mixer = registry.tracks["sequence"], registry.mixers["dense"]
    batched = run_jobs_batched(jobs, track, mixer)
    single = [run_job(job, track, mixer) for job in jobs]
    assert [b.costs.batched_seeds for b in batched] == [3.0] * 3
    for b, s in zip(batched, single, strict=True):
        assert [row.pruned_at for row in b.sweep] == [row.pruned_at for row in s.sweep]
        assert [row.pruned_at for row in b.sweep].count([None]) == 2
        assert b.chosen == s.chosen
        assert math.isclose(b.metrics.test["mse"], s.metrics.test["mse"], rel_tol=1e-3)


@pytest.mark.parametrize(("given", "expected"), [("20,40", (20, 40)), ("none", ()), ([30], (30,))])
def test_halve_at_is_a_budget_key(registry, given, expected):
    job = jobs_of(registry, {**HALVING, "halve_at": given})[0]
    assert job.budget.halve_at == expected


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"halve_at": "40,20"}, "budget halve_at: expected increasing steps ≥ 1, got '40,20'"),
        ({"halve_at": "soon"}, "budget halve_at: expected steps such as 120,240 or none"),
        (
            {**HALVING, "eval_every": 0, "checkpoint": "last", "halve_at": "20"},
            "budget patience, halve_at and checkpoint='best' need",
        ),
    ],
)
def test_bad_halving_settings_are_one_line_errors(registry, budget, message):
    with pytest.raises(UsageError, match=message):
        jobs_of(registry, budget)

"""The learning-rate schedule (``Budget.schedule``): the cosine's factors unchanged, and the
plateau schedule, whose rate the stopping rule cuts on a plateau before the next plateau stops
the config, deciding alike in a stack and one model at a time; bad settings refused."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import RULE, jobs_of

from benchsuite.budget import Budget
from benchsuite.errors import UsageError
from benchsuite.plan.jobs import budget_terms
from benchsuite.plan.resolve import resolve
from benchsuite.settings import RunSettings
from benchsuite.train.alone import fit, predict
from benchsuite.train.batched import train_stack
from benchsuite.train.fit import Schedule
from benchsuite.train.job import prepare, run_job

pytestmark = pytest.mark.usefixtures("one_thread")
PLATEAU = {**RULE, "schedule": "plateau", "cuts": 1, "warmup_steps": 10, "steps": 600}


def test_the_cosine_factors_are_the_warm_up_then_the_cosine_to_zero():
    """The cosine schedule as before: linear warm-up over the budget's warm-up, then cosine
    decay to zero at the most steps; the plateau schedule's rate stays at 1 after the warm-up."""
    budget = Budget(steps=200, batch_size=8, dim=8, depth=1, grid=())
    cosine, plateau = Schedule.of(budget), Schedule(budget.warmup, decay=False)
    assert budget.warmup == 10  # 5% of 200
    assert [cosine.factor(step, 200) for step in (0, 4, 9)] == [0.1, 0.5, 1.0]
    progress = (150 - 10) / (200 - 10)
    assert cosine.factor(150, 200) == 0.5 * (1.0 + math.cos(math.pi * progress))
    assert cosine.factor(199, 200) < 1e-3
    assert plateau.factor(4, 200) == 0.5 and plateau.factor(199, 200) == 1.0
    assert Budget(steps=4000, batch_size=8, dim=8, depth=1, grid=(), warmup_steps=50).warmup == 50


def test_a_plateau_cuts_the_rate_once_and_the_next_plateau_stops_the_config(registry):
    """Under the plateau schedule with one cut, a config whose patience runs out has its rate cut
    and trains on; it converges only on the plateau after that (at least ``patience`` checks
    after its cut), and its record says where it was cut."""
    job = jobs_of(registry, "dense", PLATEAU)[0]
    assert job.budget.schedule == "plateau"
    rows = run_job(job, registry.tracks["sequence"], registry.mixers["dense"]).sweep
    converged = [row for row in rows if row.converged]
    assert converged
    for row in rows:
        (cuts,) = row.cut_at
        assert len(cuts) <= 1
        if row.converged:
            assert len(cuts) == 1
            assert row.steps - cuts[0] >= RULE["patience"] * RULE["eval_every"]
        assert all(0 < cut < row.steps and cut % RULE["eval_every"] == 0 for cut in cuts)


def test_a_stack_and_one_model_at_a_time_cut_and_stop_alike(registry):
    """Each member of a stack has its own rate cut (:meth:`StackedAdamW.cut`) at the check where
    the same config trained alone (``FusedAdamW.cut``) has its cut, and stops at the same step."""
    job = jobs_of(registry, "dense", PLATEAU)[0]
    track, mixer = registry.tracks["sequence"], registry.mixers["dense"]
    stacked, alone = prepare(job, track, mixer).rungs[0], prepare(job, track, mixer).rungs[0]
    loss = track.criterion(stacked.data, stacked.options)
    schedule = Schedule.of(job.budget)
    assert not schedule.decay
    trace = train_stack(stacked.members, loss, schedule, job.budget.clip)
    x_test = torch.from_numpy(alone.data.x_test)
    assert trace.cuts
    for index, member in enumerate(alone.members):
        single = fit(member.model, track, member, schedule, job.budget.clip, loss)
        assert trace.cuts.get(index) == single.cuts.get(0)
        assert trace.steps(index) == single.steps(0)
        ours = predict(stacked.members[index].model, x_test, 512)
        theirs = predict(member.model, x_test, 512)
        torch.testing.assert_close(ours, theirs, rtol=1e-3, atol=1e-4)


def test_the_schedule_is_in_the_budget_signature_only_when_it_is_not_the_cosine(registry):
    """Runs under the cosine keep their budget signature; a plateau run's names its schedule."""

    def terms(budget: dict) -> dict:
        settings = resolve(RunSettings(tracks=("sequence",), budget=budget), registry)
        return budget_terms(registry.tracks["sequence"], settings)

    assert "schedule" not in terms({})
    plateau = terms({"schedule": "plateau", "cuts": 2, "cut_factor": 0.5})
    assert (plateau["schedule"], plateau["cuts"], plateau["cut_factor"]) == ("plateau", 2, 0.5)


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"schedule": "linear"}, "budget schedule: expected cosine or plateau, got 'linear'"),
        ({"schedule": "plateau"}, "budget schedule 'plateau' needs eval_every and patience"),
        ({**PLATEAU, "cut_factor": 2}, "budget cut_factor: expected a number between 0 and 1"),
        ({**PLATEAU, "cuts": -1}, "budget cuts: must be at least 0"),
    ],
)
def test_bad_schedule_settings_are_one_line_errors(registry, budget, message):
    with pytest.raises(UsageError, match=message):
        jobs_of(registry, "dense", budget)

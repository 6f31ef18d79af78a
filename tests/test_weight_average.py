"""The running average of the iterates (budget ``average_steps``): the mean of the first N
iterates then an exponential moving average, kept the same by the stacked and the fused
optimiser, through members leaving a stack and through a save and resume; the models a stack
ends with (and those trained alone) hold the average, checked and scored."""

from __future__ import annotations

import json
import sqlite3

import pytest
import torch
from helpers import exact_steps, invoke, parts, seed_jobs

from benchsuite.train.alone import fit, predict
from benchsuite.train.batched import train_stack
from benchsuite.train.checkpoint import Checkpoint
from benchsuite.train.fit import Schedule, train_loop
from benchsuite.train.job import prepare
from benchsuite.train.optimizers import FusedAdamW, StackedAdamW, average_weight

pytestmark = pytest.mark.usefixtures("one_thread")


def running_average(iterates: list[torch.Tensor], steps: int) -> torch.Tensor:
    """The rule written out in float64: the plain mean up to ``steps``, then weight 1/steps."""
    average = iterates[0].double()
    for step, value in enumerate(iterates[1:], start=2):
        weight = 1 / min(step, steps)
        average = (1 - weight) * average + weight * value.double()
    return average


def test_the_weights_are_the_mean_then_an_exponential_moving_average():
    assert [average_weight(step, 4) for step in range(1, 7)] == [
        1,
        1 / 2,
        1 / 3,
        1 / 4,
        1 / 4,
        1 / 4,
    ]
    torch.manual_seed(0)
    stacked = [torch.randn(3, 4, 5, requires_grad=True), torch.randn(3, 7, requires_grad=True)]
    alone = [torch.randn(4, 5, requires_grad=True)]
    optimizers = [
        StackedAdamW(stacked, [1e-2, 1e-1, 3e-2], [0.0, 0.1, 0.0], average=4),
        FusedAdamW(alone, 1e-1, 0.0, average=4),
    ]
    for optimizer in optimizers:
        iterates: list[list[torch.Tensor]] = []
        for _ in range(9):
            optimizer.zero_grad()
            sum(((p - 1) ** 4).sum() for p in optimizer.params).backward()
            optimizer.step(1.0)
            iterates.append([p.detach().clone() for p in optimizer.params])
        for index, average in enumerate(optimizer.averaged()):
            expected = running_average([step[index] for step in iterates], 4)
            assert torch.allclose(average.double(), expected, rtol=1e-5, atol=1e-6)
            assert not torch.equal(average, optimizer.params[index])  # not the last iterate


def test_without_an_average_the_weights_scored_are_the_parameters():
    params = [torch.randn(2, 3, requires_grad=True)]
    optimizer = StackedAdamW(params, [1e-2, 1e-2], [0.0, 0.0])
    assert all(a is p for a, p in zip(optimizer.averaged(), optimizer.params, strict=True))
    fused = FusedAdamW([torch.randn(3, requires_grad=True)], 1e-2, 0.0)
    assert fused.averaged() is fused.params


def test_members_that_leave_the_stack_keep_their_average():
    torch.manual_seed(1)
    start = [torch.randn(3, 4, 5), torch.randn(3, 7)]

    def stepped(keep: list[int] | None) -> list[torch.Tensor]:
        params = [value.clone().requires_grad_() for value in start]
        optimizer = StackedAdamW(params, [1e-3, 1e-2, 1e-1], [0.0, 0.1, 0.0], average=3)
        for step in range(5):
            if step == 2 and keep is not None:
                optimizer.keep(keep)
            rows = keep if keep is not None and step >= 2 else [0, 1, 2]
            optimizer.zero_grad()
            pairs = zip(optimizer.params, [value[rows] for value in start], strict=True)
            sum(((p - 2 * t) ** 2).sum() for p, t in pairs).backward()
            optimizer.step(1.0)
        return [a.clone() for a in optimizer.averaged()]

    for whole, part in zip(stepped(None), stepped([2, 1]), strict=True):
        assert torch.equal(part, whole[[2, 1]])


@pytest.mark.parametrize("stacked", [False, True])
def test_a_loop_stopped_mid_way_resumes_its_average_bit_for_bit(tmp_path, stacked):
    def train(stop_at: int | None, saved: Checkpoint | None) -> list[torch.Tensor]:
        torch.manual_seed(0)
        shape = (2, 6, 3) if stacked else (6, 3)
        weight = torch.randn(*shape, requires_grad=True)
        x, y = torch.randn(32, 6), torch.randn(32, 3)
        optimizer = (
            StackedAdamW([weight], [1e-2, 3e-2], [0.0, 0.0], average=10)
            if stacked
            else FusedAdamW([weight], 1e-2, 0.0, average=10)
        )

        def loss_at(step: int) -> torch.Tensor:
            if step == stop_at:
                raise KeyboardInterrupt
            predicted = x @ optimizer.params[0]
            return ((predicted - y) ** 2).mean(dim=(-2, -1))

        members = 2 if stacked else 0
        train_loop(optimizer, loss_at, 60, Schedule(5), x.device, members, checkpoint=saved)
        return [a.clone() for a in optimizer.averaged()]

    whole = train(None, None)
    saved = Checkpoint(tmp_path / "loop.pt", every=0.0)
    with pytest.raises(KeyboardInterrupt):
        train(30, saved)
    resumed = train(None, Checkpoint(saved.path, every=1e9))
    assert all(torch.equal(a, b) for a, b in zip(whole, resumed, strict=True))


def test_a_stack_checks_and_keeps_the_average_as_each_model_trained_alone(registry):
    """Under early stopping with the best check kept: the stacked and the lone paths read and
    keep the same averaged weights, and those are not the weights without an average."""
    track = registry.tracks["sequence"]
    job = seed_jobs(registry, "sequence", "attention", seeds=2, steps=60)[0]
    budget = job.budget
    predictions = {}
    for average in (0, 15):
        [stacked], [alone] = (prepare(job, *parts(registry, [job])).rungs for _ in range(2))
        schedule = Schedule.of(budget)
        train_stack(stacked.members, track.loss, schedule, budget.clip, None, average)
        x_val = torch.from_numpy(alone.data.x_val)
        for index, member in enumerate(alone.members):
            fit(member.model, track, member, schedule, budget.clip, None, None, None, average)
            ours = predict(stacked.members[index].model, x_val, 512)
            theirs = predict(member.model, x_val, 512)
            assert torch.allclose(ours, theirs, rtol=1e-3, atol=1e-4)
            predictions[average, index] = ours
    assert not torch.allclose(predictions[0, 0], predictions[15, 0], rtol=1e-3, atol=1e-4)


def test_a_run_stores_the_average_in_each_jobs_budget(tmp_path):
    out = tmp_path / "out"
    common = ["run", "--tracks", "sequence", "--mixers", "dense,identity", "--no-config", "-q"]
    done = invoke(
        *common, "--seeds", "2", *exact_steps(40), "--budget", "average_steps=10", "--out", str(out)
    )
    assert done.returncode in (0, 1), done.stderr
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        budgets = [
            json.loads(r)["job"]["budget"] for (r,) in db.execute("SELECT record FROM results")
        ]
    assert len(budgets) == 4 and all(b["average_steps"] == 10 for b in budgets)
    bad = invoke(*common, "--budget", "average_steps=-1", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "budget average_steps" in bad.stderr
    assert not (tmp_path / "bad" / "benchsuite.sqlite").exists()

"""Early stopping on the validation score (``Budget.eval_every``, ``patience``, ``min_delta``,
``checkpoint``, ``min_steps``, the trivial level): one rule for every mixer of a cell, the steps
each config trained recorded, the best check's state scored, stacked and one-by-one training
deciding alike, bad settings refused."""

from __future__ import annotations

import pytest
import torch
from helpers import NO_RULE, RULE, SEQUENCE, jobs_of

from benchsuite import api
from benchsuite.budget import Budget
from benchsuite.errors import UsageError
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.selection import LEARNT_MIN
from benchsuite.settings import RunSettings
from benchsuite.specs import Metric
from benchsuite.store.store import Store
from benchsuite.train.alone import fit, predict
from benchsuite.train.batched import train_stack
from benchsuite.train.fit import Schedule
from benchsuite.train.job import prepare, run_job
from benchsuite.train.stopping import Stopping, Watch, converged_now, trivial_level

pytestmark = pytest.mark.usefixtures("one_thread")


def test_stopping_records_steps_and_stops_before_the_budget(registry):
    """Each config records the steps it trained (a multiple of eval_every unless the budget ran
    out), whether it converged, and its best check; with patience 2 on a 200-step budget at
    least one config of the grid stops early, and the job's cost counts the longest config."""
    job = jobs_of(registry, "dense", RULE)[0]
    result = run_job(job, registry.tracks["sequence"], registry.mixers["dense"])
    rows = result.sweep
    assert None not in (rows[0].steps, rows[0].converged, rows[0].best_step)
    for row in rows:
        (best,) = row.best_step
        assert 0 < best <= row.steps <= 200 and best % RULE["eval_every"] == 0
        if row.converged:  # it stopped `patience` checks after its best one
            assert row.steps - best == RULE["patience"] * RULE["eval_every"]
        else:
            assert row.steps == 200
    assert any(row.converged for row in rows)
    assert result.costs.steps == max(row.steps for row in rows)


def test_best_checkpoint_scores_at_least_as_well_as_the_last_state(registry):
    """Without stopping (patience 0), ``checkpoint=best`` keeps the state of the best check
    (the last step is a check too), so every config's validation score is at least the one
    ``checkpoint=last`` gives after the same training."""
    track, mixer = registry.tracks["sequence"], registry.mixers["dense"]
    scores = {}
    for checkpoint in ("last", "best"):
        budget = {"eval_every": 20, "checkpoint": checkpoint}
        job = jobs_of(registry, "dense", budget if checkpoint == "best" else {})[0]
        rows = run_job(job, track, mixer).sweep
        scores[checkpoint] = [row.metrics.val["mse"] for row in rows]
    lower_is_better = not track.metric.higher_is_better
    assert lower_is_better
    for best, last in zip(scores["best"], scores["last"], strict=True):
        assert best <= last * (1 + 1e-5)
    assert scores["best"] != scores["last"]  # some config's best check was not its last step


def test_stacked_and_one_by_one_training_stop_alike(registry):
    """The stack reads every member's validation score from one vmapped forward pass; each
    member stops at the step it stops at when trained alone."""
    job = jobs_of(registry, "dense", RULE)[0]
    track, mixer = registry.tracks["sequence"], registry.mixers["dense"]
    stacked, alone = prepare(job, track, mixer).rungs[0], prepare(job, track, mixer).rungs[0]
    loss = track.criterion(stacked.data, stacked.options)
    trace = train_stack(stacked.members, loss, Schedule.of(job.budget), 1.0)
    x_test = torch.from_numpy(alone.data.x_test)
    for index, member in enumerate(alone.members):
        single = fit(member.model, track, member, Schedule.of(job.budget), 1.0, loss)
        assert trace.steps(index) == single.steps(0)
        assert trace.best_step.get(index) == single.best_step.get(0)
        # each restored its best check: the models agree on held-out data (parameters with a
        # near-zero gradient may not: Adam turns float noise there into a full-size step)
        ours = predict(stacked.members[index].model, x_test, 512)
        theirs = predict(member.model, x_test, 512)
        torch.testing.assert_close(ours, theirs, rtol=1e-3, atol=1e-4)


def test_every_mixer_of_a_run_follows_the_same_rule(tmp_path, registry):
    """A run with the rule trains every job of every mixer under the same stopping settings and
    stores the steps each job trained; learning curves of cells that stopped by the rule are not
    flagged undertrained."""
    settings = RunSettings(
        tracks=("sequence",),
        mixers=("dense", "identity", "mlp"),
        seeds=2,
        out=str(tmp_path),
        budget={"steps": 200, **NO_RULE, **RULE},
        track_options={"sequence": SEQUENCE},
        executor="local",
    )
    summary = api.run(settings, registry=registry)
    records = list(Store.in_folder(tmp_path).results().values())
    assert len(records) == 6
    for record in records:
        assert {k: getattr(record.job.budget, k) for k in RULE} == RULE
        assert 0 < record.result.costs.steps <= 200
    curves = [arm.learning_curve for arm in summary.report.tracks["sequence"].mixers.values()]
    stopped_by_rule = [c for c in curves if c.converged_seeds * 2 >= len(c.seeds)]
    assert stopped_by_rule
    assert all(curve.undertrained is False for curve in stopped_by_rule)


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (
            {"patience": 3},
            "track 'sequence': budget patience, halve_at and checkpoint='best' need eval_every",
        ),
        ({"checkpoint": "middle"}, "budget checkpoint: expected last or best, got 'middle'"),
        ({"min_delta": -1}, "budget min_delta: must be at least 0"),
        ({"stop": 1}, "unknown budget key 'stop'"),
    ],
)
def test_bad_stopping_settings_are_one_line_errors(registry, budget, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        jobs_of(registry, "dense", budget)


def test_patience_stops_no_config_before_min_steps(registry):
    """With ``min_steps``, a config whose patience ran out earlier trains on until then: every
    config that converged trained at least ``min_steps`` steps (and some did converge)."""
    job = jobs_of(registry, "dense", {**RULE, "min_steps": 120})[0]
    rows = run_job(job, registry.tracks["sequence"], registry.mixers["dense"]).sweep
    assert any(row.converged for row in rows)
    assert all(row.steps >= 120 for row in rows)
    early = run_job(
        jobs_of(registry, "dense", RULE)[0], registry.tracks["sequence"], registry.mixers["dense"]
    ).sweep
    assert any(row.converged and row.steps < 120 for row in early)


def test_a_config_that_learnt_nothing_has_not_converged(registry):
    """A config that cannot learn (a learning rate of 1e-9: its predictions stay at the
    initialisation's, no better than the training mean) runs out of patience at once but trains
    to the most steps, recorded as not converged; its neighbour in the grid converges."""
    settings = resolve(
        RunSettings(
            tracks=("sequence",),
            mixers=("dense",),
            baseline="fnet",
            seeds=2,
            budget={"steps": 200, **NO_RULE, **RULE},
            track_options={"sequence": SEQUENCE},
            grids={"sequence": {"lr": (1e-9, 0.01)}},
        ),
        registry,
    )
    track, mixer = registry.tracks["sequence"], registry.mixers["dense"]
    job = cell_jobs(settings, track, mixer, grid_of(track, settings), "test-data")[0]
    frozen, learning = run_job(job, track, mixer).sweep
    assert frozen.steps == 200 and not frozen.converged
    assert learning.converged and learning.steps < 200


def test_the_trivial_level_is_the_learnt_nothing_threshold_on_the_signed_scale():
    """``trivial_level`` puts the validation cap on the stopping rule's scale (higher is
    better), ``LEARNT_MIN`` of the way to the ideal above it; a rule with it keeps a stale member
    at that level training, and one above it stops; no cap, no level."""
    accuracy, mse = Metric("accuracy", True, ideal=1.0), Metric("mse", False, ideal=0.0)
    assert trivial_level(accuracy, 0.2) == pytest.approx(0.2 + LEARNT_MIN * 0.8)
    assert trivial_level(mse, 1.0) == pytest.approx(-1.0 + LEARNT_MIN)
    assert trivial_level(mse, None) is None
    budget = Budget(steps=20, batch_size=1, dim=1, depth=1, grid=({},), eval_every=10, patience=1)
    settings = Stopping(budget, torch.zeros(1), float, -1.0 + LEARNT_MIN)
    rule = settings.rule(lambda: [-1.0, -0.5], lambda member: None)
    watches = [Watch(best=-1.0, best_step=10), Watch(best=-0.5, best_step=10)]
    assert converged_now(rule, watches, 20, [0, 1], [0, 1]).converged == [1]


def test_min_steps_never_comes_after_the_first_halving(registry):
    with pytest.raises(UsageError, match="the first halving comes before min_steps 150"):
        jobs_of(registry, "dense", {**RULE, "min_steps": 150, "halve_at": "100"})

"""What a run shows while it goes: the ETA appears only once it means something, and off a
terminal (a file, a CI log) a plain line every LINE_JOBS jobs and at the end of each phase."""

from __future__ import annotations

import io

import pytest
from helpers import a_job
from rich.console import Console

from benchsuite.output import progress
from benchsuite.output.progress import Phase, progress_events
from benchsuite.plan.cost import CostModel, JobCost
from benchsuite.records import RunRecord

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


def _outlook(jobs: dict[str, tuple[str, str, float]], slots: int | None = 2) -> CostModel:
    return CostModel({key: JobCost(*cost) for key, cost in jobs.items()}, slots, opened=0.0)


def test_the_eta_is_the_cost_model_s_seconds_left_over_the_slots():
    # 2 vision jobs of 10 units, 4 sequence jobs of 1 unit, dense and mamba
    jobs = {
        "v-dense": ("vision", "dense", 10.0),
        "v-mamba": ("vision", "mamba", 10.0),
        "s-dense": ("sequence", "dense", 1.0),
        "s-mamba": ("sequence", "mamba", 1.0),
        "s-dense2": ("sequence", "dense", 1.0),
        "s-mamba2": ("sequence", "mamba", 1.0),
    }
    outlook = _outlook(jobs)
    phase = Phase("train", total=6, outlook=outlook, started=0.0)
    outlook.finish("v-dense", 20.0)  # 2 s a unit
    phase.done = 1
    assert phase.eta(now=20.0) == ""  # one job's pace is no pace
    outlook.finish("v-mamba", 80.0)  # 8 s a unit: mamba is 4x dense
    phase.done = 2
    # sequence's pace is not seen yet: no ETA (it would say sequence runs at vision's pace)
    assert phase.eta(now=80.0) == ""
    assert outlook.seconds_left(now=80.0) == pytest.approx(((1 + 1) * 2 + (1 + 1) * 8) / 2)
    outlook.finish("s-dense", 1.0)  # sequence dense: 1 s a unit, so sequence mamba 4 s
    phase.done = 3
    assert outlook.job_seconds_left(now=81.0) == pytest.approx(1.0 + 4.0 + 4.0)
    assert phase.line(now=81.0) == "train: 3/6 jobs, 0:01:21 elapsed, about 0:00:04 left"


def test_no_eta_until_every_mixer_left_has_been_seen():
    # the cheap mixer finishes first; the slow one's pace is unknown, not "the average one"
    outlook = _outlook({k: ("t", k[0], 1.0) for k in ("f1", "f2", "f3", "s1", "s2")})
    phase = Phase("train", total=5, outlook=outlook, started=0.0)
    outlook.finish("f1", 1.0)
    outlook.finish("f2", 1.0)
    phase.done = 2
    assert phase.eta(now=2.0) == ""
    outlook.finish("s1", 9.0)
    phase.done = 3
    assert phase.eta(now=9.0) == "about 0:00:05 left"  # (1 + 9) job-s on 2 slots


def test_a_running_job_counts_what_its_prediction_has_left_and_teaches_a_lower_bound():
    outlook = _outlook({"a": ("t", "fast", 1.0), "b": ("t", "fast", 1.0), "c": ("t", "slow", 1.0)})
    outlook.finish("a", 10.0)
    outlook.start("b", at=0.0)
    assert outlook.job_seconds_left(now=4.0) == pytest.approx(6.0 + 10.0)  # c: the usual pace
    outlook.start("c", at=0.0)
    # at 30 s both still run: b has outlived its cell's 10 s and c the fitted 10 s; each is
    # now known to take at least 30 s, and nothing is left of either prediction
    assert outlook.job_seconds_left(now=30.0) == pytest.approx(0.0)
    outlook.finish("b", 30.0)  # the fast cell: 10 and 30 s, log-mean sqrt(300) s
    assert outlook.job_seconds_left(now=31.0) == pytest.approx(0.0)  # c has run 31 s > 17.3
    assert "b" not in outlook.running and list(outlook.running) == ["c"]


def test_without_slots_the_eta_divides_by_the_pace_so_far():
    outlook = _outlook({"a": ("t", "m", 1.0), "b": ("t", "m", 1.0), "c": ("t", "m", 1.0)}, None)
    phase = Phase("train", total=3, outlook=outlook, started=0.0)
    for key in ("a", "b"):
        outlook.finish(key, 10.0)
        phase.done += 1
    assert phase.eta(now=5.0) == "about 0:00:03 left"  # 20 job-s in 5 s: 4 at once; 10 s left
    outlook.finish("c", 10.0)
    phase.done = 3
    assert phase.eta(now=8.0) == ""  # a finished phase has no ETA


def test_reused_and_failed_jobs_leave_the_outlook_without_teaching_it():
    outlook = _outlook({"a": ("t", "m", 1.0), "b": ("t", "m", 1.0)})
    outlook.finish("a", 0.0)  # reused: instant
    assert outlook.learnt == 0 and outlook.job_seconds_left() is None
    assert list(outlook.left) == ["b"]


def test_off_a_terminal_a_plain_line_every_n_jobs_and_at_the_end(monkeypatch):
    monkeypatch.setattr(progress, "LINE_JOBS", 4)
    out, err = io.StringIO(), io.StringIO()
    console, status = Console(file=out, width=120), Console(file=err, width=120)
    assert not status.is_terminal
    record = RunRecord(key="k", job=a_job(), status="ok")
    with progress_events(console, status) as events:
        events.start("train", 10, CostModel({}))
        for index in range(10):
            events.advance(None if index < 2 else record)  # two reused, eight trained
    lines = err.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "train: 4/10 jobs",
        "train: 8/10 jobs",
        "train: 10/10 jobs",
    ]
    assert "left" not in lines[-1]  # a finished phase has no ETA
    assert out.getvalue() == ""  # progress never goes to the data console


def test_verbose_prints_one_line_per_trained_job_and_no_plain_lines():
    err = io.StringIO()
    record = RunRecord(key="k", job=a_job(seed=3), status="ok", seconds=1.25)
    with progress_events(Console(file=io.StringIO()), Console(file=err), verbose=True) as events:
        events.start("train", 30, CostModel({}))
        for _ in range(30):
            events.advance(record)
    lines = err.getvalue().splitlines()
    assert lines == ["trained sequence/dense seed 3 in 1.2 s"] * 30

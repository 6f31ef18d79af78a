"""What a run shows while it goes: the ETA appears only once it means something, and off a
terminal (a file, a CI log) a plain line every LINE_JOBS jobs and at the end of each phase."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from benchsuite.execute.record import RunRecord
from benchsuite.output import progress
from benchsuite.output.progress import Phase, progress_events

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


def test_the_eta_waits_for_three_trained_jobs_and_a_tenth_of_the_phase():
    phase = Phase("train", total=18, started=0.0)
    phase.done = phase.trained = 2
    assert phase.eta(now=1.0) == ""  # 2 of 18: the 0:00:01 the issue saw is not shown
    phase.done = phase.trained = 3
    assert phase.eta(now=30.0) == "about 0:02:30 left"  # 10 s a job, 15 jobs left
    phase.trained = 1  # 2 of the 3 were reused (instant): not a pace
    assert phase.eta(now=30.0) == ""
    big = Phase("train", total=845, started=0.0)
    big.done = big.trained = 84
    assert big.eta(now=84.0) == ""  # under a tenth
    big.done = big.trained = 85
    assert big.eta(now=85.0) == "about 0:12:40 left"
    assert big.line(now=85.0) == "train: 85/845 jobs, 0:01:25 elapsed, about 0:12:40 left"


def test_off_a_terminal_a_plain_line_every_n_jobs_and_at_the_end(monkeypatch):
    monkeypatch.setattr(progress, "LINE_JOBS", 4)
    out, err = io.StringIO(), io.StringIO()
    console, status = Console(file=out, width=120), Console(file=err, width=120)
    assert not status.is_terminal
    record = RunRecord(key="k", job={"track": "sequence", "mixer": "dense"}, status="ok")
    with progress_events(console, status) as events:
        events.start("train", 10)
        for index in range(10):
            events.advance(record, index < 2)  # two reused, eight trained
    lines = err.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "train: 4/10 jobs", "train: 8/10 jobs", "train: 10/10 jobs",
    ]  # fmt: skip
    assert "left" not in lines[-1]  # a finished phase has no ETA
    assert out.getvalue() == ""  # progress never goes to the data console


def test_verbose_prints_one_line_per_trained_job_and_no_plain_lines():
    err = io.StringIO()
    record = RunRecord(key="k", job={"track": "sequence", "mixer": "dense", "seed": 3},
                       status="ok", seconds=1.25)  # fmt: skip
    with progress_events(Console(file=io.StringIO()), Console(file=err), verbose=True) as events:
        events.start("train", 30)
        for _ in range(30):
            events.advance(record, False)
    lines = err.getvalue().splitlines()
    assert lines == ["trained sequence/dense seed 3 in 1.2 s"] * 30

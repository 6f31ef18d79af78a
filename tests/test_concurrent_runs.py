"""Two runs on one output folder: every job is trained exactly once between them, and the leases
of a run that is gone are taken over.

Each run is the real CLI in its own process group (``process`` executor: jobs leased one by one;
``local``: all at once); the store is read and written with sqlite3 directly.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
from helpers import a_job

from benchsuite.records import JobResult, RunRecord
from benchsuite.store.leases import Heartbeat, Owner
from benchsuite.store.store import Store, renew_leases

RUN = [
    "run",
    "--tracks",
    "sequence",
    "--mixers",
    "dense,identity",
    "--seeds",
    "5",
    "--budget",
    "steps=80",
    "--grid",
    "sequence.lr=0.01,0.03",
    "--track-option",
    "sequence.series=24",
]
PROCESS = ["--executor", "process", "--jobs", "1"]  # leases each job as a worker takes it
LOCAL = ["--executor", "local"]  # leases all its jobs at once
TOTAL = 2 * 5  # (dense, identity) x 5 evaluation seeds
END_LINE = re.compile(r"jobs: (\d+) trained, (\d+) reused, (\d+) failed")


def query(out: Path, sql: str, *params: object) -> list[tuple]:
    """Rows of ``sql`` on the run's store (none while the store or its tables do not exist)."""
    path = out / "benchsuite.sqlite"
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(sql, params).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


def stored(out: Path) -> int:
    rows = query(out, "SELECT COUNT(*) FROM results")
    return rows[0][0] if rows else 0


def start(out: Path, env: dict[str, str], executor: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchsuite.cli", *RUN, *executor, "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[str, str, tuple[int, int, int]]:
    """The run's standard output and error and its (trained, reused, failed) counts, once it
    exited with 0."""
    output, errors = process.communicate(timeout=300)
    assert process.returncode == 0, output + errors
    counts = END_LINE.search(output)
    assert counts, output + errors
    return output, errors, tuple(map(int, counts.groups()))


def printed_report(output: str) -> str:
    """The tables a run prints, from the first track table to the end line's report path."""
    body = output[output.index("sequence —") :]
    return body[: body.index("jobs:")]


def wait_for(condition, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow  # two real runs in their own processes: 40-50 s each
def test_two_concurrent_runs_train_every_job_exactly_once(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    out = tmp_path / "out"
    first, second = start(out, env, PROCESS), start(out, env, PROCESS)
    out_a, _, (trained_a, reused_a, _) = finish(first)
    out_b, _, (trained_b, reused_b, _) = finish(second)
    assert trained_a + trained_b == TOTAL, (out_a, out_b)  # a job trained twice would count twice
    assert trained_a > 0 and trained_b > 0, "the runs did not share the work"
    assert (trained_a + reused_a, trained_b + reused_b) == (TOTAL, TOTAL)
    assert stored(out) == TOTAL
    assert query(out, "SELECT COUNT(*) FROM failures") == [(0,)]
    assert query(out, "SELECT COUNT(*) FROM leases") == [(0,)]  # every lease was given back
    assert printed_report(out_a) == printed_report(out_b)
    plans = [json.loads(text) for (text,) in query(out, "SELECT request FROM runs")]
    assert len(plans) == 2 and plans[0]["cells"] == plans[1]["cells"]  # each run saved its own


@pytest.mark.slow  # two real runs in their own processes: 40-50 s each
def test_leases_of_runs_that_are_gone_are_taken_over(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    out = tmp_path / "out"
    killed = start(out, env, LOCAL)
    wait_for(lambda: query(out, "SELECT key FROM leases"), "its leases")  # it is training
    os.killpg(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    done = stored(out)
    left = sorted(query(out, "SELECT key, pid FROM leases"))
    assert len(left) == TOTAL - done and {pid for _, pid in left} == {killed.pid}

    # Of the jobs the killed run leased, give one to a live process of this host (a run still
    # training) and one to a run on another host that stopped renewing its heartbeat 3 min ago.
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    host, held = socket.gethostname(), left[0][0]
    with sqlite3.connect(out / "benchsuite.sqlite", timeout=30) as db:
        update = "UPDATE leases SET owner = ?, host = ?, pid = ?, heartbeat = ? WHERE key = ?"
        db.execute(update, (f"{host}:{alive.pid}:x", host, alive.pid, time.time(), held))
        db.execute(update, ("far:1:x", "far", 1, time.time() - 180, left[1][0]))
    db.close()

    try:
        resumed = start(out, env, LOCAL)
        wait_for(lambda: stored(out) == TOTAL - 1, "every job but the live run's")
        time.sleep(1.5)  # the resumed run polls the store, waiting for the live run's job
        assert resumed.poll() is None, "the run did not wait for the job of a live run"
        assert query(out, "SELECT key FROM results WHERE key = ?", held) == []
    finally:
        alive.kill()
        alive.wait()
    output, errors, counts = finish(resumed)
    assert counts == (TOTAL - done, done, 0)
    waiting = f"waiting for 1 job that another run (pid {alive.pid} on {host}) is training"
    assert waiting in " ".join((output + errors).split())  # however the console wraps it
    assert stored(out) == TOTAL
    assert query(out, "SELECT COUNT(*) FROM leases") == [(0,)]


def test_lease_rules_in_the_store(tmp_path: Path) -> None:
    """Who may train a job: no result, and no live lease of another run; a finished or failed job
    is reported, not leased; a renewed heartbeat keeps a lease live."""
    ours, theirs = Store.in_folder(tmp_path), Store.in_folder(tmp_path)
    me, other = Owner.here(), Owner.here()  # two runs of this (live) process
    since = time.time()
    assert theirs.claim(["a", "b", "c"], other, since).mine == ["a", "b", "c"]
    job = a_job("t", "m", 1)
    theirs.put(
        RunRecord(key="a", job=job, status="ok", result=JobResult(chosen=0)), other
    )  # gives "a" back
    theirs.put(RunRecord(key="b", job=job, status="failed", error="boom"), other)
    claim = ours.claim(["a", "b", "c", "d"], me, since)
    assert (claim.mine, claim.done, list(claim.failed)) == (["d"], {"a"}, ["b"])
    assert [(lease.key, lease.pid) for lease in claim.held] == [("c", os.getpid())]
    assert ours.claim(["b"], me, time.time()).mine == ["b"]  # failed before this run: tried again

    far = Owner("far", 1, "x")  # a run on another host: only its heartbeat tells it is alive
    ours.claim(["e"], far)
    with Heartbeat(partial(renew_leases, ours.path, far), every=0.05):
        ours.db.execute("UPDATE leases SET heartbeat = heartbeat - 180 WHERE key = 'e'")
        ours.db.commit()
        time.sleep(0.3)
        assert [lease.key for lease in theirs.claim(["e"], other).held] == ["e"]  # renewed
    ours.db.execute("UPDATE leases SET heartbeat = heartbeat - 180 WHERE key = 'e'")
    ours.db.commit()
    assert theirs.claim(["e"], other).mine == ["e"]  # expired: taken over

    theirs.release(other)
    assert ours.claim(["c", "e"], me).mine == ["c", "e"]
    ours.close()
    theirs.close()

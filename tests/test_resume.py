"""Resume: a run stopped by Ctrl-C, then killed with SIGKILL, then run again, loses no finished job.

Each run is the real CLI in its own process group (as a terminal would run it), on the ``process``
executor; the stores are read with sqlite3 directly (helpers.stored_rows).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import interruptible, stored_rows

RUN = [
    "run",
    "--tracks",
    "sequence",
    "--mixers",
    "dense,attention",
    "--budget",
    "steps=300",
    "--seeds",
    "5",
    "--grid",
    "sequence.lr=0.01,0.03",
    "--track-option",
    "sequence.series=24",
    "--executor",
    "process",
    "--jobs",
    "2",
]
TOTAL = 2 * 5  # (dense, attention) x 5 evaluation seeds, each tuning over the 2 grid points
END_LINE = re.compile(r"jobs: (\d+) trained, (\d+) reused, (\d+) failed")


def start(out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchsuite.cli", *RUN, "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, like a job started from a shell
        preexec_fn=interruptible,
    )


def stop_when(process: subprocess.Popen[str], out: Path, rows: int, sig: signal.Signals) -> str:
    """Send ``sig`` to the run's whole process group once the store holds ``rows`` results."""
    deadline = time.monotonic() + 120
    while stored_rows(out) < rows and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, f"the run ended before it was stopped:\n{process.stdout.read()}"
    os.killpg(process.pid, sig)
    output, _ = process.communicate(timeout=60)
    return output


def group_ended(pgid: int, seconds: float = 10) -> bool:
    """Whether every process of group ``pgid`` (the driver and its workers) has gone."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow  # end-to-end runs, interrupted and killed as processes
def test_interrupted_and_killed_runs_resume(tmp_path: Path) -> None:
    env = {**os.environ, "BENCHSUITE_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}
    out = tmp_path / "out"

    first = start(out, env)
    output = stop_when(first, out, 2, signal.SIGINT)  # Ctrl-C in a terminal
    assert first.returncode == 130, output
    assert "run the same command again to resume" in output
    assert group_ended(first.pid), "a worker outlived the interrupted run"
    after_first = stored_rows(out)
    assert 2 <= after_first < TOTAL

    second = start(out, env)
    stop_when(second, out, after_first + 2, signal.SIGKILL)
    assert second.returncode == -signal.SIGKILL
    assert group_ended(second.pid)
    after_second = stored_rows(out)
    assert after_first + 2 <= after_second < TOTAL

    third = subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", *RUN, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 0, third.stdout + third.stderr
    trained, reused, failed = map(int, END_LINE.search(third.stdout).groups())
    assert (trained, reused, failed) == (TOTAL - after_second, after_second, 0)
    assert stored_rows(out) == TOTAL

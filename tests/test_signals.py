"""Stopping a run as a shell, a scheduler or ``timeout`` does, on a real run in a subprocess:
the first Ctrl-C is said at once and a second quits at once; SIGTERM stops the run as the first
Ctrl-C does, keeping every stored job and saying how to resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers import exact_steps, interruptible, stored_rows

LONG = [*exact_steps(3000), "--no-config"]  # a signal lands in the middle of training


class Stream:
    """A child's output stream read on a thread, each line stamped with when it arrived."""

    def __init__(self, stream) -> None:
        self.lines: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append((time.monotonic(), line))

    def first(self, text: str, timeout: float) -> float | None:
        """When the first line holding ``text`` arrived (None: not within ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if text in line:
                    return at
            time.sleep(0.01)
        return None

    def text(self) -> str:
        self.thread.join(timeout=10)
        return "".join(line for _, line in self.lines)


def start(out: Path, *args: str) -> tuple[subprocess.Popen, Stream, Stream]:
    command = [sys.executable, "-m", "benchsuite.cli", "run", "--out", str(out), *args]
    env = {**os.environ, "COLUMNS": "200", "BENCHSUITE_CACHE": str(out.parent / "cache")}
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
    )
    return process, Stream(process.stdout), Stream(process.stderr)


def test_the_first_ctrl_c_is_said_at_once_and_a_second_quits_at_once(tmp_path):
    out = tmp_path / "out"
    process, _, stderr = start(
        out, "--tracks", "sequence", "--mixers", "dense,identity", "--seeds", "2", *LONG
    )
    try:
        deadline = time.monotonic() + 120
        while not stored_rows(out, "runs") and time.monotonic() < deadline:
            assert process.poll() is None, stderr.text()  # still running
            time.sleep(0.05)
        time.sleep(2.0)  # training: the plan is saved, the workers take their jobs
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        said = stderr.first("stopping (SIGINT)", 10)
        assert said is not None, stderr.text()
        assert said - sent < 1.0
        again = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)
        assert time.monotonic() - again < 2.0
    finally:
        process.kill()
    assert process.returncode == 130
    said = stderr.text()
    assert "Ctrl-C again to quit now" in said and "SIGINT again: quitting now" in said


def test_sigterm_keeps_every_stored_job_and_says_how_to_resume(tmp_path):
    out = tmp_path / "out"
    process, stdout, stderr = start(
        out,
        "--tracks",
        "sequence",
        "--mixers",
        "dense,identity",
        "--seeds",
        "3",
        "--executor",
        "local",
        *exact_steps(400),
        "--no-config",
    )
    try:
        deadline = time.monotonic() + 180
        while stored_rows(out) < 1 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, stdout.text() + stderr.text()
        kept = stored_rows(out)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        process.kill()
    said = stderr.text()
    assert process.returncode == 128 + signal.SIGTERM, said
    assert "stopping (SIGTERM)" in said
    assert "interrupted (SIGTERM; exit 143): run the same command again to resume" in said
    assert f"of {2 * 3} jobs (" in said and "in flight: " in said
    assert 1 <= kept <= stored_rows(out) < 2 * 3
    assert (out / "report.json").exists()  # the report of what finished
    lines = [line for line in (stdout.text() + said).splitlines() if line.strip()]
    assert len(lines) <= 30, lines  # a short summary: no empty table, no one-seed ranking

"""A real Ray cluster: a head on 127.0.0.1 in its own process group, a run through it, and a Ray
worker killed mid-task; the run still completes. Torn down by killing the head's process group
(never ``ray stop``, which would end every Ray process on the machine)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a Ray head and trains through it

pytest.importorskip("ray", reason="Ray is not installed (pip install 'benchsuite[ray]')")

SLOW_PLUGIN = '''
"""``slow``: the identity mixer, slowed down so that a job lasts about a second."""

import time

from benchsuite import Mixer, hookimpl


def build(tokens, dim):
    from torch import nn

    class Slow(nn.Module):
        def forward(self, x):
            time.sleep(0.02)
            return x

    return Slow()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="slow", build=build, description="identity, slowly"))
'''
TOTAL = 2 * 2  # (dense, slow) x 2 seeds, each tuning over the 2 grid points
TASK_TITLE = b"ray::benchsuite_job"


def slow_run(plugins: Path, *extra: str) -> list[str]:
    """The command of a small run of ``dense`` and ``slow`` on ``sequence`` (``plugins``: the
    folder holding :data:`SLOW_PLUGIN`), with ``extra`` arguments."""
    return [
        sys.executable,
        "-m",
        "benchsuite.cli",
        "--plugins-dir",
        str(plugins),
        "run",
        *("--tracks", "sequence", "--mixers", "dense,slow", "--budget", "steps=20"),
        *("--seeds", "2", "--grid", "sequence.lr=0.01,0.03"),
        *("--track-option", "sequence.series=24"),
        *extra,
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "BENCHSUITE_CACHE": str(tmp_path / "cache"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",  # Ray >= 2.5x: a fresh token of our own, not ~/.ray's
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "COLUMNS": "200",
    }


RAY_START = [
    sys.executable,
    "-m",
    "ray.scripts.scripts",
    "start",
    "--block",
    "--node-ip-address=127.0.0.1",
    "--disable-usage-stats",
]


def start_node(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """``ray start ... --block`` in a process group of its own, once Ray says it runs."""
    with log.open("w") as output:
        process = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 90
    while "Ray runtime started" not in log.read_text():
        assert process.poll() is None, f"ray start failed:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"ray start took too long:\n{log.read_text()}"
        time.sleep(0.2)
    return process


def stop_group(process: subprocess.Popen) -> None:
    """Kill a node's process group and the Ray workers it started (sessions of their own)."""
    workers = cluster(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    for pid, _ in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def head_command(port: int, sessions: str, cpus: int) -> list[str]:
    """``ray start`` of a head on 127.0.0.1:``port`` with ``cpus`` CPUs (its sessions in
    ``sessions``: short, as Ray's socket paths must stay short)."""
    return [
        *RAY_START,
        "--head",
        f"--port={port}",
        f"--num-cpus={cpus}",
        "--include-dashboard=false",
        f"--temp-dir={sessions}",
    ]


@pytest.fixture
def head(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """A one-node Ray cluster on 127.0.0.1: yields (address, the head's process group)."""
    port, sessions = free_port(), tempfile.mkdtemp(prefix="bsray")
    process = start_node(head_command(port, sessions, 2), env, Path(sessions) / "head.log")
    try:
        yield f"127.0.0.1:{port}", process.pid
    finally:
        stop_group(process)


def processes() -> Iterator[tuple[int, int, bytes]]:
    """(pid, parent's pid, command line) of every process, from /proc."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            yield int(entry.name), parent, (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue


def in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except ProcessLookupError:
        return False


def cluster(pgid: int) -> list[tuple[int, bytes]]:
    """The head's processes and their children (Ray workers run in sessions of their own)."""
    return [
        (pid, command)
        for pid, parent, command in processes()
        if in_group(pid, pgid) or in_group(parent, pgid)
    ]


def task_workers(pgid: int) -> list[int]:
    """The cluster's Ray workers that are running a benchsuite job right now."""
    return [pid for pid, command in cluster(pgid) if command.startswith(TASK_TITLE)]


def trained_every_job(run: subprocess.Popen, output: str) -> None:
    """The run exited 0 having trained every job, none reused, none failed."""
    assert run.returncode == 0, output
    counts = re.search(r"jobs: (\d+) trained, (\d+) reused, (\d+) failed", output)
    assert counts is not None and tuple(map(int, counts.groups())) == (TOTAL, 0, 0), output


def stored(out: Path) -> int:
    path = out / "benchsuite.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def test_run_on_a_ray_cluster_survives_a_killed_worker(
    head: tuple[str, int], env: dict[str, str], tmp_path: Path
) -> None:
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("finds Ray worker processes in /proc (Linux)")
    address, pgid = head
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slow.py").write_text(SLOW_PLUGIN)
    out = tmp_path / "out"
    command = slow_run(plugins, "--executor", "ray", "--address", address, "--out", str(out))
    run = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (busy := task_workers(pgid)):
            assert run.poll() is None, (
                f"the run ended before a worker was seen:\n{run.stdout.read()}"
            )
            assert time.monotonic() < deadline, "no Ray worker ever ran a benchsuite job"
            time.sleep(0.05)
        time.sleep(0.3)  # well inside the job
        os.kill(busy[0], signal.SIGKILL)
        output, _ = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    trained_every_job(run, output)  # the killed job was retried
    assert stored(out) == TOTAL


@pytest.fixture
def two_nodes(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """A head and a second node on 127.0.0.1, one CPU each, each in its own process group:
    yields (address, the second node's process group)."""
    port, sessions = free_port(), tempfile.mkdtemp(prefix="bsray")
    small = "--object-store-memory=100000000"
    head = start_node([*head_command(port, sessions, 1), small], env, Path(sessions) / "head.log")
    try:
        joined = [*RAY_START, f"--address=127.0.0.1:{port}", "--num-cpus=1", small]
        node = start_node(joined, env, Path(sessions) / "node.log")
        try:
            yield f"127.0.0.1:{port}", node.pid
        finally:
            stop_group(node)
    finally:
        stop_group(head)


def figures(out: Path) -> dict[str, list[float]]:
    """Every comparison's per-seed metrics, from the run's report."""
    import json

    report = json.loads((out / "report.json").read_text())
    return {
        f"{track}/{mixer}": cell["baseline_values"] + cell["mixer_values"]
        for track, entry in report["tracks"].items()
        for mixer, cell in entry["comparisons"].items()
    }


def test_a_lost_ray_node_has_its_tasks_run_again_and_the_figures_stand(
    two_nodes: tuple[str, int], env: dict[str, str], tmp_path: Path
) -> None:
    """The second node's raylet SIGKILLed while one of its workers runs a job: Ray runs the
    task again on the head, the run completes with every job, and its per-seed figures equal a
    one-machine run's (``--executor process``)."""
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("finds Ray's processes in /proc (Linux)")
    address, node_group = two_nodes
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slow.py").write_text(SLOW_PLUGIN)
    alone = subprocess.run(
        slow_run(plugins, "--no-batch-seeds", "--out", str(tmp_path / "alone")),
        env=env,
        capture_output=True,
        text=True,
    )
    assert alone.returncode == 0, alone.stderr
    out = tmp_path / "out"
    ray = ("--executor", "ray", "--address", address, "--no-batch-seeds", "--out", str(out))
    run = subprocess.Popen(
        slow_run(plugins, *ray),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (busy := task_workers(node_group)):
            assert run.poll() is None, f"the run ended before the node ran a job:\n{run.stdout}"
            assert time.monotonic() < deadline, "no job ever ran on the second node"
            time.sleep(0.05)
        raylets = [pid for pid, command in cluster(node_group) if b"raylet" in command]
        assert raylets, "the second node has no raylet"
        for pid in raylets:
            os.kill(pid, signal.SIGKILL)
        output, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    trained_every_job(run, output)
    assert busy and figures(out) == figures(tmp_path / "alone")

"""Fault campaigns: a small real run killed again and again, then checked against the same run
uninterrupted (docs/running.md, "Faults a run survives").

    python benchmarks/faults.py [OUT] [--driver-kills 20] [--worker-kills 20] [--ray-kills 10]
        [--seed 0] [--steps 450] [--save-every 0.2]

The run: ``sequence,tabular`` × ``dense,identity,attention`` × 3 seeds, a two-point grid, a
short budget. First it runs once, uninterrupted (the reference). Then, each in a folder of its
own and each moment drawn from one generator seeded ``--seed``:

- **driver**: the run is started, and once it has leased a job (it is training), SIGKILLed with
  its whole process group after a random delay; the same command again, until it completes;
- **worker**: the run is started once and, while it lives, one of its worker processes is
  SIGKILLed at random moments; a job whose worker died twice is a failure record, so the same
  command runs again until nothing is left to train;
- **ray**: the same on a local Ray head (``--executor ray``), its task workers killed.

After each: the report's figures (every per-seed metric, chosen config, p, Holm p and verdict,
per track and across tracks) against the reference's, the store's duplicate rows and leftover
leases, the checkpoints left behind, and the wall seconds lost per kill (the campaign's wall
time less the reference's, over the kills; for the driver, how much of it each new start took to
hand out its first job).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

TASK_TITLE = b"ray::benchsuite_job"  # a Ray worker's process title while it runs a job
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}


def command(out: Path, steps: int, save_every: float, *extra: str) -> list[str]:
    """The campaign's run into ``out``."""
    return [
        sys.executable,
        "-m",
        "benchsuite.cli",
        "run",
        "--tracks",
        "sequence,tabular",
        "--mixers",
        "dense,identity,attention",
        "--seeds",
        "3",
        "--budget",
        f"steps={steps}",
        "--grid",
        "sequence.lr=0.01,0.03",
        "--grid",
        "tabular.lr=0.01,0.03",
        "--save-every",
        str(save_every),
        "--no-config",
        "-q",
        "--out",
        str(out),
        *extra,
    ]


def start(argv: list[str], log: Path) -> subprocess.Popen:
    """The run in a process group of its own (killed whole), its output appended to ``log``."""
    with log.open("a") as sink:
        return subprocess.Popen(
            argv, env=ENV, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )


def kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def query(out: Path, sql: str) -> list[tuple]:
    """Rows of the run's store, read-only (none before it exists)."""
    path = out / "benchsuite.sqlite"
    if not path.exists():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return db.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def training(out: Path, pid: int) -> bool:
    """Whether the run of process ``pid`` holds a lease (it has handed out a job)."""
    return bool(query(out, f"SELECT 1 FROM leases WHERE pid = {pid} LIMIT 1"))


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, from /proc."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def command_line(pid: int) -> bytes:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""


@dataclass
class Campaign:
    """What one campaign did and found."""

    name: str
    kills: int = 0
    starts: int = 0
    wall: float = 0.0
    figures: int = 0
    differing: int = 0
    records: int = 0
    duplicates: int = 0
    leases: int = 0
    checkpoints: int = 0
    failures: int = 0
    restarting: float = 0.0  # seconds from each killed attempt's start to its first lease

    def line(self, reference: float) -> str:
        lost = (self.wall - reference) / max(self.kills, 1)
        restart = (
            f" ({self.restarting / self.kills:.1f} s of it starting again)"
            if (self.restarting and self.kills)
            else ""
        )
        return (
            f"{self.name}: kills {self.kills}, starts {self.starts} (resumes "
            f"{self.starts - 1}), records {self.records}, duplicates {self.duplicates}, "
            f"leftover leases {self.leases}, orphaned checkpoints {self.checkpoints}, "
            f"figures differing {self.differing} of {self.figures}, failure records on the way "
            f"{self.failures}; wall {self.wall:.0f} s, lost {lost:.1f} s per kill{restart}"
        )


def figures(out: Path) -> dict[str, object]:
    """Every figure the campaign compares, by name, from the run's report.json."""
    report = json.loads((out / "report.json").read_text())
    found: dict[str, object] = {}
    for track, entry in report["tracks"].items():
        for mixer, arm in entry["mixers"].items():
            found[f"{track}/{mixer}/config"] = arm["best_cfg"]
        for mixer, cell in entry["comparisons"].items():
            c = cell["comparison"]
            found[f"{track}/{mixer}/baseline"] = cell["baseline_values"]
            found[f"{track}/{mixer}/mixer"] = cell["mixer_values"]
            for key in ("p_value", "p_holm", "p_tost", "verdict"):
                found[f"{track}/{mixer}/{key}"] = c[key]
    across = report.get("across_tracks") or {"mixers": {}}
    for mixer, row in across["mixers"].items():
        found[f"across/{mixer}/p"] = row["suite_test"]["p_value"]
        found[f"across/{mixer}/verdict"] = row["verdict"]
    return found


def check(campaign: Campaign, out: Path, reference: dict[str, object]) -> Campaign:
    """The campaign's store, checkpoints and figures against the reference's."""
    mine = figures(out)
    campaign.figures = len(reference)
    campaign.differing = sum(mine.get(key) != value for key, value in reference.items())
    campaign.records = query(out, "SELECT COUNT(*) FROM results")[0][0]
    campaign.duplicates = sum(
        n - 1 for (n,) in query(out, "SELECT COUNT(*) FROM results GROUP BY key")
    )
    campaign.leases = query(out, "SELECT COUNT(*) FROM leases")[0][0]
    campaign.failures = query(out, "SELECT COUNT(*) FROM failures")[0][0]
    saves = out / "checkpoints"
    campaign.checkpoints = sum(1 for p in saves.rglob("*") if p.is_file()) if saves.exists() else 0
    return campaign


def until_done(
    campaign: Campaign, argv: list[str], log: Path, during: Callable[[subprocess.Popen], None]
) -> None:
    """Start the run until an attempt exits 0 (nothing failed, nothing left to train),
    ``during`` each attempt (it may kill it)."""
    began = time.monotonic()
    while True:
        campaign.starts += 1
        process = start(argv, log)
        during(process)
        if process.wait() == 0:  # anything else: killed, or a job failed (its worker died twice)
            break
        if campaign.starts > 200:
            raise SystemExit(f"{campaign.name}: no end after 200 starts; see {log}")
    campaign.wall = time.monotonic() - began


def driver_campaign(out: Path, argv: list[str], kills: int, rng: random.Random) -> Campaign:
    """Kill the driver and its workers at a random moment of its training, ``kills`` times."""
    campaign = Campaign("driver")

    def during(process: subprocess.Popen) -> None:
        if campaign.kills >= kills:
            return
        began = time.monotonic()
        while process.poll() is None and not training(out, process.pid):
            time.sleep(0.05)
        started = time.monotonic() - began
        time.sleep(rng.uniform(0.1, 2.0))
        if process.poll() is None:
            kill_group(process)
            campaign.kills += 1
            campaign.restarting += started

    until_done(campaign, argv, out.parent / f"{out.name}.log", during)
    return campaign


def worker_campaign(
    out: Path, argv: list[str], kills: int, rng: random.Random, workers: Callable[[int], list[int]]
) -> Campaign:
    """Kill one of the run's workers (``workers(driver pid)``) at random moments, ``kills``
    times in all, while the run lives."""
    campaign = Campaign(out.name)

    def during(process: subprocess.Popen) -> None:
        while process.poll() is None and campaign.kills < kills:
            time.sleep(rng.uniform(0.3, 1.5))
            busy = workers(process.pid)
            if busy and process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(rng.choice(busy), signal.SIGKILL)
                    campaign.kills += 1

    until_done(campaign, argv, out.parent / f"{out.name}.log", during)
    return campaign


def pool_workers(driver: int) -> list[int]:
    """The process pool's workers: the driver's children started by multiprocessing's spawn."""
    return [pid for pid in children(driver) if b"spawn_main" in command_line(pid)]


@contextlib.contextmanager
def ray_head(folder: Path) -> Iterator[tuple[str, int]]:
    """A local Ray head on 127.0.0.1 in a process group of its own: its address and group."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ray = Path(sys.executable).with_name("ray")
    log = folder / "ray-head.log"
    process = start(
        [
            str(ray),
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            f"--temp-dir={tempfile.mkdtemp(prefix='bsray')}",
            "--block",
        ],
        log,
    )
    try:
        deadline = time.monotonic() + 120
        while b"Ray runtime started" not in log.read_bytes():
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"the Ray head did not start; see {log}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", process.pid
    finally:
        members = [pid for pid, group in _groups() if group == process.pid]
        kill_group(process)
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _groups() -> Iterator[tuple[int, int]]:
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError):
            yield int(entry.name), os.getpgid(int(entry.name))


def ray_task_workers(head_group: int) -> Callable[[int], list[int]]:
    """The Ray workers of the head's cluster that are running a benchsuite job now."""

    def found(_driver: int) -> list[int]:
        return [
            pid
            for pid, _ in _groups()
            if command_line(pid).startswith(TASK_TITLE) and _in_cluster(pid, head_group)
        ]

    return found


def _in_cluster(pid: int, head_group: int) -> bool:
    """Ray workers run in sessions of their own, children of the head's raylet."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return os.getpgid(parent) == head_group
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=None)
    parser.add_argument("--driver-kills", type=int, default=20)
    parser.add_argument("--worker-kills", type=int, default=20)
    parser.add_argument("--ray-kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=450)
    parser.add_argument("--save-every", type=float, default=0.2)
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="benchsuite-faults-"))
    base.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)

    def argv(name: str, *extra: str) -> list[str]:
        return command(base / name, args.steps, args.save_every, *extra)

    began = time.monotonic()
    done = subprocess.run(argv("reference"), env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the reference run failed:\n{done.stdout}{done.stderr}")
    wall = time.monotonic() - began
    reference = figures(base / "reference")
    print(f"reference: {len(reference)} figures, {wall:.0f} s uninterrupted; folders in {base}")
    found = []
    if args.driver_kills:
        campaign = driver_campaign(base / "driver", argv("driver"), args.driver_kills, rng)
        found.append(check(campaign, base / "driver", reference))
        print(found[-1].line(wall), flush=True)
    if args.worker_kills:
        workers = worker_campaign(
            base / "worker", argv("worker"), args.worker_kills, rng, pool_workers
        )
        found.append(check(workers, base / "worker", reference))
        print(found[-1].line(wall), flush=True)
    if args.ray_kills:
        with ray_head(base) as (address, group):
            ray = argv("ray", "--executor", "ray", "--address", address)
            campaign = worker_campaign(
                base / "ray", ray, args.ray_kills, rng, ray_task_workers(group)
            )
        found.append(check(campaign, base / "ray", reference))
        print(found[-1].line(wall), flush=True)
    bad = [c.name for c in found if c.differing or c.duplicates or c.checkpoints or c.leases]
    if bad:
        raise SystemExit(f"campaigns with a difference, a duplicate or a leftover: {bad}")


if __name__ == "__main__":
    main()

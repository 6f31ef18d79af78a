"""How good the run's ETA is, replayed on the jobs of finished runs.

    python benchmarks/eta_replay.py OUT [OUT ...] [--seeds N]

Every trained job's record holds its seconds, so a finished run (its store in OUT) can be
replayed on its own numbers: the jobs are ordered as the runner orders them now
(:func:`benchsuite.plan.cost.run_order`), handed to as many workers as the run had, each
taking its recorded seconds; at every finish the run's cost model
(:class:`benchsuite.plan.cost.CostModel`, fed as the runner feeds it: each start, each finished
job's seconds) predicts the seconds left, compared with the replay's real end. Printed per
run: the replayed wall time, the error of the first ETA the progress bar shows (once the model
is ready: it has seen a job of every track), the error every minute, and the worst from 2, 5
and 10 minutes in (the last minute left out). The error is (predicted − real) / real time
left: −30% means the run took 1/0.7 of what was promised. ``--seeds N`` replays each run scaled
to N seeds per cell (its recorded seeds' seconds repeated, with a little noise): the 2-seed
sample of the default run stands in for the 13-seed default. ``--futility`` replays a run planned
with a futility look (the per-track design; docs/protocol.md, "The futility look") as it runs: first
every cell's seeds up to the look, then only the later seeds of the comparisons it did not stop,
read from the store as the run decides them (with ``--seeds``, the scaled run's later seeds).
A job's seconds do not depend on the order (each runs on one thread of its own), so the replay
measures the model and the order, not the machine.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import sqlite3
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from benchsuite.api import stopped_by_look
from benchsuite.plan.cost import CostModel, JobCost, run_order, units
from benchsuite.plan.plan import Plan
from benchsuite.store.store import Store


@dataclass(frozen=True)
class StoredJob:
    """A trained job as its record tells it: its key, cell, seed, units and seconds."""

    key: str
    seed: int
    cost: JobCost
    seconds: float


def stored_jobs(out: Path) -> tuple[list[StoredJob], int]:
    """The trained jobs of the run stored in ``out``, and the jobs it ran at once (its workers,
    as the process pool counts them)."""
    store = sqlite3.connect(out / "benchsuite.sqlite")
    plan = json.loads(store.execute("SELECT request FROM runs ORDER BY id DESC").fetchone()[0])
    tokens = {name: track["tokens"] for name, track in plan["tracks"].items()}
    records = {
        key: json.loads(text) for key, text in store.execute("SELECT key, record FROM results")
    }
    cells, asked = plan["cells"], plan["settings"]
    planned = [  # the run's order (the store keeps a plan's mappings sorted)
        key
        for track in asked["tracks"]
        for mixer in asked["mixers"]
        for key in cells.get(track, {}).get(mixer, {}).get("jobs", [])
    ]
    jobs = []
    for key in (key for key in planned if key in records):
        record = records[key]
        job, budget = record["job"], record["job"]["budget"]
        size = units(budget["steps"], budget["batch_size"], len(job["grid"]), tokens[job["track"]])
        cost = JobCost(job["track"], job["mixer"], size)
        jobs.append(StoredJob(key, job["seed"], cost, record["seconds"]))
    settings, cpus = plan["settings"], plan["environment"].get("cpus") or 1
    return jobs, settings.get("jobs") or max(1, cpus // settings.get("threads", 1))


def schedule(jobs: list[StoredJob], slots: int) -> list[tuple[float, bool, StoredJob]]:
    """(time, finished?, job) of every start and finish when ``slots`` workers take the jobs
    in the run's order, each taking its recorded seconds (at one time, finishes first)."""
    costs = {job.key: job.cost for job in jobs}
    by_key = {job.key: job for job in jobs}
    queue = deque(run_order({job.key: job.seed for job in jobs}, costs))
    running: list[tuple[float, str]] = []  # (finish time, key), a heap
    events: list[tuple[float, bool, StoredJob]] = []
    now = 0.0
    while queue or running:
        while queue and len(running) < slots:
            job = by_key[queue.popleft()]
            events.append((now, False, job))
            heapq.heappush(running, (now + job.seconds, job.key))
        now, key = heapq.heappop(running)
        events.append((now, True, by_key[key]))
    return sorted(events, key=lambda event: (event[0], not event[1]))


def replay(jobs: list[StoredJob], slots: int) -> tuple[float, list[tuple[float, float, float]]]:
    """The replayed wall time, and (elapsed, predicted seconds left, real seconds left) at
    every finish once the model is ready (when the bar shows an ETA)."""
    events = schedule(jobs, slots)
    end = events[-1][0]
    model = CostModel({job.key: job.cost for job in jobs}, slots, opened=0.0)
    points = []
    for now, finished, job in events:
        if not finished:
            model.start(job.key, now)
            continue
        model.finish(job.key, job.seconds)
        if model.ready and now < end and (left := model.seconds_left(now)) is not None:
            points.append((now, left, end - now))
    return end, points


def more_seeds(jobs: list[StoredJob], seeds: int) -> list[StoredJob]:
    """The run scaled to ``seeds`` seeds per cell: seed s takes the recorded seconds of the
    cell's recorded seed s mod (seeds recorded), each times a log-normal factor of sd 0.15
    (seed 0 of the random stream: the replay stays reproducible)."""
    by_cell: dict[tuple[str, str], list[StoredJob]] = {}
    for job in sorted(jobs, key=lambda job: job.seed):
        by_cell.setdefault((job.cost.track, job.cost.mixer), []).append(job)
    noise = random.Random(0)
    return [
        StoredJob(
            f"{cell[seed % len(cell)].key}-{seed}",
            seed,
            cell[0].cost,
            cell[seed % len(cell)].seconds * noise.lognormvariate(0, 0.15),
        )
        for cell in by_cell.values()
        for seed in range(seeds)
    ]


def after_look(out: Path, jobs: list[StoredJob]) -> tuple[list[StoredJob], list[StoredJob]]:
    """The jobs before the futility look of the run stored in ``out`` (every cell's first seeds)
    and those after it that the run trains (the comparisons the look did not stop)."""
    store = Store.in_folder(out)
    try:
        saved = store.last_plan()
        if saved is None:
            sys.exit(f"{out}: holds no run")
        plan = Plan.from_dict(saved)
        stopped = stopped_by_look(plan, store)
    finally:
        store.close()
    if plan.futility is None:
        sys.exit(f"{out}: its run planned no futility look (the per-track design plans one)")
    look, needed = plan.futility.seeds, set(plan.needed_keys(stopped))
    trained = {(cell.track, cell.mixer) for cell in plan.cell_list() if set(cell.jobs) <= needed}
    early = [job for job in jobs if job.seed < look]
    later = [j for j in jobs if j.seed >= look and (j.cost.track, j.cost.mixer) in trained]
    return early, later


def error(predicted: float, real: float) -> float:
    return (predicted - real) / real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="+", type=Path, help="folders of finished runs")
    parser.add_argument("--seeds", type=int, help="replay each run scaled to this many seeds")
    parser.add_argument(
        "--futility", action="store_true", help="replay the run's futility look (two phases)"
    )
    args = parser.parse_args()
    for out in args.out:
        jobs, slots = stored_jobs(out)
        if args.seeds:
            jobs = more_seeds(jobs, args.seeds)
        if args.futility:
            early, later = after_look(out, jobs)
            first, second = replay(early, slots)[0], replay(later, slots)[0] if later else 0.0
            print(
                f"{out}: {len(jobs)} jobs planned, {len(early)} up to the look ({first:.0f} s), "
                f"{len(later)} of {len(jobs) - len(early)} after it ({second:.0f} s) on {slots} "
                f"workers: replayed {first + second:.0f} s"
            )
            continue
        end, points = replay(jobs, slots)
        now, predicted, real = points[0]
        print(
            f"{out}: {len(jobs)} jobs on {slots} workers, replayed {end:.0f} s; first ETA at "
            f"{now:.0f} s: {predicted:.0f} s left, really {real:.0f} s "
            f"({100 * error(predicted, real):+.0f}%)"
        )
        minutes = [
            next(error(p, r) for t, p, r in points if t >= since)
            for since in range(0, int(points[-1][0]), 60)
        ]
        print("  every minute: " + " ".join(f"{100 * e:+.0f}%" for e in minutes))
        for since in (120, 300, 600):
            later = [error(p, r) for t, p, r in points if t >= since and r > 60]
            if later:
                print(f"  from {since // 60} min on: worst {100 * max(later, key=abs):+.0f}%")


if __name__ == "__main__":
    main()

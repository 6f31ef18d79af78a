"""Framework overhead: benchsuite's job path vs a minimal hand-written PyTorch loop.

Both train the same model (same architecture, data, minibatch order, steps, optimizer, gradient
clipping) on one thread; they alternate several times and the median ratios are printed:
``overhead ratio X`` for a job of one config against one minimal loop, and ``tuned job ratio Y``
for a job that tunes the track's whole grid (its configs trained as one vmapped stack) against a
minimal loop per config, one after the other (how a hand-written sweep would run).

    python benchmarks/overhead.py [--track sequence] [--mixer attention] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from plain import plain, step, test_metric

from benchsuite.execute.worker import Worker
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.settings import RunSettings
from benchsuite.train.job import build_model


def minimal_loop(job, registry, lr: float, fused: bool = True) -> float:
    """Build, train and evaluate with nothing but plain PyTorch; returns the test metric.

    ``fused``: the same AdamW kernel as benchsuite (the like-for-like comparison), or the default.
    """
    cell = plain(job, registry)
    model = build_model(cell.track, cell.mixer, cell.data, job)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=fused)
    for index in range(cell.budget.steps):
        step(model, cell, index, optimizer)
    return test_metric(model, cell)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default="sequence")
    parser.add_argument("--mixer", default="attention")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = load_registry()
    track, mixer = registry.tracks[args.track], registry.mixers[args.mixer]
    lrs = [config["lr"] for config in track.budget("quick").grid]
    middle = lrs[len(lrs) // 2]
    jobs = {}
    for name, grid in (("one", (middle,)), ("tuned", tuple(lrs))):
        asked = RunSettings(
            tracks=(args.track,),
            mixers=("dense", args.mixer),
            seeds=8,
            grids={args.track: {"lr": grid}},
        )
        settings = resolve(asked, registry)
        # seed 1: a seed that measures no probes
        jobs[name] = cell_jobs(settings, track, mixer, grid_of(track, settings), "benchmark")[1]
    worker = Worker(registry=registry)
    worker(jobs["one"]), minimal_loop(jobs["one"], registry, middle)  # warm up: imports, data
    ratios, naive, tuned = [], [], []
    for _ in range(args.repeats):
        framework = timed(lambda: worker(jobs["one"]))
        plain = timed(lambda: minimal_loop(jobs["one"], registry, middle))
        default_adamw = timed(lambda: minimal_loop(jobs["one"], registry, middle, fused=False))
        stacked = timed(lambda: worker(jobs["tuned"]))
        sweep = timed(lambda: [minimal_loop(jobs["tuned"], registry, lr) for lr in lrs])
        ratios.append(framework / plain)
        naive.append(framework / default_adamw)
        tuned.append(stacked / sweep)
        print(
            f"benchsuite {framework:.3f} s   minimal loop {plain:.3f} s   "
            f"(default AdamW {default_adamw:.3f} s)   ratio {ratios[-1]:.3f}   "
            f"tuned job {stacked:.3f} s vs {len(lrs)} loops {sweep:.3f} s"
        )
    print(f"vs a minimal loop with torch's default AdamW: {statistics.median(naive):.2f}")
    print(f"overhead ratio {statistics.median(ratios):.2f}")
    print(f"tuned job ratio {statistics.median(tuned):.2f} ({len(lrs)} configs)")


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

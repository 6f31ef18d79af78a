"""Framework overhead: benchsuite's job path vs a minimal hand-written PyTorch loop.

Both train the same model (same architecture, data, minibatch order, steps, optimizer) on one
thread; they alternate several times and the median ratio is printed as ``overhead ratio X``.

    python benchmarks/overhead.py [--track sequence] [--mixer attention] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchsuite.execute.worker import Worker
from benchsuite.plan.jobs import effective_budget, eval_jobs, job_template
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.seeds import Streams
from benchsuite.settings import RunSettings
from benchsuite.train.fit import batch_order
from benchsuite.train.job import build_model, job_budget, load_data


def minimal_loop(job, registry, fused: bool = True) -> float:
    """Build, train and evaluate with nothing but plain PyTorch; returns the test metric.

    ``fused``: the same AdamW kernel as benchsuite (the like-for-like comparison), or the default.
    """
    track, mixer = registry.tracks[job.track], registry.mixers[job.mixer]
    data = load_data(track, job)
    budget = job_budget(job)
    model = build_model(track, mixer, data, job)
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    order = batch_order(Streams(job.salt, job.track, job.seed).rng("order"), len(x),
                        budget.steps, budget.batch_size)  # fmt: skip
    optimizer = torch.optim.AdamW(model.parameters(), lr=job.config["lr"], fused=fused)
    for step in range(budget.steps):
        index = order[step]
        loss = track.loss(model(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        model.eval()
        prediction = model(torch.from_numpy(data.x_test))
    return track.evaluate(prediction, torch.from_numpy(data.y_test), data)[track.metric.name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default="sequence")
    parser.add_argument("--mixer", default="attention")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = load_registry()
    settings = resolve(
        RunSettings(tracks=(args.track,), mixers=("dense", args.mixer), seeds=8), registry
    )
    track, mixer = registry.tracks[args.track], registry.mixers[args.mixer]
    template = job_template(settings, track, mixer, "benchmark")
    grid = [dict(c) for c in effective_budget(track, settings).grid]
    job = eval_jobs(template, grid, 0, 8, batched=False)[1]  # a seed that measures no probes
    worker = Worker(registry=registry)
    worker(job), minimal_loop(job, registry)  # warm up: imports, data cache
    ratios, naive = [], []
    for _ in range(args.repeats):
        framework = timed(lambda: worker(job))
        plain = timed(lambda: minimal_loop(job, registry))
        default_adamw = timed(lambda: minimal_loop(job, registry, fused=False))
        ratios.append(framework / plain)
        naive.append(framework / default_adamw)
        print(f"benchsuite {framework:.3f} s   minimal loop {plain:.3f} s   "
              f"(default AdamW {default_adamw:.3f} s)   ratio {ratios[-1]:.3f}")  # fmt: skip
    print(f"vs a minimal loop with torch's default AdamW: {statistics.median(naive):.2f}")
    print(f"overhead ratio {statistics.median(ratios):.2f}")


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

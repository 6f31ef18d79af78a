"""The arithmetic a finished run did, and the floor it sets on the run's time.

    python benchmarks/arithmetic.py OUT [--seeds N] [--efficiency 0.5]

Every trained job's record holds, per config of its grid, the steps it trained, and the first
seed's of each cell its model's forward FLOPs per example (counted by torch's
``FlopCounterMode``: matrix products, convolutions, attention kernels; elementwise work is not
counted; the other seeds train the same model). So a run's arithmetic is counted
after the fact: training 3 × forward FLOPs × batch × steps (a backward pass costs about two
forwards), validation the forward FLOPs of the validation split at every check (every
``eval_every`` steps of each config; the split's size from the track's own loader). Printed per
track: jobs, job-seconds, TFLOP of training and of validation, and the GFLOP/s its jobs reached;
then the run scaled to ``--seeds`` seeds per cell, and the wall time that arithmetic needs on
this machine's cores at its measured single-thread sgemm peak (``torch.mm`` of 1024 × 1024,
float32) and at ``--efficiency`` of that peak: a floor no scheduling or overhead removal goes
below, for the same models, data and steps.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import torch

from benchsuite.records import RunRecord
from benchsuite.registry import load_registry
from benchsuite.seeds import Streams
from benchsuite.store.store import Store

BACKWARD_FACTOR = 3.0  # forward + backward ≈ three forward passes
ROW = "{:<18} {:>5} {:>8} {:>12} {:>10} {:>8}"


@dataclass
class Tally:
    """Jobs, their seconds, and the FLOPs of their training and validation."""

    jobs: int = 0
    seconds: float = 0.0
    train_flops: float = 0.0
    val_flops: float = 0.0

    def add(self, other: Tally) -> None:
        self.jobs += other.jobs
        self.seconds += other.seconds
        self.train_flops += other.train_flops
        self.val_flops += other.val_flops

    @property
    def flops(self) -> float:
        return self.train_flops + self.val_flops


def records(out: Path) -> tuple[list[RunRecord], dict, dict[tuple[str, str], float]]:
    """The trained jobs' records of the run stored in ``out``, its plan, and each cell's
    forward FLOPs per example (measured on the cell's first seed)."""
    store = Store.in_folder(out)
    try:
        found, plan = list(store.results().values()), store.last_plan() or {}
    finally:
        store.close()
    forward = {
        (r.job.track, r.job.mixer): r.result.costs.flops_per_example
        for r in found
        if r.result.costs.flops_per_example
    }
    return [r for r in found if (r.job.track, r.job.mixer) in forward], plan, forward


def validation_size(job: dict, sizes: dict[tuple, int]) -> int:
    """Examples in the job's validation split, from its track's loader (one load per track,
    preset and options: the splits' sizes do not depend on the seed)."""
    key = (job["track"], job["preset"], json.dumps(job["track_options"], sort_keys=True))
    if key not in sizes:
        track = load_registry().tracks[job["track"]]
        streams = Streams(job["salt"], job["track"], job["seed"])
        data = track.load(streams, dict(job["track_options"]), job["preset"], job["data_dir"])
        sizes[key] = len(data.x_val)
    return sizes[key]


def tally(record: RunRecord, forward: float, n_val: int) -> Tally:
    """One job's seconds and FLOPs (``forward``: its model's forward FLOPs per example)."""
    budget = record.job.to_plain()["budget"]
    steps = [row.steps or budget["steps"] for row in record.result.sweep]
    checks = sum(s // budget["eval_every"] for s in steps) if budget.get("eval_every") else 0
    return Tally(
        jobs=1,
        seconds=record.seconds,
        train_flops=BACKWARD_FACTOR * forward * budget["batch_size"] * sum(steps),
        val_flops=forward * n_val * checks,
    )


def row(name: str, t: Tally) -> str:
    """One line of the table: a track's (or the run's) jobs, seconds, TFLOP and GFLOP/s."""
    rate = t.flops / t.seconds / 1e9 if t.seconds else float("nan")
    return ROW.format(
        name,
        t.jobs,
        f"{t.seconds:.0f}",
        f"{t.train_flops / 1e12:.3f}",
        f"{t.val_flops / 1e12:.3f}",
        f"{rate:.2f}",
    )


def sgemm_peak(size: int = 1024, repeats: int = 7) -> float:
    """Single-thread float32 matrix-product FLOP/s (median of ``repeats``)."""
    torch.set_num_threads(1)
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder of a finished run")
    parser.add_argument("--seeds", type=int, default=13, help="scale the run to this many seeds")
    parser.add_argument("--efficiency", type=float, default=0.5, help="share of the sgemm peak")
    args = parser.parse_args()
    found, plan, forward = records(args.out)
    sizes: dict[tuple, int] = {}
    by_track: dict[str, Tally] = defaultdict(Tally)
    seeds_per_cell: dict[tuple[str, str], set[int]] = defaultdict(set)
    for record in found:
        job = record.job.to_plain()
        flops = forward[job["track"], job["mixer"]]
        by_track[job["track"]].add(tally(record, flops, validation_size(job, sizes)))
        seeds_per_cell[job["track"], job["mixer"]].add(job["seed"])
    total = Tally()
    print(ROW.format("track", "jobs", "job-s", "train TFLOP", "val TFLOP", "GFLOP/s"))
    for track, t in sorted(by_track.items(), key=lambda item: -item[1].flops):
        total.add(t)
        print(row(track, t))
    print(row("all", total))
    seeds = statistics.fmean(len(s) for s in seeds_per_cell.values())
    scale = args.seeds / seeds
    cores = plan["environment"].get("cpus") or os.cpu_count() or 1
    peak = sgemm_peak()
    flops = total.flops * scale
    print(
        f"\nreference step {1e3 * plan['environment']['reference_step_seconds']:.2f} ms; "
        f"{seeds:.1f} seeds per cell, scaled to {args.seeds}: {flops / 1e12:.1f} TFLOP, "
        f"{total.seconds * scale:,.0f} job-seconds ({total.seconds * scale / cores / 60:.0f} min "
        f"on {cores} cores)"
    )
    for share in (1.0, args.efficiency):
        minutes = flops / (cores * peak * share) / 60
        print(
            f"at {share:.0%} of the sgemm peak ({peak / 1e9:.1f} GFLOP/s a core) on {cores} "
            f"cores: {minutes:.1f} min"
        )


if __name__ == "__main__":
    main()

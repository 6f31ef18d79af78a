"""Does the stopping rule stop where the model stops learning, or where the schedule ends?

For one cell (every seed × the track's grid, the model, data and minibatch order of the suite's
jobs), each config is trained in a plain loop under three learning-rate schedules, each with the
track's early-stopping rule (a check every ``eval_every``; ``patience``; never before
``min_steps``; the best check's weights; not the trivial-level check, so use it on cells that
learn):

- ``cosine``: the suite's (linear warm-up, cosine decay to zero at the preset's most steps);
- ``cosine x2``: the same at twice the most steps (the issue's doubling test);
- ``plateau``: warm-up, then a constant rate until ``patience`` checks pass without
  improvement; then the rate is cut by ``--factor`` and patience starts again; after ``--cuts``
  cuts the next plateau stops the config (converged). Capped at ``--cap`` times the preset's steps.

The loop is written apart from the suite's trainer on purpose (it measured the plateau schedule
before the suite had it; the suite's own is ``--budget schedule=plateau``, docs/protocol.md "The
learning-rate schedule"). Each seed chooses its config on validation and scores it once on test,
as the protocol does.
Printed per schedule: the test metric (mean ± sd over seeds), the chosen configs' steps, how many
chosen configs ended by the rule (not by the cap), and the seconds.

    python benchmarks/schedules.py [--track dynamics] [--mixer dense] [--seeds 4]
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import time
from collections.abc import Callable

import torch
from plain import Plain, cosine, plain, step, test_metric, validation_score

from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.records import Job
from benchsuite.registry import Registry, load_registry
from benchsuite.settings import RunSettings
from benchsuite.train.job import build_model

Schedule = Callable[[int], float]


def train_config(
    job: Job,
    cell: Plain,
    config: dict,
    steps: int,
    warmup: int,
    decay: Schedule | None,
    cuts: int,
    cut: float,
) -> tuple[torch.nn.Module, float, int, bool]:
    """One config under the rule: (model at its best check, validation score, steps, converged).
    ``decay`` None: the plateau schedule (warm-up, constant, cut on each plateau)."""
    budget = cell.budget
    made = 0  # rate cuts so far (the plateau schedule reads it at every step)
    schedule = decay or (lambda i: min((i + 1) / warmup, 1.0) * cut**made)

    model = build_model(cell.track, cell.mixer, cell.data, job)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config["lr"], weight_decay=config.get("weight_decay", 0.0)
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    best, best_state, stale, done = -math.inf, None, 0, 0
    converged = False
    for index in range(steps):
        step(model, cell, index, optimizer)
        scheduler.step()
        done = index + 1
        if done % budget.eval_every and done != steps:
            continue
        value = validation_score(model, cell)
        if best == -math.inf or value > best + budget.min_delta * abs(best):
            best, best_state, stale = value, copy.deepcopy(model.state_dict()), 0
            continue
        stale += 1
        if stale < budget.patience or done < budget.min_steps:
            continue
        if decay is None and made < cuts:
            made, stale = made + 1, 0
            continue
        converged = True
        break
    model.load_state_dict(best_state)
    return model, best, done, converged


def run_cell(
    jobs: list[Job], registry: Registry, steps: int, warmup: int, decay, cuts: int, cut: float
) -> tuple[list[float], list[int], int]:
    """Every seed: the grid under one schedule, the config chosen on validation, scored on test
    (test metrics, the chosen configs' steps, how many of them the rule stopped)."""
    tests, lengths, by_rule = [], [], 0
    for job in jobs:
        cell = plain(job, registry)
        schedule = decay(warmup, steps) if decay else None
        trained = [
            train_config(job, cell, config, steps, warmup, schedule, cuts, cut)
            for config in job.grid
        ]
        chosen = max(range(len(trained)), key=lambda i: (trained[i][1], -i))
        model, _, done, converged = trained[chosen]
        tests.append(test_metric(model, cell))
        lengths.append(done)
        by_rule += converged
    return tests, lengths, by_rule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default="dynamics")
    parser.add_argument("--mixer", default="dense")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--cuts", type=int, default=1, help="rate cuts before a plateau stops")
    parser.add_argument("--factor", type=float, default=0.1, help="each cut multiplies the rate")
    parser.add_argument("--cap", type=int, default=4, help="plateau: most steps, x the preset's")
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = load_registry()
    track = registry.tracks[args.track]
    preset = track.budgets["quick"].steps
    settings = resolve(
        RunSettings(
            tracks=(args.track,),
            mixers=tuple(dict.fromkeys(("dense", args.mixer, "identity"))),
            seeds=max(args.seeds, 2),
            budget={"steps": preset * max(args.cap, 2)},
        ),
        registry,
    )
    mixer = registry.mixers[args.mixer]
    jobs = cell_jobs(settings, track, mixer, grid_of(track, settings), "schedules")[: args.seeds]
    warmup = max(1, int(track.budgets["quick"].warmup_fraction * preset))
    arms = [
        ("cosine", preset, cosine),
        ("cosine x2", 2 * preset, cosine),
        (f"plateau ({args.cuts} cuts of x{args.factor})", args.cap * preset, None),
    ]
    metric = (track.metric.name, "higher" if track.metric.higher_is_better else "lower")
    print(f"{args.track}/{args.mixer}, {len(jobs)} seeds x {len(jobs[0].grid)} configs, {metric}")
    for name, steps, decay in arms:
        start = time.perf_counter()
        tests, lengths, by_rule = run_cell(
            jobs, registry, steps, warmup, decay, args.cuts, args.factor
        )
        print(
            f"  {name:24s} most {steps:5d}: test {statistics.mean(tests):.4f} ± "
            f"{statistics.stdev(tests):.4f}  steps {statistics.mean(lengths):7.1f}  "
            f"stopped by the rule {by_rule}/{len(jobs)}  {time.perf_counter() - start:6.1f} s"
        )


if __name__ == "__main__":
    main()

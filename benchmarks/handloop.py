"""One cell's protocol as a researcher would write it, against benchsuite's time for the same cell.

The hand-written side trains, for every seed and every config of the track's grid, the same model
(architecture, initial weights, data, minibatch order) in a plain PyTorch loop: torch's AdamW,
linear warm-up then cosine decay, gradient clipping, and the track's early-stopping rule (every
``eval_every`` steps the validation score; stop after ``patience`` checks without improvement;
keep the best check's weights), one config after the other; it then chooses each seed's config
on validation and scores it on test. The suite's side runs the cell's jobs as ``benchsuite run``
does on this machine (each job's configs as one stack). Both on one thread, in this process:
printed, the two times, their ratio (suite / hand loop) and how many seeds chose the same config
(rounding differs between a stack and one model at a time, so a near tie may go either way).

    python benchmarks/handloop.py [--track vision] [--mixer dense] [--seeds 3]
"""

from __future__ import annotations

import argparse
import copy
import math
import time

import torch
from plain import cosine, plain, step, test_metric, validation_score

from benchsuite.execute.worker import Worker
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.records import Job
from benchsuite.registry import Registry, load_registry
from benchsuite.settings import RunSettings
from benchsuite.train.job import build_model, load_data


def hand_loop(job: Job, registry: Registry) -> tuple[int, float]:
    """Every config of the job's grid trained one after the other; (chosen config, its test
    metric)."""
    cell = plain(job, registry)
    budget = cell.budget
    schedule = cosine(max(1, int(budget.warmup_fraction * budget.steps)), budget.steps)

    scores, models = [], []
    for config in job.grid:
        model = build_model(cell.track, cell.mixer, cell.data, job)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=config["lr"], weight_decay=config.get("weight_decay", 0.0)
        )
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        best, best_state, stale = -math.inf, None, 0
        model.train()
        for index in range(budget.steps):
            step(model, cell, index, optimizer)
            scheduler.step()
            done = index + 1
            if budget.eval_every and (done % budget.eval_every == 0 or done == budget.steps):
                value = validation_score(model, cell)
                if value > best + budget.min_delta * abs(best) or best == -math.inf:
                    best, best_state, stale = value, copy.deepcopy(model.state_dict()), 0
                else:
                    stale += 1
                    if budget.patience and stale >= budget.patience:
                        break
        if best_state is not None and budget.checkpoint == "best":
            model.load_state_dict(best_state)
        scores.append(validation_score(model, cell))
        models.append(model)
    chosen = max(range(len(scores)), key=lambda i: (scores[i], -i))
    return chosen, test_metric(models[chosen], cell)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default="vision")
    parser.add_argument("--mixer", default="dense")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = load_registry()
    mixers = tuple(dict.fromkeys(("dense", args.mixer, "identity")))
    settings = resolve(
        RunSettings(tracks=(args.track,), mixers=mixers, seeds=max(args.seeds, 2)), registry
    )
    track, mixer = registry.tracks[args.track], registry.mixers[args.mixer]
    jobs = cell_jobs(settings, track, mixer, grid_of(track, settings), "handloop")[: args.seeds]
    jobs = [job.__class__(**{**job.__dict__, "measure": False}) for job in jobs]
    worker = Worker(registry=registry)
    load_data(track, jobs[0])  # warm up: imports and the data cache, for both sides
    start = time.perf_counter()
    suite = [worker(job) for job in jobs]
    suite_seconds = time.perf_counter() - start
    start = time.perf_counter()
    hand = [hand_loop(job, registry) for job in jobs]
    hand_seconds = time.perf_counter() - start
    same = sum(
        record.result.chosen == chosen for record, (chosen, _) in zip(suite, hand, strict=True)
    )
    print(
        f"{args.track}/{args.mixer}, {len(jobs)} seeds x {len(jobs[0].grid)} configs: "
        f"benchsuite {suite_seconds:.1f} s, hand loop {hand_seconds:.1f} s, "
        f"ratio {suite_seconds / hand_seconds:.2f}; same chosen config on {same} of "
        f"{len(jobs)} seeds"
    )


if __name__ == "__main__":
    main()

"""Learning curves of one mixer on MQAR (the ``recall`` track) far past the quick preset's budget:
does it leave chance with more steps, and at which learning rate? (issue 32, item 5;
docs/validation.md, "The recurrent side of MQAR").

    python benchmarks/mqar_curves.py --mixer gla --lrs 0.0015,0.0045 --steps 10000 --out FILE

One job of the suite (its data, model, minibatch order and stacked trainer; seed 0) with the
given learning rates as its grid, no early stopping and no pruning, the best of checks every
``--every`` steps kept: the width 64, 64 tokens, 4 pairs, 16 keys and 16 values of Zoology's
smallest MQAR cell, 2 blocks, batch 32. Writes, per learning rate, the training loss over the
steps (64 windows), the validation and test accuracy of its best check and that check's step;
chance is 1/16 accuracy, a training loss of ln 16 = 2.77 on the query positions.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.registry.track_variants import select
from benchsuite.settings import RunSettings
from benchsuite.train.job import run_job

TRACK = "recall[seq_len=64,num_pairs=4,num_queries=32]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mixer", required=True)
    parser.add_argument("--lrs", required=True, help="comma-separated learning rates")
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=500, help="steps between checks")
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = load_registry()
    lrs = tuple(float(lr) for lr in args.lrs.split(","))
    settings = RunSettings(
        tracks=(TRACK,),
        mixers=(args.mixer,),
        baseline="attention" if args.mixer != "attention" else "dense",
        seeds=2,
        match="none",
        budget={
            "steps": args.steps,
            "dim": 64,
            "depth": 2,
            "batch_size": 32,
            "eval_every": args.every,
            "patience": 0,
            "checkpoint": "best",
            "halve_at": (),
        },
        track_options={"recall": {"num_keys": 16, "num_values": 16}},
        grids={"recall": {"lr": lrs}},
    )
    settings = resolve(settings, registry)
    (track,) = select([TRACK], registry.tracks)
    mixer = registry.mixers[args.mixer]
    job = cell_jobs(settings, track, mixer, grid_of(track, settings), "mqar-curves")[0]
    start = time.perf_counter()
    result = run_job(job, track, mixer)
    seconds = time.perf_counter() - start
    rows = [
        {
            "lr": row.config["lr"],
            "val_accuracy": row.metrics.val.get("accuracy"),
            "best_step": row.best_step,
            "train_loss_curve": row.curve,
        }
        for row in result.sweep
    ]
    chosen = result.sweep[result.chosen].config["lr"]
    report = {
        "mixer": args.mixer,
        "steps": args.steps,
        "seconds": seconds,
        "chosen_lr": chosen,
        "test_accuracy": result.metrics.test.get("accuracy"),
        "configs": rows,
    }
    with open(args.out, "w") as file:
        json.dump(report, file, indent=1)
    for row in rows:
        curve = row["train_loss_curve"]
        print(
            f"{args.mixer} lr {row['lr']:g}: val accuracy {row['val_accuracy']:.3f} "
            f"(best check at {row['best_step']}), train loss {curve[0]:.2f} -> {curve[-1]:.2f}"
        )
    print(f"chosen lr {chosen:g}: test accuracy {report['test_accuracy']:.3f}; {seconds:.0f} s")


if __name__ == "__main__":
    main()

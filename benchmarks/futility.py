"""What the per-track design's futility look saves and what it costs in rejections, from a real
run that has reached the look (docs/protocol.md, "The futility look").

    python benchmarks/futility.py OUT [--draws 200]

``OUT`` holds a run planned with a futility look (``--design per-track``; stopped, or
interrupted, once its first half of the seeds is stored). The comparisons the look stops are the
run's own (:func:`benchsuite.results.futility.stopped_cells`). What the seeds after the look
would have shown is unknown, so each draw continues every comparison with seeds drawn with
replacement from its own seeds at the look, computes the exact sign-flip p of all the planned
seeds, and applies Holm over the family twice: as the run does (a stopped comparison at p = 1)
and without the look. Printed: the comparisons stopped, the job-seconds the look saves (each
cell's mean recorded seconds per job, the baseline kept while any of its track's comparisons
continues), and per draw the rejections without the look and those the look lost (mean, most).
The continuations repeat the look's seeds, so they are as consistent as those seeds: a guide to
the power cost, not a bound.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

import numpy as np

from benchsuite.api import stopped_by_look
from benchsuite.plan.plan import Plan
from benchsuite.protocol.stats import holm
from benchsuite.results import cells
from benchsuite.results.comparison import compare_cell
from benchsuite.results.futility import look_results
from benchsuite.store.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder of a per-track run past its look")
    parser.add_argument("--draws", type=int, default=200, help="continuations drawn")
    args = parser.parse_args()
    store = Store.in_folder(args.out)
    saved = store.last_plan()
    if saved is None:
        sys.exit(f"{args.out}: holds no run")
    plan = Plan.from_dict(saved)
    if plan.futility is None:
        raise SystemExit(f"{args.out}: its run planned no futility look (--design per-track)")
    stopped = stopped_by_look(plan, store)
    early = look_results(plan, store.results(plan.look_keys()))
    store.close()
    look, baseline, family = plan.futility, plan.settings.baseline, plan.family()
    seen, seconds = [], {}
    for track, row in plan.cells.items():
        base = cells.arm(plan, track, baseline, early)
        for mixer in row:
            arm = cells.arm(plan, track, mixer, early)
            seconds[track, mixer] = statistics.fmean(r.seconds for r in arm.records.values())
            if mixer != baseline:
                d = compare_cell(plan, track, mixer, base, arm).comparison.per_seed_improvements
                seen.append((track, mixer, np.array(d)))
    halted = {(t, m) for t, mixers in stopped.items() for m in mixers}
    needed = set(plan.needed_keys(stopped))
    every = sum(seconds[c.track, c.mixer] * len(c.jobs) for c in plan.cell_list())
    kept = sum(
        seconds[c.track, c.mixer] * sum(key in needed for key in c.jobs) for c in plan.cell_list()
    )
    print(
        f"{args.out}: look at {look.seeds} of {look.planned} seeds, alpha {look.alpha:.3g}; "
        f"{len(halted)} of {family} comparisons stopped; job-seconds {kept:.0f} of {every:.0f} "
        f"({kept / every:.3f})"
    )
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=look.planned)))
    rng = np.random.default_rng(0)
    found, lost = [], []
    for _ in range(args.draws):
        p = []
        for _, _, d in seen:
            full = np.concatenate([d, rng.choice(d, size=look.planned - look.seeds)])
            p.append(float(np.mean(np.abs(signs @ full) >= abs(full.sum()) - 1e-12)))
        without = np.array(holm(p, family)) < 0.05
        ran = [1.0 if (t, m) in halted else q for (t, m, _), q in zip(seen, p, strict=True)]
        with_look = np.array(holm(ran, family)) < 0.05
        found.append(int(without.sum()))
        lost.append(int((without & ~with_look).sum()))
    print(
        f"{args.draws} continuations: rejections without the look {statistics.fmean(found):.1f}, "
        f"lost to it {statistics.fmean(lost):.2f} on average, {max(lost)} at most"
    )


if __name__ == "__main__":
    main()

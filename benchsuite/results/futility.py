"""Which comparisons the per-track design's futility look stopped (docs/protocol.md, "The
futility look"), decided from the stored results of every cell's first seeds alone, so that the
runner (which then leaves their other seeds untrained) and ``benchsuite report`` (which reads
the store) decide alike."""

from __future__ import annotations

import numpy as np

from benchsuite.plan.plan import Plan
from benchsuite.protocol.futility import futile
from benchsuite.protocol.stats import LEARNT_NOTHING_SEEDS, UNSTABLE_RATE, improvements
from benchsuite.records import RunRecord
from benchsuite.results import cells as cells_
from benchsuite.results.comparison import paired


def look_results(plan: Plan, results: dict[str, RunRecord]) -> dict[str, RunRecord]:
    """The stored results of the jobs the look waits for (every cell's first seeds)."""
    return {key: results[key] for key in plan.look_keys() if key in results}


def stopped_cells(plan: Plan, results: dict[str, RunRecord]) -> dict[str, dict[str, int]]:
    """Track -> mixer -> seeds at the look, for each comparison the look stopped: both arms have
    every seed of the look stored, and :func:`benchsuite.protocol.futility.futile` holds for its
    paired improvements and margin there (none without a look)."""
    look = plan.futility
    if look is None:
        return {}
    early = look_results(plan, results)
    baseline = plan.settings.baseline
    stopped: dict[str, dict[str, int]] = {}
    for track, cells in plan.cells.items():
        base = cells_.arm(plan, track, baseline, early) if baseline in cells else None
        if base is None or len(base.records) < look.seeds:
            continue
        for mixer in cells:
            arm = cells_.arm(plan, track, mixer, early) if mixer != baseline else None
            if arm is None or len(arm.records) < look.seeds:
                continue
            facts = plan.tracks[track]
            seeds, caps, base_values, arm_values = paired(base, arm, facts.higher_is_better)
            seen, _, margin = improvements(
                np.asarray(base_values),
                np.asarray(arm_values),
                facts.higher_is_better,
                facts.scale,
                plan.settings.margin,
                np.asarray(caps),
            )
            # an equivalence is never claimed for a mixer that learnt nothing on a quarter of
            # its seeds (and on more than one): as many already seen rule it out at every seed
            # count up to the plan's
            learnt_nothing = sum(arm.not_learned[s] for s in seeds)
            flagged = learnt_nothing >= max(LEARNT_NOTHING_SEEDS, UNSTABLE_RATE * look.planned)
            if futile(seen.tolist(), margin, look, equivalence=not flagged):
                stopped.setdefault(track, {})[mixer] = look.seeds
    return stopped

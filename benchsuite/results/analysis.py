"""From the plan and the stored records to the run's report: paired comparisons, Holm, flags,
signatures and the across-track figures.

Input is plain data (the :class:`~benchsuite.plan.plan.Plan` and RunRecords); output is one
JSON-able dict. The config of each cell is the one the plan records: nothing is selected again
here. No torch, so ``benchsuite report`` re-derives every figure from the store alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from benchsuite.errors import UsageError
from benchsuite.execute.record import RunRecord
from benchsuite.plan.matching import comparison_size
from benchsuite.plan.plan import Plan
from benchsuite.plan.power import design_warning, min_seeds_for_significance
from benchsuite.plan.selection import NO_BETTER_THAN_TRIVIAL, NON_FINITE, divergence, on_edge
from benchsuite.results import curves, flags, stats
from benchsuite.results.aggregate import aggregate_across_tracks
from benchsuite.results.store import Store
from benchsuite.results.tradeoffs import quality_vs_cost
from benchsuite.specs import Signature

REPORT_VERSION = 2
AT_CHANCE_P = 0.05  # one-sided level of "better than the trivial predictor"


def at_chance(values: dict[int, float], caps: dict[int, float | None], higher: bool) -> bool:
    """True when a cell's test scores are not better than its seeds' trivial predictor (one-sided
    sign-flip test at ``AT_CHANCE_P``): its validation curve is flat noise, so where its choice
    falls in the grid says nothing about the grid."""
    seeds = [s for s in values if caps.get(s) is not None and math.isfinite(values[s])]
    if len(seeds) < 2:
        return False
    gain = np.array([values[s] - caps[s] for s in seeds]) * (1.0 if higher else -1.0)
    p_two_sided = stats.sign_flip_p(gain)[0]
    return not (gain.mean() > 0 and p_two_sided / 2 < AT_CHANCE_P)


def _records(plan: Plan, track: str, mixer: str, results: dict[str, RunRecord]) -> dict:
    cell = plan.cells[track].get(mixer)
    found = [results[key] for key in (cell.jobs if cell else []) if key in results]
    return {record.job["seed"]: record for record in found}


def _modal(counts: list[int], rows: list[dict], higher: bool) -> tuple[int, list[int]]:
    """The most-chosen config and every config tied with it; a tie goes to the best mean
    validation score over the seeds, then to grid order."""
    tied = [k for k, c in enumerate(counts) if c == max(counts)]
    sign = 1.0 if higher else -1.0

    def score(k: int) -> float:
        mean = rows[k]["mean"]
        return sign * mean if math.isfinite(mean) else -math.inf

    return max(tied, key=lambda k: (score(k), -k)), tied


def selection(grid: list[dict], chosen: dict[int, int], records: dict[int, RunRecord],
              metric: str, chance: bool = False,
              higher: bool = True) -> dict[str, Any]:  # fmt: skip
    """How a cell's seeds chose: counts per config, the modal config (ties: best validation mean,
    then grid order), how many seeds agree with it, how many chose an end of the grid, and every
    config's validation score per seed. ``edge_of_grid`` needs every config tied for the most
    choices on an end of the grid (a tie-break never makes an edge). ``chance``: the cell is at
    chance, so an end of the grid is recorded (``modal_on_edge``) but not flagged."""
    counts = [sum(index == k for index in chosen.values()) for k in range(len(grid))]
    rows = []
    for k, config in enumerate(grid):
        values = [
            records[seed].sweep[k]["metrics"].get(f"val.{metric}", math.nan)
            for seed in sorted(records)
            if len(records[seed].sweep) > k
        ]
        rows.append({"cfg": config, "val": values, "chosen_by": counts[k],
                     "mean": float(np.mean(values)) if values else math.nan})  # fmt: skip
    modal, tied = _modal(counts, rows, higher)
    n = max(len(chosen), 1)
    steps, axis = flags.selection_spread(grid, list(chosen.values()))
    return {
        "modal": modal,
        "tied": tied if len(tied) > 1 else [],
        "counts": counts,
        "agreement": counts[modal] / n,
        "edge_share": sum(on_edge(grid, grid[i]) for i in chosen.values()) / n,
        "modal_on_edge": on_edge(grid, grid[modal]),
        "edge_of_grid": all(on_edge(grid, grid[k]) for k in tied) and not chance,
        "at_chance": chance,
        "spread": {"steps": steps, "axis": axis},
        "indecisive": flags.indecisive(steps) and not chance,
        "chosen": {str(seed): index for seed, index in sorted(chosen.items())},
        "sweep": rows,
    }


def _arm(plan: Plan, track: str, mixer: str, results: dict[str, RunRecord]) -> dict | None:
    facts = plan.tracks[track]
    records = _records(plan, track, mixer, results)
    if not records:
        return None
    cell = plan.cells[track][mixer]
    chosen = {  # the plan's record of each seed's choice; a run still going has not saved it yet
        seed: cell.chosen.get(str(seed), record.chosen)
        for seed, record in records.items()
        if cell.chosen.get(str(seed), record.chosen) is not None
    }
    metric = f"test.{facts.metric}"
    first = records[min(records)]
    values = {seed: r.metrics.get(metric, math.nan) for seed, r in records.items()}
    caps = {seed: r.cap for seed, r in records.items()}
    chance = at_chance(values, caps, facts.higher_is_better)
    higher = facts.higher_is_better
    reasons = {seed: _reason(r, values[seed], higher) for seed, r in records.items()}
    return {
        "records": records,
        "values": values,
        "diverged": {seed: bool(reason) for seed, reason in reasons.items()},
        "reasons": reasons,
        "caps": caps,
        "selection": selection(facts.grid, chosen, records, facts.metric, chance, higher),
        "costs": first.costs,
        "probes": first.probes if first.job.get("measure") else {},
        "n_planned": len(cell.jobs),
    }


def _reason(record: RunRecord, value: float, higher: bool) -> str:
    """Why a stored result is imputed, with the caps compared at float32 precision (records
    stored before that tolerance keep their non-finite reason, not a rounding one)."""
    if record.divergence == NON_FINITE or (record.diverged and not record.divergence):
        return record.divergence or NON_FINITE
    return divergence(value, record.cap, higher, finite=True)


def _summary(values: list[float]) -> dict[str, Any]:
    array = np.asarray(values, dtype=float)
    return {
        "mean": float(array.mean()) if len(array) else None,
        "std": float(array.std(ddof=1)) if len(array) > 1 else None,
        "per_seed": [float(v) for v in array],
        "n": len(array),
    }


def _signature(signature: dict | None, arm: dict, base: dict) -> dict | None:
    if not signature:
        return None
    result = Signature(**signature).check(arm["probes"], base["probes"])
    result["measured_on"] = "trained model (chosen config), first evaluation seed"
    for key, value in result["predicted"].items():  # the prototype's bench_report v1 keys
        result[f"predicted_{key}"] = value
        result[f"observed_{key}_seed0"] = result["observed"][key]
        result[f"baseline_observed_{key}_seed0"] = result["baseline_observed"][key]
    return result


def compare_cell(plan: Plan, track: str, base: dict, arm: dict) -> dict:
    """The paired comparison of one mixer against the baseline on one track: diverged results
    of either arm imputed with their seed's cap, on the metric's scale (log-ratios or
    differences), flagged."""
    facts, metric = plan.tracks[track], plan.tracks[track].scale
    higher = facts.higher_is_better
    seeds = sorted(set(base["values"]) & set(arm["values"]))
    fill = -math.inf if higher else math.inf
    caps = [base["caps"][s] if base["caps"][s] is not None else fill for s in seeds]
    base_raw = [base["values"][s] for s in seeds]
    arm_raw = [arm["values"][s] for s in seeds]
    base_div = [base["diverged"][s] for s in seeds]
    arm_div = [arm["diverged"][s] for s in seeds]
    base_vals = stats.impute_diverged(base_raw, base_div, caps)
    arm_vals = stats.impute_diverged(arm_raw, arm_div, caps)
    comparison = stats.compare_paired(
        base_vals, arm_vals, higher_is_better=higher, scale=metric,
        margin_rel=plan.settings["margin"],
    )  # fmt: skip
    base_params, arm_params = base["costs"].get("params"), arm["costs"].get("params")
    reasons = [arm["reasons"][s] for s in seeds]
    stats.flag_comparison(
        comparison,
        non_finite=reasons.count(NON_FINITE),
        no_better_than_trivial=reasons.count(NO_BETTER_THAN_TRIVIAL),
        n=len(seeds),
        edge_of_grid=arm["selection"]["edge_of_grid"],
        baseline_edge_of_grid=base["selection"]["edge_of_grid"],
        indecisive_selection=arm["selection"]["indecisive"],
    )
    ratio = flags.param_ratio(arm_params, base_params)
    if flags.param_mismatch(ratio):
        comparison.flags.append("param_mismatch")
    both = stats.compare_both_converged(
        base_raw, arm_raw, base_div, arm_div, higher, scale=metric,
        margin_rel=plan.settings["margin"],
    )  # fmt: skip
    return {
        "comparison": comparison,
        "param_ratio": ratio,
        "seeds": seeds,
        "missing_seeds": arm["n_planned"] - len(seeds),
        "divergence": {
            "mixer": stats.divergence_summary(sum(arm_div), len(seeds)),
            "baseline": stats.divergence_summary(sum(base_div), len(seeds)),
            "mixer_reasons": {r: reasons.count(r) for r in (NON_FINITE, NO_BETTER_THAN_TRIVIAL)},
        },
        "both_converged": both,
        "baseline_values": base_vals,
        "mixer_values": arm_vals,
        "caps": caps,
    }


def test_set(records: list[RunRecord]) -> dict[str, Any]:
    """Whether every seed of a track was scored on the same test set, and its digest (else one
    digest of the seeds' test sets), read from the records."""
    digests = {r.job["seed"]: r.test_digest for r in records if r.test_digest}
    unique = sorted(set(digests.values()))
    combined = hashlib.sha256(" ".join(digests[s] for s in sorted(digests)).encode())
    return {
        "fixed": len(unique) == 1,
        "digest": unique[0] if len(unique) == 1 else combined.hexdigest()[:16],
        "seeds": len(digests),
    }


def cost_medians(records: dict[int, RunRecord]) -> dict[str, float]:
    """Each recorded cost's median over a cell's evaluation runs (the seeds that measured it)."""
    names = dict.fromkeys(name for record in records.values() for name in record.costs)
    return {
        name: float(np.median([r.costs[name] for r in records.values() if name in r.costs]))
        for name in names
    }


def _mixer_entry(facts: Any, arm: dict) -> dict[str, Any]:
    seeds = sorted(arm["values"])
    fill = -math.inf if facts.higher_is_better else math.inf
    caps = [arm["caps"][s] if arm["caps"][s] is not None else fill for s in seeds]
    raw = [arm["values"][s] for s in seeds]
    imputed = stats.impute_diverged(raw, [arm["diverged"][s] for s in seeds], caps)
    chosen = arm["selection"]
    curve = curves.learning_curve(arm["records"], facts.budget.get("steps"))
    return {
        "best_cfg": facts.grid[chosen["modal"]],
        "best_index": chosen["modal"],
        "edge_of_grid": chosen["edge_of_grid"],
        "selection": {k: v for k, v in chosen.items() if k != "sweep"},
        "sweep": chosen["sweep"],
        "full": {**_summary(imputed), "raw": _summary(raw)},
        "diverged": int(sum(arm["diverged"].values())),
        "costs": arm["costs"],
        "costs_median": cost_medians(arm["records"]),
        "probes": arm["probes"],
        "learning_curve": curve,
        "undertrained": bool(curve and curve["undertrained"]),
    }


def analyse(plan: Plan, results: dict[str, RunRecord], failures: list[RunRecord]) -> dict:
    """The whole report of a run, from its plan and the stored records."""
    settings = plan.settings
    baseline = settings["baseline"]
    tracks: dict[str, Any] = {}
    family, both_family = [], []
    for track, facts in plan.tracks.items():
        cells = plan.cells.get(track, {})
        arms = {m: _arm(plan, track, m, results) for m in settings["mixers"] if m in cells}
        base = arms.get(baseline)
        records = [r for arm in arms.values() if arm for r in arm["records"].values()]
        entry: dict[str, Any] = {**dataclasses.asdict(facts), "baseline": baseline,
                                 "test_set": test_set(records), "mixers": {},
                                 "comparisons": {},
                                 "scale_note": scale_note(settings.get("preset", ""),
                                                          facts.budget)}  # fmt: skip
        tracks[track] = entry
        for mixer, arm in arms.items():
            if arm is None:
                continue
            entry["mixers"][mixer] = _mixer_entry(facts, arm)
            if mixer == baseline or base is None:
                continue
            cell = compare_cell(plan, track, base, arm)
            flag_undertrained(cell["comparison"], entry["mixers"], mixer, baseline)
            cell["signature"] = _signature(plan.mixers[mixer].signature, arm, base)
            cell["size"] = comparison_size(cells[mixer].size, base["costs"], arm["costs"])
            entry["comparisons"][mixer] = cell
            family.append(cell["comparison"])
            if cell["both_converged"] is not None:
                both_family.append(cell["both_converged"])
    size = plan.family()
    stats.apply_holm(family, family=max(size, len(family)))
    stats.apply_holm(both_family)
    for entry in tracks.values():
        for mixer, cell in entry["comparisons"].items():
            cell["comparison"] = cell["comparison"].to_dict()
            cell["flag_reasons"] = flags.reasons(
                cell["comparison"], cell, entry["mixers"][mixer], entry["mixers"][baseline]
            )
            if cell["both_converged"] is not None:
                cell["both_converged"] = cell["both_converged"].to_dict()
    planned = plan.keys()
    used = [results[k] for k in planned if k in results]
    across = _across(tracks, plan, baseline)
    return {
        "report_version": REPORT_VERSION,
        "warnings": environment_warnings(used),
        "settings": settings,
        "environment": plan.environment,
        "mixers": {name: dataclasses.asdict(m) for name, m in plan.mixers.items()},
        "tracks": tracks,
        "skipped": [dataclasses.asdict(s) for s in plan.skipped],
        "scale": scale_summary(settings.get("preset", ""), tracks),
        "design": design(settings, max(size, len(family)), len(family), len(both_family)),
        "selection": selection_summary(tracks),
        "across_tracks": across,
        "learning_curves": curves.summary(tracks),
        "quality_vs_cost": quality_vs_cost(tracks, across),
        "failures": [
            _failure_row(r) for r in failures if r.key not in results and r.key in planned
        ],
    }


def scale_note(preset: str, budget: dict[str, Any]) -> str:
    """One sentence naming the scale that produced a track's results: preset, width, depth and
    budget (a quick preset's verdicts describe that scale, not the mixers at large)."""
    size = (f"{preset} preset: dim {budget.get('dim')}, depth {budget.get('depth')}, "
            f"{budget.get('steps')} steps × batch {budget.get('batch_size')}")  # fmt: skip
    return f"{size} (verdicts describe this small scale)" if preset == "quick" else size


def scale_summary(preset: str, tracks: dict[str, Any]) -> dict[str, Any]:
    """The run's scale (``report.json`` → ``scale``): each track's width, depth and budget, and
    the one sentence the page's head shows."""
    budgets = {t: {k: e["budget"].get(k) for k in ("dim", "depth", "steps", "batch_size")}
               for t, e in tracks.items()}  # fmt: skip
    per_track = "; ".join(
        f"{t}: dim {b['dim']}, depth {b['depth']}, {b['steps']} steps × batch {b['batch_size']}"
        for t, b in budgets.items()
    )
    closing = (
        "quick-preset verdicts describe this small scale, not the mixers at large"
        if preset == "quick"
        else "verdicts describe this scale"
    )
    return {"preset": preset, "tracks": budgets,
            "note": f"{preset} preset ({per_track}): {closing}."}  # fmt: skip


def flag_undertrained(comparison: stats.Comparison, arms: dict[str, Any], mixer: str,
                      baseline: str) -> None:  # fmt: skip
    """Add ``undertrained`` (the mixer's curve) and ``baseline_undertrained`` to the flags."""
    for name, flag in ((mixer, "undertrained"), (baseline, "baseline_undertrained")):
        if arms.get(name, {}).get("undertrained"):
            comparison.flags.append(flag)


def selection_summary(tracks: dict[str, Any]) -> dict[str, Any]:
    """Across every cell (the baseline's included): how many are at chance, how many of the
    others chose an end of their grid, and how many seeds agreed with their cell's modal choice."""
    every = [arm for entry in tracks.values() for arm in entry["mixers"].values()]
    cells = [arm for arm in every if not arm["selection"].get("at_chance")]
    edge = [arm["edge_of_grid"] for arm in cells]
    agreement = [arm["selection"]["agreement"] for arm in cells]
    return {
        "cells": len(every),
        "at_chance": len(every) - len(cells),
        "edge_of_grid": sum(edge),
        "edge_share": sum(edge) / len(cells) if cells else None,
        "median_agreement": float(np.median(agreement)) if agreement else None,
        "indecisive": sum(arm["selection"]["indecisive"] for arm in cells),
    }


ENVIRONMENT_KEYS = ("torch", "python", "threads", "device", "deterministic")


def environment_warnings(records: list[RunRecord]) -> list[str]:
    """One line per environment setting that differs between the runs combined in a report."""
    warnings = []
    for key in ENVIRONMENT_KEYS:
        values = sorted({str(r.environment.get(key)) for r in records if r.environment})
        if len(values) > 1:
            warnings.append(
                f"results combine training runs with different {key}: {', '.join(values)}"
            )
    return warnings


def design(settings: dict, comparisons: int, finished: int | None = None,
           both_converged: int = 0) -> dict:  # fmt: skip
    """Whether the seed count can reach Holm significance for this family size; ``finished``:
    the comparisons made (fewer than the family after an interruption: the tables are
    ``partial``); ``both_converged``: the size of the both-converged analyses' own family."""
    needed = min_seeds_for_significance(max(comparisons, 1))
    finished = comparisons if finished is None else finished
    return {
        "comparisons": comparisons,
        "finished": finished,
        "partial": finished < comparisons,
        "alpha": 0.05,
        "verdict_alpha": 0.05 / max(comparisons, 1),
        "both_converged_comparisons": both_converged,
        "seeds": settings["seeds"],
        "min_seeds_for_significance": needed,
        "warning": design_warning(settings["seeds"], max(comparisons, 1)),
    }


def report_digest(plan: Plan, results: dict[str, RunRecord], failures: list[RunRecord]) -> str:
    """Hash of everything a report is made from (the plan, the results used, the failures, and
    the code of the results and output stages): a re-run with the same digest reuses it."""
    stages = Path(__file__).parent.parent
    code = b"".join(path.read_bytes() for folder in ("results", "output")
                    for path in sorted((stages / folder).glob("*.py")))  # fmt: skip
    inputs = {key: value for key, value in plan.to_dict().items() if key != "environment"}
    inputs["results"] = sorted(results)
    inputs["failures"] = len(failures)
    payload = json.dumps(inputs, sort_keys=True, default=str).encode() + code
    return hashlib.sha256(payload).hexdigest()[:24]


def _across(tracks: dict, plan: Plan, baseline: str) -> dict | None:
    per_track, verdicts = {}, {}
    for name, entry in tracks.items():
        if not entry["comparisons"]:
            continue
        per_track[name] = {
            "higher_is_better": entry["higher_is_better"],
            "ideal": plan.tracks[name].ideal,
            "pairs": {
                mixer: {
                    "baseline": c["baseline_values"],
                    "mixer": c["mixer_values"],
                    "caps": c["caps"],
                }
                for mixer, c in entry["comparisons"].items()
            },
        }
        verdicts[name] = {m: c["comparison"]["verdict"] for m, c in entry["comparisons"].items()}
    if not per_track:
        return None
    across = aggregate_across_tracks(per_track, baseline_name=baseline, verdicts=verdicts)
    across["tracks_left_out"] = left_out(tracks, across, baseline)
    return across


def left_out(tracks: dict, across: dict, baseline: str) -> dict[str, str]:
    """Tracks of the run that the across-track figures leave out, with the reason."""
    reasons = {}
    for name, entry in tracks.items():
        if name in across["tracks"]:
            continue
        if not entry["mixers"]:
            reasons[name] = "no finished runs"
        elif baseline not in entry["mixers"]:
            reasons[name] = f"no results for the baseline {baseline}"
        elif not entry["comparisons"]:
            reasons[name] = "no mixer besides the baseline"
        else:
            reasons[name] = "no score: the metric declares no ideal value and the baseline has none"
    return reasons


def _failure_row(record: RunRecord) -> dict:
    job = record.job
    return {
        "track": job["track"], "mixer": job["mixer"],
        "seed": job["seed"], "reason": record.error, "traceback": record.traceback,
    }  # fmt: skip


def stored_inputs(store: Store, plan: Plan) -> tuple[dict[str, RunRecord], list[RunRecord], str]:
    """The stored results of the plan's jobs, every failure, and their report digest."""
    results, failures = store.results(plan.keys()), store.failures()
    return results, failures, report_digest(plan, results, failures)


def analyse_store(path: Path) -> dict[str, Any]:
    """The report of the last run saved in the store at ``path`` (no training, no files)."""
    if not path.exists():
        raise UsageError(f"no benchsuite store in {path.parent} (expected {path})")
    store = Store(path)
    try:
        saved = store.last_plan()
        if saved is None:
            raise UsageError(f"store {path} holds no finished run")
        plan = Plan.from_dict(saved)
        results, failures, digest = stored_inputs(store, plan)
        return {**analyse(plan, results, failures), "inputs_digest": digest}
    finally:
        store.close()

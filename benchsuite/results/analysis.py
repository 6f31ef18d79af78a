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
from benchsuite.plan.plan import Plan
from benchsuite.plan.power import design_warning, min_seeds_for_significance
from benchsuite.plan.selection import on_edge
from benchsuite.results import stats
from benchsuite.results.aggregate import aggregate_across_tracks
from benchsuite.results.store import Store
from benchsuite.results.sweeps import sweep_table
from benchsuite.specs import Signature

REPORT_VERSION = 2


def _by_key(keys: list[str], results: dict[str, RunRecord]) -> list[RunRecord]:
    return [results[key] for key in keys if key in results]


def _arm(plan: Plan, track: str, mixer: str, results: dict[str, RunRecord]) -> dict | None:
    facts = plan.tracks[track]
    cell = plan.cells[track].get(mixer)
    if cell is None or not cell.eval or cell.chosen is None:
        return None
    records = {r.job["seed"]: r for r in _by_key(cell.eval, results)}
    metric = f"test.{facts.metric}"
    table = sweep_table(facts.grid, facts.metric, facts.higher_is_better, cell.sweep, results)
    best = cell.chosen
    first = records.get(min(records)) if records else None
    return {
        "records": records,
        "values": {seed: r.metrics.get(metric, math.nan) for seed, r in records.items()},
        "diverged": {seed: r.diverged for seed, r in records.items()},
        "best_index": best,
        "best_cfg": facts.grid[best],
        "edge_of_grid": on_edge(facts.grid, facts.grid[best]),
        "sweep": [{"cfg": row["config"], "mean": row["mean"], "val": row["val"]} for row in table],
        "costs": first.costs if first else {},
        "probes": first.probes if first and first.job.get("measure") else {},
        "n_planned": len(cell.eval),
    }


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
    result["measured_on"] = "trained model, first evaluation seed"
    for key, value in result["predicted"].items():  # the prototype's bench_report v1 keys
        result[f"predicted_{key}"] = value
        result[f"observed_{key}_seed0"] = result["observed"][key]
        result[f"baseline_observed_{key}_seed0"] = result["baseline_observed"][key]
    return result


def compare_cell(plan: Plan, track: str, base: dict, arm: dict) -> dict:
    """The paired comparison of one mixer against the baseline on one track."""
    higher = plan.tracks[track].higher_is_better
    cap = next((r.cap for r in arm["records"].values() if r.cap is not None), None)
    seeds = sorted(set(base["values"]) & set(arm["values"]))
    base_raw = [base["values"][s] for s in seeds]
    arm_raw = [arm["values"][s] for s in seeds]
    base_div = [base["diverged"][s] for s in seeds]
    arm_div = [arm["diverged"][s] for s in seeds]
    fill = cap if cap is not None else (-math.inf if higher else math.inf)
    base_vals = stats.impute_diverged(base_raw, base_div, fill)
    arm_vals = stats.impute_diverged(arm_raw, arm_div, fill)
    comparison = stats.compare_paired(
        base_vals, arm_vals, higher_is_better=higher,
        margin_rel=plan.settings["margin"],
    )  # fmt: skip
    base_params, arm_params = base["costs"].get("params"), arm["costs"].get("params")
    stats.flag_comparison(
        comparison,
        diverged_mixer=sum(arm_div),
        n=len(seeds),
        edge_of_grid=arm["edge_of_grid"],
        param_ratio=(arm_params / base_params) if base_params and arm_params else None,
    )
    both = stats.compare_both_converged(base_raw, arm_raw, base_div, arm_div, higher)
    return {
        "comparison": comparison,
        "seeds": seeds,
        "missing_seeds": arm["n_planned"] - len(seeds),
        "divergence": {
            "mixer": stats.divergence_summary(sum(arm_div), len(seeds)),
            "baseline": stats.divergence_summary(sum(base_div), len(seeds)),
        },
        "both_converged": both.to_dict() if both is not None else None,
        "baseline_values": base_vals,
        "mixer_values": arm_vals,
    }


def analyse(plan: Plan, results: dict[str, RunRecord], failures: list[RunRecord]) -> dict:
    """The whole report of a run, from its plan and the stored records."""
    settings = plan.settings
    baseline = settings["baseline"]
    tracks: dict[str, Any] = {}
    family = []
    for track, facts in plan.tracks.items():
        cells = plan.cells.get(track, {})
        arms = {m: _arm(plan, track, m, results) for m in settings["mixers"] if m in cells}
        base = arms.get(baseline)
        entry: dict[str, Any] = {**dataclasses.asdict(facts), "baseline": baseline, "mixers": {},
                                 "comparisons": {}}  # fmt: skip
        tracks[track] = entry
        for mixer, arm in arms.items():
            if arm is None:
                continue
            values = [arm["values"][s] for s in sorted(arm["values"])]
            entry["mixers"][mixer] = {
                "best_cfg": arm["best_cfg"], "best_index": arm["best_index"],
                "edge_of_grid": arm["edge_of_grid"], "sweep": arm["sweep"],
                "full": _summary(values), "diverged": int(sum(arm["diverged"].values())),
                "costs": arm["costs"], "probes": arm["probes"],
            }  # fmt: skip
            if mixer == baseline or base is None:
                continue
            cell = compare_cell(plan, track, base, arm)
            cell["signature"] = _signature(plan.mixers[mixer].signature, arm, base)
            entry["comparisons"][mixer] = cell
            family.append(cell["comparison"])
    stats.apply_holm(family)
    for entry in tracks.values():
        for cell in entry["comparisons"].values():
            cell["comparison"] = cell["comparison"].to_dict()
    planned = plan.keys()
    used = [results[k] for k in planned if k in results]
    return {
        "report_version": REPORT_VERSION,
        "warnings": environment_warnings(used),
        "settings": settings,
        "environment": plan.environment,
        "mixers": {name: dataclasses.asdict(m) for name, m in plan.mixers.items()},
        "tracks": tracks,
        "skipped": [dataclasses.asdict(s) for s in plan.skipped],
        "design": design(settings, len(family)),
        "across_tracks": _across(tracks, baseline),
        "failures": [
            _failure_row(r) for r in failures if r.key not in results and r.key in planned
        ],
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


def design(settings: dict, comparisons: int) -> dict:
    """Whether the seed count can reach Holm significance for this family size."""
    needed = min_seeds_for_significance(max(comparisons, 1))
    return {
        "comparisons": comparisons,
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


def _across(tracks: dict, baseline: str) -> dict | None:
    per_track, verdicts = {}, {}
    for name, entry in tracks.items():
        if not entry["comparisons"]:
            continue
        first = next(iter(entry["comparisons"].values()))
        per_track[name] = {
            "higher_is_better": entry["higher_is_better"],
            "baseline": first["baseline_values"],
            "mixers": {m: c["mixer_values"] for m, c in entry["comparisons"].items()},
        }
        verdicts[name] = {m: c["comparison"]["verdict"] for m, c in entry["comparisons"].items()}
    if not per_track:
        return None
    return aggregate_across_tracks(per_track, baseline_name=baseline, verdicts=verdicts)


def _failure_row(record: RunRecord) -> dict:
    job = record.job
    return {
        "track": job["track"], "mixer": job["mixer"], "stage": job["stage"],
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

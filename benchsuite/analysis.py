"""From stored records to the run's report: selection, paired comparisons, Holm, signatures.

Input is plain data (the run manifest and RunRecords); output is one JSON-able dict. No torch here,
so ``benchsuite report`` can re-derive every figure from the store alone.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from benchsuite import stats
from benchsuite.aggregate import aggregate_across_tracks
from benchsuite.specs import RunRecord, Signature

REPORT_VERSION = 1


def _by_key(keys: list[str], results: dict[str, RunRecord]) -> list[RunRecord]:
    return [results[key] for key in keys if key in results]


def sweep_table(
    manifest: dict, track: str, mixer: str, results: dict[str, RunRecord]
) -> list[dict]:
    """Validation metrics of every grid point of one cell, with divergence flags."""
    meta = manifest["tracks"][track]
    metric = f"val.{meta['metric']}"
    records = _by_key(manifest["cells"][track][mixer]["sweep"], results)
    table = []
    for index, config in enumerate(meta["grid"]):
        runs = [r for r in records if r.job["config_index"] == index]
        values = [r.metrics.get(metric, math.nan) for r in runs]
        table.append({
            "index": index,
            "config": config,
            "val": values,
            "diverged": [
                r.diverged or not math.isfinite(v) for r, v in zip(runs, values, strict=True)
            ],
            "higher_is_better": meta["higher_is_better"],
            "mean": float(np.mean(values)) if values else math.nan,
        })  # fmt: skip
    return table


def select_configs(manifest: dict, results: dict[str, RunRecord]) -> dict[tuple[str, str], int]:
    """The chosen grid index of every (track, mixer) cell whose sweep produced any result."""
    chosen = {}
    for track, cells in manifest["cells"].items():
        for mixer in cells:
            table = [row for row in sweep_table(manifest, track, mixer, results) if row["val"]]
            if table:
                chosen[(track, mixer)] = stats.select_best_config(table)[0]
    return chosen


def _arm(manifest: dict, track: str, mixer: str, results: dict[str, RunRecord]) -> dict | None:
    meta = manifest["tracks"][track]
    cell = manifest["cells"][track].get(mixer)
    if cell is None or not cell["eval"]:
        return None
    records = {r.job["seed"]: r for r in _by_key(cell["eval"], results)}
    metric = f"test.{meta['metric']}"
    table = sweep_table(manifest, track, mixer, results)
    best, edge = stats.select_best_config([row for row in table if row["val"]])
    first = records.get(min(records)) if records else None
    return {
        "records": records,
        "values": {seed: r.metrics.get(metric, math.nan) for seed, r in records.items()},
        "diverged": {seed: r.diverged for seed, r in records.items()},
        "best_index": best,
        "best_cfg": meta["grid"][best],
        "edge_of_grid": edge,
        "sweep": [{"cfg": row["config"], "mean": row["mean"], "val": row["val"]} for row in table],
        "costs": first.costs if first else {},
        "probes": first.probes if first and first.job.get("measure") else {},
        "n_planned": len(cell["eval"]),
    }


def _summary(values: list[float]) -> dict[str, Any]:
    array = np.asarray(values, dtype=float)
    return {
        "mean": float(array.mean()) if len(array) else None,
        "std": float(array.std(ddof=1)) if len(array) > 1 else None,
        "per_seed": [float(v) for v in array],
        "n": len(array),
    }


def _signature(meta: dict, arm: dict, base: dict) -> dict | None:
    if not meta.get("signature"):
        return None
    result = Signature(**meta["signature"]).check(arm["probes"], base["probes"])
    result["measured_on"] = "trained model, first evaluation seed"
    for key, value in result["predicted"].items():  # the prototype's bench_report v1 keys
        result[f"predicted_{key}"] = value
        result[f"observed_{key}_seed0"] = result["observed"][key]
        result[f"baseline_observed_{key}_seed0"] = result["baseline_observed"][key]
    return result


def compare_cell(manifest: dict, track: str, mixer: str, base: dict, arm: dict) -> dict:
    """The paired comparison of one mixer against the baseline on one track."""
    meta = manifest["tracks"][track]
    higher = meta["higher_is_better"]
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
        margin_rel=manifest["request"].get("margin_rel", 0.05),
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


def analyse(manifest: dict, results: dict[str, RunRecord], failures: list[RunRecord]) -> dict:
    """The whole report of a run, from its manifest and the stored records."""
    request = manifest["request"]
    baseline = request["baseline"]
    tracks: dict[str, Any] = {}
    family = []
    for track, meta in manifest["tracks"].items():
        cells = manifest["cells"].get(track, {})
        arms = {m: _arm(manifest, track, m, results) for m in request["mixers"] if m in cells}
        base = arms.get(baseline)
        entry: dict[str, Any] = {**meta, "baseline": baseline, "mixers": {}, "comparisons": {}}
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
            cell = compare_cell(manifest, track, mixer, base, arm)
            cell["signature"] = _signature(manifest["mixers"][mixer], arm, base)
            entry["comparisons"][mixer] = cell
            family.append(cell["comparison"])
    stats.apply_holm(family)
    for entry in tracks.values():
        for cell in entry["comparisons"].values():
            cell["comparison"] = cell["comparison"].to_dict()
    used = [results[k] for cells in manifest["cells"].values() for cell in cells.values()
            for k in cell["sweep"] + cell["eval"] if k in results]  # fmt: skip
    return {
        "report_version": REPORT_VERSION,
        "warnings": environment_warnings(used),
        "request": request,
        "environment": manifest.get("environment", {}),
        "mixers": manifest["mixers"],
        "tracks": tracks,
        "skipped": manifest["skipped"],
        "design": design(request, len(family)),
        "across_tracks": _across(tracks, baseline),
        "failures": [
            _failure_row(r) for r in failures if r.key not in results and _in_run(r, manifest)
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


def design(request: dict, comparisons: int) -> dict:
    """Whether the seed count can reach Holm significance for this family size."""
    needed = stats.min_seeds_for_significance(max(comparisons, 1))
    return {
        "comparisons": comparisons,
        "seeds": request["seeds"],
        "min_seeds_for_significance": needed,
        "warning": stats.design_warning(request["seeds"], max(comparisons, 1)),
    }


REPORT_CODE = ("analysis", "stats", "aggregate", "report", "html", "plots")


def report_digest(manifest: dict, results: dict[str, RunRecord], failures: list[RunRecord]) -> str:
    """Hash of everything a report is made from: a re-run with the same digest reuses it."""
    folder = Path(__file__).parent
    code = b"".join((folder / f"{name}.py").read_bytes() for name in REPORT_CODE)
    inputs = {key: manifest[key] for key in ("request", "tracks", "mixers", "skipped", "cells")}
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


def _in_run(record: RunRecord, manifest: dict) -> bool:
    cells = manifest["cells"].get(record.job.get("track"), {}).get(record.job.get("mixer"))
    return bool(cells) and record.key in cells["sweep"] + cells["eval"]


def _failure_row(record: RunRecord) -> dict:
    job = record.job
    return {
        "track": job["track"], "mixer": job["mixer"], "stage": job["stage"],
        "seed": job["seed"], "reason": record.error, "traceback": record.traceback,
    }  # fmt: skip

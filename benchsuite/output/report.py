"""Report files: ``OUT/report.json`` for the run and ``OUT/<track>/<mixer>.json`` per comparison.

The per-comparison files keep the keys of the prototype's ``bench_report`` v1, with honest meanings
(``mde`` is the power-based minimum detectable effect, not the CI half-width).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchsuite.results.schema import Analysis
from benchsuite.serial import strict, to_plain

BENCH_VERSION = 1


def bench_report(report: Analysis, track: str, mixer: str) -> dict:
    """One comparison in the prototype's ``bench_report`` v1 layout (plus honest extra keys)."""
    entry = report.tracks[track]
    base, arm = entry.mixers[entry.baseline], entry.mixers[mixer]
    cell = entry.comparisons[mixer]
    comparison, budget = cell.comparison, entry.facts.budget
    return {
        "bench_version": BENCH_VERSION,
        "track": track,
        "dataset": entry.facts.dataset,
        "model": f"metaformer dim {budget.dim} depth {budget.depth}",
        "metric": entry.facts.metric,
        "metric_direction": entry.facts.direction,
        "n_seeds": comparison.n,
        "baseline": {
            "name": entry.baseline,
            "best_cfg": base.best_cfg,
            "sweep": [{"cfg": row.cfg, "mean": row.mean} for row in base.sweep],
            "full": {**to_plain(base.full), "per_seed": cell.baseline_values},
        },
        "idea": {
            "name": mixer,
            "best_cfg": arm.best_cfg,
            "sweep": [{"cfg": row.cfg, "mean": row.mean} for row in arm.sweep],
            **to_plain(arm.full),
            "per_seed": cell.mixer_values,
        },
        "comparison": {
            **to_plain(comparison),
            "idea_wins": comparison.wins,
            "n_pairs": comparison.n,
            "divergence": to_plain(cell.divergence),
            "both_converged": to_plain(cell.both_converged),
        },
        "mechanism_signature": to_plain(cell.signature),
        "budget_signature": entry.facts.budget_signature,
        "versions": to_plain(report.environment),
    }


def write_report(report: Analysis, out: Path) -> list[Path]:
    """Write ``report.json`` and one bench_report per comparison; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json"]
    written[0].write_text(json.dumps(report.to_dict(), indent=2))
    for track, entry in report.tracks.items():
        for mixer in entry.comparisons:
            path = out / track / f"{mixer}.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(strict(bench_report(report, track, mixer)), indent=2))
            written.append(path)
    return written

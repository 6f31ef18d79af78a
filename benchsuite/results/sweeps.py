"""A cell's sweep as rows: the validation metric of every grid point over its sweep seeds."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from benchsuite.execute.record import RunRecord


def sweep_table(
    grid: list[dict[str, Any]],
    metric: str,
    higher_is_better: bool,
    keys: list[str],
    results: Mapping[str, RunRecord],
) -> list[dict[str, Any]]:
    """One row per grid point: ``index``, ``config``, ``val`` (the sweep seeds' validation
    ``metric``), ``diverged`` flags, ``higher_is_better`` and the ``mean`` (NaN without runs)."""
    records = [results[key] for key in keys if key in results]
    table = []
    for index, config in enumerate(grid):
        runs = [r for r in records if r.job["config_index"] == index]
        values = [r.metrics.get(f"val.{metric}", math.nan) for r in runs]
        table.append({
            "index": index,
            "config": config,
            "val": values,
            "diverged": [
                r.diverged or not math.isfinite(v) for r, v in zip(runs, values, strict=True)
            ],
            "higher_is_better": higher_is_better,
            "mean": float(np.mean(values)) if values else math.nan,
        })  # fmt: skip
    return table

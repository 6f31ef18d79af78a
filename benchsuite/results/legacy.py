"""Stores written by benchsuite 0.1 kept a run *manifest* where a plan is kept now.

:func:`manifest_to_plan` converts one, once, when such a store is migrated to schema 3. The config
chosen for each cell was not recorded then; it is derived here, one time, from the stored sweep
with the selection rule of that version (the rule has not changed since).
"""

from __future__ import annotations

from typing import Any

from benchsuite.execute.record import RunRecord
from benchsuite.plan.selection import select_best_config
from benchsuite.results.sweeps import sweep_table

RENAMED = {"margin_rel": "margin", "budget_overrides": "budget"}


def _chosen(track: dict[str, Any], keys: list[str], records: dict[str, RunRecord]) -> int | None:
    rows = sweep_table(track["grid"], track["metric"], track["higher_is_better"], keys, records)
    swept = [row for row in rows if row["val"]]
    return select_best_config(swept)[0] if swept else None


def manifest_to_plan(manifest: dict[str, Any], records: dict[str, RunRecord]) -> dict[str, Any]:
    """A schema-2 run manifest as a plan dict (a plan dict is returned unchanged)."""
    if "settings" in manifest:
        return manifest
    settings = {RENAMED.get(k, k): v for k, v in manifest["request"].items()}
    cells: dict[str, dict[str, Any]] = {}
    for track, by_mixer in manifest["cells"].items():
        for mixer, cell in by_mixer.items():
            chosen = _chosen(manifest["tracks"][track], cell["sweep"], records)
            cells.setdefault(track, {})[mixer] = {
                "track": track, "mixer": mixer, "sweep": cell["sweep"], "eval": cell["eval"],
                "chosen": chosen,
            }  # fmt: skip
    return {
        "settings": settings,
        "environment": manifest.get("environment", {}),
        "mixers": manifest["mixers"],
        "tracks": manifest["tracks"],
        "cells": cells,
        "skipped": manifest["skipped"],
        "code": {},
    }

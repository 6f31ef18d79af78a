"""Stores written by benchsuite 0.1 kept a run *manifest* where a plan is kept now.

:func:`manifest_to_plan` converts one, once, when such a store is migrated to schema 3. That
version tuned once per cell on shared sweep seeds, then evaluated every seed with the config the
sweep chose; the choice was not recorded, so it is derived here, one time, from the stored sweep
with that version's selection rule, and becomes every evaluation seed's choice. The evaluation
jobs become the cell's jobs (their records hold no per-seed sweep).
"""

from __future__ import annotations

import math
from typing import Any

from benchsuite.records import RunRecord
from benchsuite.selection import Candidate, select_best_config
from benchsuite.vocabulary import Scale, Split

RENAMED = {"margin_rel": "margin", "budget_overrides": "budget"}


def _chosen(track: dict[str, Any], keys: list[str], records: dict[str, RunRecord]) -> int | None:
    runs = [records[key] for key in keys if key in records]
    sweep = []
    for index, config in enumerate(track["grid"]):
        values = [
            r.result.metrics.of(Split.VAL, track["metric"])
            for r in runs
            if r.job.config_index == index
        ]
        if values:
            sweep.append(Candidate(index, config, values, [not math.isfinite(v) for v in values]))
    return select_best_config(sweep, track["higher_is_better"])[0] if sweep else None


def manifest_to_plan(manifest: dict[str, Any], records: dict[str, RunRecord]) -> dict[str, Any]:
    """A schema-2 run manifest as a plan dict (a plan dict is returned unchanged)."""
    if "settings" in manifest:
        return manifest
    settings = {RENAMED.get(k, k): v for k, v in manifest["request"].items()}
    cells: dict[str, dict[str, Any]] = {}
    for track, by_mixer in manifest["cells"].items():
        for mixer, cell in by_mixer.items():
            chosen = _chosen(manifest["tracks"][track], cell["sweep"], records)
            seeds = [str(records[k].job.seed) for k in cell["eval"] if k in records]
            cells.setdefault(track, {})[mixer] = {
                "track": track,
                "mixer": mixer,
                "jobs": cell["eval"],
                "chosen": {} if chosen is None else dict.fromkeys(seeds, chosen),
            }
    tracks = {
        name: {"scale": Scale.DIFFERENCE, "ideal": None, **facts}
        for name, facts in manifest["tracks"].items()
    }
    return {
        "settings": settings,
        "environment": manifest.get("environment", {}),
        "mixers": manifest["mixers"],
        "tracks": tracks,
        "cells": cells,
        "skipped": manifest["skipped"],
        "code": {},
    }

"""Jobs: one training run each, identified by the hash of everything that determines its result.

Pure functions over plain data; nothing here trains or imports torch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Mapping
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from benchsuite.budget import Budget
from benchsuite.plan import code
from benchsuite.records import Job
from benchsuite.seeds import evaluation_seeds
from benchsuite.settings import RunSettings
from benchsuite.specs import Mixer, Track, provenance

GRID_AXES = ("lr", "weight_decay")  # the hyperparameters the training loop understands


@lru_cache(maxsize=16)
def package_version(name: str) -> str:
    """The installed version of a distribution, or ``"?"`` (read without importing it)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def effective_budget(track: Track, settings: RunSettings) -> Budget:
    """The track's budget for the settings' preset with ``--budget`` overrides applied."""
    return dataclasses.replace(track.budget(settings.preset), **dict(settings.budget))


def grid_of(track: Track, settings: RunSettings) -> list[dict[str, float]]:
    """The tuning grid of a track: the preset's, with the axes given by ``--grid`` replaced (the
    grid is then every combination of its axes' values)."""
    base = [dict(config) for config in effective_budget(track, settings).grid]
    given = settings.grids.get(track.name, {})
    if not given:
        return base
    axes = {key: sorted({config[key] for config in base}) for key in base[0]}
    axes.update({axis: list(values) for axis, values in given.items()})
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


def budget_signature(track: Track, settings: RunSettings) -> str:
    """Hash of what makes two runs comparable on a track: grid, seeds, steps, batch, checkpoint
    and stopping rule."""
    return hashlib.sha256(
        json.dumps(budget_terms(track, settings), sort_keys=True).encode()
    ).hexdigest()[:16]


def budget_terms(track: Track, settings: RunSettings) -> dict[str, Any]:
    """The settings a budget signature covers, by name (``compare`` names those that differ)."""
    budget = effective_budget(track, settings)
    return {
        "grid": grid_of(track, settings),
        "tuning": "per evaluation seed, on its validation split",
        **budget.signed(),
        "preset": settings.preset,
        "track_options": dict(settings.track_options.get(track.name, {})),
    }


def training_code() -> dict[str, str]:
    """The code closure of benchsuite's one-by-one training path."""
    return code.closure(code.module_source(code.TRAINING_PATH))


def plugin_code(item: Track | Mixer) -> dict[str, str]:
    """The code closure of a registered track or mixer: its plugin module and what it imports."""
    roots = code.module_source(item.module, item.module_file)
    if isinstance(item, Mixer) and isinstance(item.build, str):
        roots.update(code.module_source(item.build.partition(":")[0]))
    return code.closure(roots)


def fingerprint(track: Track, mixer: Mixer, data_key: str) -> dict[str, str]:
    """Versions, code and data that a cached result depends on (read without importing torch)."""
    return {
        "benchsuite": package_version("benchsuite"),
        "torch": package_version("torch"),
        "numpy": package_version("numpy"),
        "track": provenance(track),
        "mixer": provenance(mixer),
        "code": code.combined_digest(training_code(), plugin_code(track), plugin_code(mixer)),
        "data": data_key,
    }


def cell_jobs(
    settings: RunSettings,
    track: Track,
    mixer: Mixer,
    grid: list[dict[str, float]],
    data_key: str,
    size: Mapping[str, Any] | None = None,
) -> list[Job]:
    """The jobs of one (track, mixer): one per evaluation seed, each tuning over ``grid``; the
    first seed also measures the mechanism probes. ``size``: what the equal-size rule set (a
    mixer option by name, and/or ``mlp_hidden``), overriding the settings."""
    size = dict(size or {})
    mlp_hidden = size.pop("mlp_hidden", None)
    printed = fingerprint(track, mixer, data_key)
    seeds = evaluation_seeds(settings.seeds or 0)
    return [
        Job(
            track=track.name,
            mixer=mixer.name,
            seed=seed,
            grid=tuple(dict(config) for config in grid),
            preset=settings.preset,
            budget=dataclasses.replace(effective_budget(track, settings), grid=()),
            track_options=dict(settings.track_options.get(track.name, {})),
            mixer_options={**settings.mixer_options.get(mixer.name, {}), **size},
            data_dir=settings.data_dir,
            threads=settings.threads,
            device=settings.device,
            salt=settings.salt,
            measure=seed == seeds[0],
            batched=bool(settings.batch_seeds),
            mlp_hidden=mlp_hidden,
            fingerprint=printed,
        )
        for seed in seeds
    ]

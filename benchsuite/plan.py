"""From a run request to jobs: sweep cells first, evaluation cells once the sweep has a winner.

Pure functions over plain data; the plan never trains anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchsuite.seeds import DEFAULT_SALT, evaluation_seeds, sweep_seeds
from benchsuite.specs import EVAL, SWEEP, Budget, Job, Mixer, Track


@dataclass(frozen=True)
class RunRequest:
    """What the user asked for, after validation: the whole input of a run."""

    tracks: tuple[str, ...]
    mixers: tuple[str, ...]  # the baseline first
    baseline: str
    seeds: int
    sweep_seeds: int = 2
    preset: str = "quick"
    track_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    mixer_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    data_dir: str | None = None
    threads: int = 1
    device: str = "cpu"
    salt: str = DEFAULT_SALT
    margin_rel: float = 0.05
    budget_overrides: Mapping[str, int] = field(default_factory=dict)
    batch_seeds: bool = False  # train a cell's evaluation seeds as one batched model (GPU)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), default=str))


@lru_cache(maxsize=16)
def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


TRAINING_CODE = ("train", "encoder", "layers", "seeds", "preflight", "probes", "costs", "batched")


@lru_cache(maxsize=1)
def training_code_hash() -> str:
    """Hash of the core modules on the training path, so an edit to them retrains (same version)."""
    folder = Path(__file__).parent
    digest = hashlib.sha256()
    for name in TRAINING_CODE:
        digest.update((folder / f"{name}.py").read_bytes())
    return digest.hexdigest()[:16]


def fingerprint(track: Track, mixer: Mixer) -> dict[str, str]:
    """Versions and source hashes that a cached result depends on (read without importing torch)."""
    return {
        "benchsuite": f"{_package_version('benchsuite')} {training_code_hash()}",
        "torch": _package_version("torch"),
        "numpy": _package_version("numpy"),
        "track": f"{track.distribution} {track.version} {track.source_hash}",
        "mixer": f"{mixer.distribution} {mixer.version} {mixer.source_hash}",
    }


OVERRIDABLE = ("steps", "batch_size", "dim", "depth")


def effective_budget(track: Track, request: RunRequest) -> Budget:
    """The track's budget for the request's preset with ``--budget`` overrides applied."""
    return replace(track.budget(request.preset), **dict(request.budget_overrides))


def budget_signature(track: Track, request: RunRequest) -> str:
    """Hash of what makes two runs comparable on a track: grid, seeds, steps, batch, checkpoint."""
    budget = effective_budget(track, request)
    payload = {
        "grid": [dict(cfg) for cfg in budget.grid],
        "sweep_seeds": sweep_seeds(request.sweep_seeds),
        "steps": budget.steps,
        "batch_size": budget.batch_size,
        "dim": budget.dim,
        "depth": budget.depth,
        "checkpoint": budget.checkpoint,
        "preset": request.preset,
        "track_options": dict(request.track_options.get(track.name, {})),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _job(request: RunRequest, track: Track, mixer: Mixer, stage: str, index: int, seed: int,
         measure: bool, data_key: str) -> Job:  # fmt: skip
    return Job(
        track=track.name,
        mixer=mixer.name,
        stage=stage,
        config=dict(track.budget(request.preset).grid[index]),
        config_index=index,
        seed=seed,
        preset=request.preset,
        budget=effective_budget(track, request).training(),
        track_options=dict(request.track_options.get(track.name, {})),
        mixer_options=dict(request.mixer_options.get(mixer.name, {})),
        data_dir=request.data_dir,
        threads=request.threads,
        device=request.device,
        salt=request.salt,
        measure=measure,
        batched=request.batch_seeds and stage == EVAL,
        fingerprint={**fingerprint(track, mixer), "data": data_key},
    )


def sweep_jobs(request: RunRequest, track: Track, mixer: Mixer, data_key: str) -> list[Job]:
    """Every grid point x every sweep seed for one (track, mixer)."""
    grid = track.budget(request.preset).grid
    return [
        _job(request, track, mixer, SWEEP, index, seed, False, data_key)
        for index in range(len(grid))
        for seed in sweep_seeds(request.sweep_seeds)
    ]


def eval_jobs(request: RunRequest, track: Track, mixer: Mixer, best_index: int,
              data_key: str) -> list[Job]:  # fmt: skip
    """The paired evaluation seeds with the chosen config; the first seed also measures probes."""
    seeds = evaluation_seeds(request.seeds)
    return [
        _job(request, track, mixer, EVAL, best_index, seed, seed == seeds[0], data_key)
        for seed in seeds
    ]

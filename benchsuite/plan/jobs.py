"""Jobs: one training run each, identified by the hash of everything that determines its result.

Pure functions over plain data; nothing here trains or imports torch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from benchsuite.plan import code
from benchsuite.plan.stages import EVAL, SWEEP
from benchsuite.seeds import evaluation_seeds, sweep_seeds
from benchsuite.settings import RunSettings
from benchsuite.specs import Budget, Mixer, Track

OVERRIDABLE = ("steps", "batch_size", "dim", "depth")


@dataclass(frozen=True)
class Job:
    """One training run: everything that determines its result, and nothing else."""

    track: str
    mixer: str
    stage: str  # SWEEP (scored on validation) or EVAL (scored on test)
    config: Mapping[str, float]
    config_index: int
    seed: int
    preset: str
    budget: Mapping[str, Any]  # Budget.training() of the preset, after overrides
    track_options: Mapping[str, Any]
    mixer_options: Mapping[str, Any]
    data_dir: str | None
    threads: int
    device: str
    salt: str
    measure: bool = False  # measure mechanism probes on the trained model
    batched: bool = False  # trained with the other seeds of its cell as one vmapped model
    fingerprint: Mapping[str, str] = field(default_factory=dict)  # versions, code, data

    @property
    def key(self) -> str:
        """Content hash of everything that determines this job's result.

        ``data_dir`` is left out: where the data lies does not matter, what it is does, and that
        is in ``fingerprint["data"]`` (the track's data key: checksums, file hashes, options).
        """
        fields = dataclasses.asdict(self)
        del fields["data_dir"]
        payload = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:24]

    @property
    def label(self) -> str:
        return f"{self.track}/{self.mixer}/{self.stage}/cfg{self.config_index}/seed{self.seed}"


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


def budget_signature(track: Track, settings: RunSettings) -> str:
    """Hash of what makes two runs comparable on a track: grid, seeds, steps, batch, checkpoint."""
    return hashlib.sha256(
        json.dumps(budget_terms(track, settings), sort_keys=True).encode()
    ).hexdigest()[:16]


def budget_terms(track: Track, settings: RunSettings) -> dict[str, Any]:
    """The settings a budget signature covers, by name (``compare`` names those that differ)."""
    budget = effective_budget(track, settings)
    return {
        "grid": [dict(cfg) for cfg in budget.grid],
        "sweep_seeds": sweep_seeds(settings.sweep_seeds),
        "steps": budget.steps,
        "batch_size": budget.batch_size,
        "dim": budget.dim,
        "depth": budget.depth,
        "checkpoint": budget.checkpoint,
        "preset": settings.preset,
        "track_options": dict(settings.track_options.get(track.name, {})),
    }


def training_code() -> dict[str, str]:
    """The code closure of benchsuite's one-by-one training path."""
    return code.closure(code.module_source(code.TRAINING_PATH))


def batched_code() -> dict[str, str]:
    """The code closure of the batched (vmapped) training path."""
    return code.closure(code.module_source(code.BATCHED_PATH))


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
        "track": f"{track.distribution} {track.version}",
        "mixer": f"{mixer.distribution} {mixer.version}",
        "code": code.combined_digest(training_code(), plugin_code(track), plugin_code(mixer)),
        "data": data_key,
    }


def job_template(settings: RunSettings, track: Track, mixer: Mixer, data_key: str) -> Job:
    """A cell's job at the first grid point and sweep seed; the others differ from it only in
    stage, config, seed, measure and batched."""
    grid = effective_budget(track, settings).grid
    return Job(
        track=track.name,
        mixer=mixer.name,
        stage=SWEEP,
        config=dict(grid[0]),
        config_index=0,
        seed=sweep_seeds(1)[0],
        preset=settings.preset,
        budget=effective_budget(track, settings).training(),
        track_options=dict(settings.track_options.get(track.name, {})),
        mixer_options=dict(settings.mixer_options.get(mixer.name, {})),
        data_dir=settings.data_dir,
        threads=settings.threads,
        device=settings.device,
        salt=settings.salt,
        fingerprint=fingerprint(track, mixer, data_key),
    )


def sweep_jobs(template: Job, grid: list[Mapping[str, float]], n_sweep_seeds: int) -> list[Job]:
    """Every grid point x every sweep seed of one (track, mixer)."""
    return [
        dataclasses.replace(
            template, stage=SWEEP, config=dict(config), config_index=index, seed=seed
        )
        for index, config in enumerate(grid)
        for seed in sweep_seeds(n_sweep_seeds)
    ]


def eval_jobs(
    template: Job, grid: list[Mapping[str, float]], index: int, n_seeds: int, batched: bool
) -> list[Job]:
    """The paired evaluation seeds with the chosen config; the first seed also measures probes.

    Batched jobs also depend on the batched training path's code.
    """
    seeds = evaluation_seeds(n_seeds)
    printed = dict(template.fingerprint)
    if batched:
        printed["batched_code"] = code.combined_digest(batched_code())
    return [
        dataclasses.replace(
            template,
            stage=EVAL,
            config=dict(grid[index]),
            config_index=index,
            seed=seed,
            measure=seed == seeds[0],
            batched=batched,
            fingerprint=printed,
        )
        for seed in seeds
    ]

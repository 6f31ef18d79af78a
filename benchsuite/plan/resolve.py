"""Checking run settings against the registry and filling in every "decide for me" value.

The result is again a :class:`~benchsuite.settings.RunSettings`, with names checked (mixer
variants such as ``attention[heads=2]`` in their canonical spelling and ``tag:NAME`` selections
expanded: :mod:`benchsuite.registry.variants`; track variants such as ``recall[dim=64]`` likewise,
the axes expanded into them, ``axes`` then empty: :mod:`benchsuite.registry.track_variants`),
the baseline first among the mixers, options
parsed to their declared types (a track's options also checked together:
``Track.check_options``), budget overrides as whole numbers, the seed count decided and the
device checked. Every mistake is a one-line usage error.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from benchsuite.budget import read_overrides
from benchsuite.errors import PluginError, UsageError, did_you_mean, one_line
from benchsuite.plan.jobs import GRID_AXES
from benchsuite.protocol.power import default_seeds, min_seeds_for_significance, suite_seeds
from benchsuite.registry import Registry, track_variants, variants
from benchsuite.settings import EXECUTORS, RunSettings
from benchsuite.specs import Track, resolve_options
from benchsuite.vocabulary import Claims, Match


def resolve(settings: RunSettings, registry: Registry) -> RunSettings:
    """``settings`` checked and completed against ``registry`` (see the module docstring)."""
    asked_tracks = (
        list(settings.tracks)
        if settings.tracks
        else [
            name
            for name in sorted(registry.tracks)
            if settings.preset in registry.tracks[name].budgets
        ]
    )
    if not asked_tracks:
        presets = sorted({p for track in registry.tracks.values() for p in track.budgets})
        raise UsageError(f"no track has preset {settings.preset!r}; valid: {', '.join(presets)}")
    texts = track_variants.expand(asked_tracks, settings.axes)
    tracks = {t.name: t for t in track_variants.select(texts, registry.tracks)}
    track_names = list(tracks)
    check_variant_budget(tracks.values(), settings.budget)
    mixers, unavailable = registry.mixers, registry.unavailable
    asked = variants.select(settings.mixers or sorted(mixers), mixers, unavailable)
    try:
        baseline = variants.parse(settings.baseline, mixers, unavailable)
    except UsageError as error:
        raise UsageError(f"baseline: {error}") from None
    chosen = [baseline, *[v for v in asked if v.name != baseline.name]]
    mixer_names = [v.name for v in chosen]
    if len(mixer_names) < 2:
        raise UsageError(f"nothing to compare: only the baseline {baseline.name!r} was given")
    check_grids(settings.grids, [name for name in registry.tracks if "[" not in name])
    if settings.match not in tuple(Match):
        raise UsageError(f"unknown --match {settings.match!r}; valid: {', '.join(Match)}")
    bases = len({track_variants.base_name(track) for track in tracks.values()})
    design, seeds = design_and_seeds(settings, len(track_names), len(mixer_names) - 1, bases)
    overrides = budget_overrides(settings.budget)
    for name in track_names:
        budget = tracks[name].budget(settings.preset)
        if not budget.grid:
            raise UsageError(
                f"track {name!r} has an empty sweep grid for preset {settings.preset!r}"
            )
        try:
            dataclasses.replace(budget, **overrides)
        except ValueError as error:
            raise UsageError(f"track {name!r}: {error}") from None
    track_options = track_option_values(tracks, registry.tracks, settings.track_options)
    for name, options in track_options.items():
        check_track_options(tracks[name], options, settings.preset)
    return settings.replace(
        tracks=tuple(track_names),
        axes={},
        grids={
            **settings.grids,
            **{
                name: settings.grids[track_variants.base_name(track)]
                for name, track in tracks.items()
                if track_variants.base_name(track) in settings.grids
            },
        },
        mixers=tuple(mixer_names),
        seeds=seeds,
        design=design,
        track_options=track_options,
        baseline=baseline.name,
        mixer_options=variants.variant_options(chosen, mixers, settings.mixer_options),
        budget=overrides,
        device=check_device(settings.device),
        batch_seeds=(
            settings.device.startswith("cuda")
            if settings.batch_seeds is None
            else settings.batch_seeds
        ),
    )


def design_and_seeds(
    settings: RunSettings, tracks: int, mixers: int, bases: int | None = None
) -> tuple[str, int]:
    """The run's design (docs/protocol.md, "Two designs") and its seed count: as given, else the
    per-track design for one track (``bases``: the distinct tracks, variants of one track
    counting once) or for ``--seeds`` enough for per-track Holm, else the suite design; the
    seeds as given, else the fewest the design's claims need. Asking for claims the seeds
    cannot reach is a one-line error saying what it would take."""
    comparisons = tracks * mixers
    per_track_seeds = default_seeds(comparisons)
    if settings.design is not None and settings.design not in tuple(Claims):
        valid = ", ".join(Claims)
        raise UsageError(f"unknown --design {settings.design!r}; valid: {valid}")
    if settings.seeds is not None and settings.seeds < 2:
        raise UsageError(
            f"--seeds must be at least 2 for a paired comparison, got {settings.seeds}"
        )
    design = settings.design
    if design is None:
        enough = settings.seeds is not None and settings.seeds >= per_track_seeds
        one = (tracks if bases is None else bases) == 1
        design = Claims.PER_TRACK if one or enough else Claims.SUITE
    if design == Claims.SUITE and tracks == 1:
        raise UsageError(
            "--design suite needs at least 2 tracks (a run of one track plans its per-track "
            "claims: drop --design or add --tracks)"
        )
    least = min_seeds_for_significance(comparisons)
    if (
        settings.design == Claims.PER_TRACK
        and settings.seeds is not None
        and settings.seeds < least
    ):
        raise UsageError(
            f"--design per-track: verdicts over {comparisons} comparisons need at least "
            f"{least} seeds ({per_track_seeds} to allow one discordant seed), got --seeds "
            f"{settings.seeds}; drop --seeds, or --design suite for the claims across tracks"
        )
    if settings.seeds is not None:
        return str(design), settings.seeds
    if design == Claims.PER_TRACK:
        return str(design), per_track_seeds
    return str(design), suite_seeds(tracks, mixers)


def check_grids(grids: Any, tracks: list[str]) -> None:
    """``--grid`` names a registered track, a known axis, and positive learning rates (weight
    decays >= 0)."""
    for name, axes in grids.items():
        if name not in tracks:
            raise UsageError(f"--grid given for unknown track {name!r}{did_you_mean(name, tracks)}")
        for axis, values in axes.items():
            if axis not in GRID_AXES:
                hint = did_you_mean(axis, GRID_AXES)
                raise UsageError(
                    f"--grid {name}.{axis}: unknown axis{hint}; valid: {', '.join(GRID_AXES)}"
                )
            low = min(values)
            if not values or low < 0 or (axis == "lr" and low == 0):
                raise UsageError(
                    f"--grid {name}.{axis}: values must be > 0 (weight_decay >= 0), "
                    f"got {', '.join(f'{v:g}' for v in values)}"
                )


def _options(pool: dict[str, Any], given: Any, group: str, names: list[str]) -> dict:
    """Each named plugin's declared options with the given values parsed (unknown: an error)."""
    for name in given:
        if name not in pool:
            raise UsageError(f"option given for unknown {group} {name!r}{did_you_mean(name, pool)}")
    return {n: resolve_options(pool[n].options, given.get(n, {}), n) for n in names}


def track_option_values(
    tracks: dict[str, Track], registered: dict[str, Track], given: Any
) -> dict[str, dict[str, Any]]:
    """Each asked track's options: its declared defaults (a variant's own values among them),
    overlaid with ``--track-option BASE.KEY`` values, except those its brackets set."""
    for name in given:
        if "[" in name:
            raise UsageError(
                f"option given for track variant {name!r}: give a variant's options "
                f"inside its brackets, or to its track {name.partition('[')[0]!r}"
            )
    _options(registered, given, "track", [])
    values = {}
    for name, track in tracks.items():
        own = getattr(track, "variant_keys", {})
        base = given.get(track_variants.base_name(track), {})
        values[name] = resolve_options(
            track.options,
            {k: v for k, v in base.items() if k not in own},
            track_variants.base_name(track),
        )
    return values


def check_variant_budget(tracks: Any, budget: Any) -> None:
    """A budget key set both by ``--budget`` and by a track variant is a usage error."""
    for track in tracks:
        both = sorted(set(getattr(track, "variant_budget", {})) & set(budget))
        if both:
            raise UsageError(
                f"budget {both[0]} is given both by --budget and by the track "
                f"variant {track.name!r}; give it in one place"
            )


def check_track_options(track: Track, options: dict, preset: str) -> None:
    """The track's ``check_options`` on every rung of its ladder under ``preset``: a combination
    that cannot work is a one-line usage error (naming the rung when there are several), and a
    check that crashes is the plugin's error."""
    rungs = track.ladder(options, preset)
    for number, rung in enumerate(rungs, start=1):
        try:
            track.check_options(rung)
        except UsageError as error:
            if len(rungs) == 1:
                raise
            raise UsageError(f"{error} (rung {number} of the {preset} ladder)") from None
        except Exception as error:
            raise PluginError(
                f"track {track.name}: check_options raised {one_line(error)}"
            ) from error


def budget_overrides(given: Any) -> dict[str, Any]:
    """``--budget`` overrides read by their knobs (:class:`benchsuite.budget.Knob`): an unknown
    key or a bad value is a one-line usage error."""
    try:
        return read_overrides(given)
    except ValueError as error:
        raise UsageError(str(error)) from None


def check_device(device: str) -> str:
    """``cpu`` or an available CUDA device (checking imports torch only when a GPU is asked for)."""
    if device == "cpu":
        return device
    if not device.startswith("cuda"):
        raise UsageError(f"unknown device {device!r}; valid: cpu, cuda, cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise UsageError(f"device {device!r} asked for, but torch sees no CUDA device here")
    return device


def check_executor(settings: RunSettings) -> None:
    """A one-line usage error for executor settings that cannot work (checked before a run)."""
    name, jobs, timeout = settings.executor, settings.jobs, settings.timeout
    if name not in EXECUTORS:
        raise UsageError(f"unknown executor {name!r}; valid: {', '.join(EXECUTORS)}")
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    for flag, seconds in (
        ("--timeout", timeout),
        ("--preflight-timeout", settings.preflight_timeout),
        ("--save-every", settings.save_every),
    ):
        if seconds is not None and seconds <= 0:
            raise UsageError(f"{flag} must be a positive number of seconds, got {seconds:g}")
    if settings.memory_limit is not None and settings.memory_limit < 0:
        raise UsageError(f"--memory-limit must be GiB >= 0, got {settings.memory_limit:g}")
    if settings.address and name != "ray":
        raise UsageError("--address is for --executor ray")
    if name == "local" and timeout is not None:
        raise UsageError("--timeout needs a job process to kill: use --executor process (or ray)")
    if settings.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {settings.threads}")

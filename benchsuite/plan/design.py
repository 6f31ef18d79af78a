"""The design check printed before training: which claims the run plans (each mixer across the
tracks, or on each track: docs/protocol.md, "Two designs"), can this many seeds reach them, and
what effect could they detect on each track at the alpha the per-track verdicts use (Holm's first
step, alpha/m)?

The family is every (track, mixer) cell besides the baseline's, counted before the tracks' data
is probed: a cell that the probe finds unsupported leaves it, so the analysis' family (stated in
every table) can be smaller, never larger. Nothing is detectable when the smallest sign-flip p of
n seeds (2/2**n) is not below that alpha: the planned MDE is then None.

The planning sd (sd of the paired differences on the track's analysis scale: log-ratios, or
differences relative to the baseline mean) comes from the last run in the same output folder when
it compared mixers on that track (the caller reads it from that run's report:
:func:`benchsuite.results.summaries.previous_sd`; the plan reads no report), else from the
track's declared ``planning_sd``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from benchsuite.events import DesignCheck, PlannedTrack
from benchsuite.protocol.futility import futility_look
from benchsuite.protocol.power import (
    default_seeds,
    design_warning,
    holm_first_alpha,
    min_seeds_for_significance,
    min_sign_flip_p,
    planned_mde,
    suite_seeds,
)
from benchsuite.registry.variants import lookup
from benchsuite.settings import RunSettings
from benchsuite.specs import Mixer, Track
from benchsuite.vocabulary import Claims, Scale


def options_set(settings: RunSettings, mixers: Mapping[str, Mixer]) -> dict[str, dict[str, Any]]:
    """Each mixer's resolved options that differ from its declared defaults (set by
    ``--mixer-option``, the config file or a variant's name)."""
    changed = {}
    for name, options in settings.mixer_options.items():
        defaults = {o.name: o.default for o in lookup(dict(mixers), name).options}
        if given := {k: v for k, v in options.items() if defaults.get(k) != v}:
            changed[name] = given
    return changed


def design_check(
    settings: RunSettings,
    tracks: dict[str, Track],
    previous: Mapping[str, float] | None = None,
    mixers: Mapping[str, Mixer] | None = None,
) -> DesignCheck:
    """The design (suite or per-track), family size, seeds each claim needs, the warning if the
    seeds cannot reach the design's claims, the planned per-track MDE and the mixer options set,
    for resolved ``settings`` (``tracks``, ``mixers``: the registered ones; ``previous``: per
    track the sd measured by the last run in the same folder, which the caller reads from its
    report)."""
    names, names_of_mixers = settings.tracks or (), settings.mixers or ()
    seeds = settings.seeds or 0
    comparisons = len(names) * (len(names_of_mixers) - 1)
    alpha = holm_first_alpha(comparisons)
    design = Claims(settings.design or Claims.PER_TRACK)
    previous = previous or {}
    planned = {}
    for name in names:
        measured = name in previous
        sd = previous[name] if measured else tracks[name].planning_sd
        mde = planned_mde(seeds, sd, alpha)
        log_scale = tracks[name].metric.scale == Scale.LOG
        planned[name] = PlannedTrack(
            planning_sd_rel=sd,
            scale=tracks[name].metric.scale,
            source="previous run in this folder" if measured else "track default",
            planned_mde_rel_pct=None
            if math.isnan(mde)
            else 100 * (1 - math.exp(-mde) if log_scale else mde),
        )
    per_track_seeds = default_seeds(max(comparisons, 1))
    several = len(names) >= 2 and len(names_of_mixers) >= 2
    suite = suite_seeds(len(names), len(names_of_mixers) - 1) if several else None
    if design == Claims.SUITE:
        default = suite or per_track_seeds
        warning = suite_warning(settings)
    else:
        default = per_track_seeds
        warning = design_warning(seeds, max(comparisons, 1))
    return DesignCheck(
        claims=design,
        comparisons=comparisons,
        mixers=len(names_of_mixers) - 1,
        tracks_planned=len(names),
        seeds=seeds,
        default_seeds=default,
        seeds_given=seeds != default,
        suite_seeds=suite,
        per_track_seeds=per_track_seeds,
        alpha=alpha,
        detectable=seeds >= 2 and min_sign_flip_p(seeds) < alpha,
        min_seeds_for_significance=min_seeds_for_significance(max(comparisons, 1)),
        warning=warning,
        futility_seeds=look.seeds if (look := futility_look(settings, comparisons)) else None,
        tracks=planned,
        mixer_options={m: dict(o) for m, o in settings.mixer_options.items() if o},
        mixer_options_set=options_set(settings, mixers) if mixers is not None else {},
    )


def suite_warning(settings: RunSettings) -> str | None:
    """The suite design's warning, before the run and in its report: fewer seeds than its suite
    verdicts need to pass Holm with one discordant seed and any one track left out (None:
    enough, or no suite claims)."""
    tracks, mixers = len(settings.tracks or ()), len(settings.mixers or ()) - 1
    seeds = settings.seeds or 0
    if settings.design != Claims.SUITE or tracks < 2 or mixers < 1:
        return None
    need = suite_seeds(tracks, mixers)
    if seeds >= need:
        return None
    return (
        f"with {seeds} seeds no suite verdict can pass Holm over {mixers} mixers with one "
        f"discordant seed and any one track left out; use at least {need} seeds"
    )

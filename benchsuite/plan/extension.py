"""Runs of one study in one folder (docs/protocol.md, "Extending a run").

A run with more seeds than an earlier run of the same mixers and tracks in its folder extends it:
every job is keyed by its own seed, so the stored seeds are reused and only the new ones train.
The suite verdicts the earlier run showed were a look at the same comparisons with fewer seeds;
the extended run's suite tests count those looks (:func:`looks`: the k-th at alpha / 2**k, its
test combining every seed in stages). So do its per-track verdicts, wherever an earlier run's
seeds could reach them (:func:`track_looks`). An
earlier run whose results the new one could not be paired with (another preset, budget,
baseline, ...) is not extended: the new run is refused with one line saying what it would take.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchsuite.errors import UsageError
from benchsuite.protocol.power import looks_alpha, min_seeds_for_significance
from benchsuite.settings import RunSettings
from benchsuite.vocabulary import Claims

# The settings that decide what a seed's result is, besides the seed itself: two runs of the same
# mixers and tracks are one study only when these agree.
STUDY = (
    "preset",
    "budget",
    "baseline",
    "grids",
    "track_options",
    "mixer_options",
    "match",
    "margin",
    "salt",
    "data_dir",
    "device",
)


def _cells(settings: RunSettings) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(settings.tracks or ()), frozenset(settings.mixers or ())


def _earlier(plans: Iterable[Mapping[str, Any]], settings: RunSettings) -> list[RunSettings]:
    """The settings of earlier runs of the same mixers and tracks with fewer seeds."""
    found = [RunSettings.from_dict(plan.get("settings", {})) for plan in plans]
    return [
        earlier
        for earlier in found
        if _cells(earlier) == _cells(settings) and (earlier.seeds or 0) < (settings.seeds or 0)
    ]


def differences(earlier: RunSettings, settings: RunSettings) -> list[str]:
    """The study settings (:data:`STUDY`) in which two runs differ."""
    return [key for key in STUDY if getattr(earlier, key) != getattr(settings, key)]


def check_extension(plans: Iterable[Mapping[str, Any]], settings: RunSettings, out: str) -> None:
    """Refuse to extend an earlier run of the folder (the same mixers and tracks, fewer seeds)
    whose study settings differ: one line naming each difference and what it would take."""
    for earlier in sorted(_earlier(plans, settings), key=lambda e: -(e.seeds or 0)):
        if keys := differences(earlier, settings):
            said = "; ".join(
                f"{key} {getattr(earlier, key)!r} there, {getattr(settings, key)!r} here"
                for key in keys
            )
            raise UsageError(
                f"--out {out} holds a {earlier.seeds}-seed run of the same mixers and tracks "
                f"that this {settings.seeds}-seed run would extend, with other settings ({said}); "
                "extending it needs the same settings: give them, or another --out"
            )


def looks(plans: Iterable[Mapping[str, Any]], settings: RunSettings) -> list[int]:
    """The seed counts, fewest first, at which earlier runs of this study in the folder showed
    suite verdicts (runs of two tracks or more, fewer seeds than this one)."""
    if len(settings.tracks or ()) < 2:
        return []
    counts = {
        earlier.seeds or 0
        for earlier in _earlier(plans, settings)
        if not differences(earlier, settings)
    }
    return sorted(counts)


def first_track_alpha(design: str | None, alpha: float = 0.05) -> float:
    """The alpha a study's first look at its per-track verdicts spends: all of it under the
    per-track design (planned as the one look), half under the suite design (planned to be
    extended in place to per-track verdicts, which are then a second look)."""
    return alpha if design == Claims.PER_TRACK else looks_alpha(1, alpha)


def track_looks(
    plans: Iterable[Mapping[str, Any]], settings: RunSettings, comparisons: int
) -> tuple[list[int], float]:
    """The seed counts of earlier runs of this study in the folder whose seeds could reach a
    per-track verdict (Holm over ``comparisons`` at the alpha they spent), fewest first, and the
    alpha this run's per-track verdicts spend: the first look's (:func:`first_track_alpha`),
    else alpha / 2**k at the k-th."""
    earlier = [e for e in _earlier(plans, settings) if not differences(e, settings)]
    family = max(comparisons, 1)
    counts = sorted(
        {
            e.seeds or 0
            for e in earlier
            if (e.seeds or 0) >= min_seeds_for_significance(family, first_track_alpha(e.design))
        }
    )
    if not counts:
        return [], first_track_alpha(settings.design)
    return counts, looks_alpha(len(counts) + 1)

"""The run-level parts of a report that need no test: its scale, its design (the Holm family and
the seeds it needs), how the cells chose their configs, the test sets, environment warnings and
the failures."""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from benchsuite.budget import Budget, RateSchedule
from benchsuite.protocol.futility import FutilityLook
from benchsuite.protocol.power import default_seeds, design_warning, min_seeds_for_significance
from benchsuite.records import RunRecord
from benchsuite.results.cell_schema import TestSet, TrackResult
from benchsuite.results.schema import Analysis, Design, Failure, Scale, SelectionSummary
from benchsuite.vocabulary import Claims

ENVIRONMENT_KEYS = ("torch", "python", "threads", "device", "deterministic")


def budget_words(budget: Budget) -> str:
    """A track's width, depth and budget in words: "dim 16, depth 2, at most 4000 steps × batch
    32, plateau schedule" ("at most" where a stopping rule ends training; a schedule other than
    the cosine by name)."""
    most = "at most " if budget.patience else ""
    schedule = budget.schedule
    return (
        f"dim {budget.dim}, depth {budget.depth}, "
        f"{most}{budget.steps} steps × batch {budget.batch_size}"
        + (f", {schedule} schedule" if schedule != RateSchedule.COSINE else "")
    )


def scale_note(preset: str, budget: Budget) -> str:
    """One sentence naming the scale that produced a track's results: preset and
    :func:`budget_words` (a quick preset's verdicts describe that scale, not the mixers at
    large)."""
    size = f"{preset} preset: {budget_words(budget)}"
    return f"{size} (verdicts describe this small scale)" if preset == "quick" else size


def scale_summary(preset: str, tracks: Mapping[str, TrackResult]) -> Scale:
    """The run's scale (``report.json`` → ``scale``): its preset and the one sentence the page's
    head shows (each track's width, depth and budget are its ``budget``)."""
    per_track = "; ".join(f"{t}: {budget_words(e.facts.budget)}" for t, e in tracks.items())
    closing = (
        "quick-preset verdicts describe this small scale, not the mixers at large"
        if preset == "quick"
        else "verdicts describe this scale"
    )
    return Scale(preset=preset, note=f"{preset} preset ({per_track}): {closing}.")


def selection_summary(tracks: Mapping[str, TrackResult]) -> SelectionSummary:
    """Across every cell (the baseline's included): how many are at chance, how many of the
    others chose an end of their grid, and how many seeds agreed with their cell's modal choice."""
    every = [arm for entry in tracks.values() for arm in entry.mixers.values()]
    cells = [arm for arm in every if not arm.selection.at_chance]
    edge = [arm.edge_of_grid for arm in cells]
    agreement = [arm.selection.agreement for arm in cells]
    return SelectionSummary(
        cells=len(every),
        at_chance=len(every) - len(cells),
        edge_of_grid=sum(edge),
        edge_share=sum(edge) / len(cells) if cells else None,
        median_agreement=float(np.median(agreement)) if agreement else None,
        indecisive=sum(arm.selection.indecisive for arm in cells),
    )


def previous_sd(out: Path) -> dict[str, float]:
    """Per track, the median relative sd of the paired differences of the last run in ``out``
    (its ``report.json``), for the design check's planning sd; {} when there is none."""
    try:
        report = Analysis.from_dict(json.loads((out / "report.json").read_text()))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
    found = {}
    for track, entry in report.tracks.items():
        ratios = [
            c.comparison.sd_rel
            for c in entry.comparisons.values()
            if math.isfinite(c.comparison.sd_rel)
        ]
        if ratios:
            found[track] = statistics.median(ratios)
    return found


def environment_warnings(records: list[RunRecord]) -> list[str]:
    """One line per environment setting that differs between the runs combined in a report."""
    warnings = []
    for key in ENVIRONMENT_KEYS:
        values = sorted({str(r.environment.get(key)) for r in records if r.environment})
        if len(values) > 1:
            warnings.append(
                f"results combine training runs with different {key}: {', '.join(values)}"
            )
    return warnings


def design(
    seeds: int,
    comparisons: int,
    finished: int | None = None,
    both_converged: int = 0,
    jobs: tuple[int, int] = (0, 0),
    claims: str | None = None,
    look: FutilityLook | None = None,
    stopped: int = 0,
    planned_mde: dict[str, float | None] | None = None,
    alpha: float = 0.05,
) -> Design:
    """Whether ``seeds`` can reach Holm significance for this family size; ``finished``:
    the comparisons with every planned seed (fewer than the family after an interruption: the
    tables are ``partial``); ``both_converged``: the size of the both-converged analyses' own
    family; ``jobs``: (finished, planned); ``claims``: the run's design (None, as before
    designs were named: per-track); ``look``: its futility look, which ``stopped`` comparisons;
    ``planned_mde``: the MDE the design planned per track; ``alpha``: the level the per-track
    verdicts spend (less than 0.05 where an earlier run of the study could reach them).
    Under the suite design the per-track family's warning is not one: those verdicts were not
    planned, and each row says how many seeds they need."""
    needed = min_seeds_for_significance(max(comparisons, 1))
    claims = claims or Claims.PER_TRACK
    finished = comparisons if finished is None else finished
    return Design(
        comparisons=comparisons,
        finished=finished,
        partial=finished < comparisons or jobs[0] < jobs[1],
        jobs=jobs[1],
        jobs_finished=jobs[0],
        alpha=alpha,
        verdict_alpha=alpha / max(comparisons, 1),
        both_converged_comparisons=both_converged,
        seeds=seeds,
        min_seeds_for_significance=needed,
        warning=None if claims == Claims.SUITE else design_warning(seeds, max(comparisons, 1)),
        claims=str(claims),
        per_track_seeds=default_seeds(max(comparisons, 1)),
        futility_seeds=look.seeds if look else 0,
        stopped=stopped,
        planned_mde=dict(planned_mde or {}),
    )


def test_set(records: list[RunRecord]) -> TestSet:
    """Whether every seed of a track was scored on the same test set, and its digest (else one
    digest of the seeds' test sets), read from the records."""
    digests = {r.job.seed: r.result.test_digest for r in records if r.result.test_digest}
    unique = sorted(set(digests.values()))
    combined = hashlib.sha256(" ".join(digests[s] for s in sorted(digests)).encode())
    return TestSet(
        fixed=len(unique) == 1,
        digest=unique[0] if len(unique) == 1 else combined.hexdigest()[:16],
        seeds=len(digests),
    )


def failure(record: RunRecord) -> Failure:
    """A failed job as the report lists it."""
    job = record.job
    return Failure(
        track=job.track,
        mixer=job.mixer,
        seed=job.seed,
        reason=record.error,
        traceback=record.traceback,
    )

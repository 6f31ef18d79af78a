"""From the plan and the stored records to the run's report: paired comparisons, Holm, flags,
signatures and the across-track figures.

Input is plain data (the :class:`~benchsuite.plan.plan.Plan` and RunRecords); output is one
:class:`~benchsuite.results.schema.Analysis`, whose serialisation is ``report.json``. The config
of each cell is the one the plan records (:mod:`.cells`): nothing is selected again here. No
torch, so ``benchsuite report`` re-derives every figure from the store alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from benchsuite.errors import UsageError
from benchsuite.plan.design import suite_warning
from benchsuite.plan.plan import Plan
from benchsuite.protocol import stats
from benchsuite.protocol.power import looks_alpha
from benchsuite.records import RunRecord
from benchsuite.results import cells as cells_
from benchsuite.results import curves, flags, futility, resolving, summaries
from benchsuite.results.aggregate import Paired, TrackPairs, aggregate_across_tracks
from benchsuite.results.cell_schema import CellResult, TrackResult
from benchsuite.results.comparison import compare_cell
from benchsuite.results.schema import REPORT_VERSION, AcrossTracks, Analysis
from benchsuite.results.tradeoffs import quality_vs_cost
from benchsuite.store.store import Store


def _track(
    plan: Plan, track: str, results: dict[str, RunRecord], stopped: dict[str, int]
) -> TrackResult:
    """A track's mixers and comparisons (Holm and the flags' reasons come later); a comparison
    the futility look ``stopped`` (mixer -> seeds at the look) stands on those seeds, at p = 1."""
    facts, settings = plan.tracks[track], plan.settings
    baseline, planned = settings.baseline, plan.cells.get(track, {})
    mixers = [m for m in settings.mixers or () if m in planned]
    early = futility.look_results(plan, results) if stopped else {}
    arms = {m: cells_.arm(plan, track, m, early if m in stopped else results) for m in mixers}
    found = {m: a for m, a in arms.items() if a is not None}
    entry = TrackResult(
        facts=facts,
        baseline=baseline,
        test_set=summaries.test_set([r for a in found.values() for r in a.records.values()]),
        scale_note=summaries.scale_note(settings.preset, facts.budget),
    )
    entry.mixers.update({mixer: cells_.mixer_result(facts, arm) for mixer, arm in found.items()})
    base = found.get(baseline)
    for mixer, arm in found.items():
        if mixer == baseline or base is None:
            continue
        undertrained = (entry.mixers[mixer].undertrained, entry.mixers[baseline].undertrained)
        cell = compare_cell(plan, track, mixer, base, arm, undertrained)
        entry.comparisons[mixer] = cell.stopped(stopped[mixer]) if mixer in stopped else cell
    return entry


def _holm(
    tracks: dict[str, TrackResult], size: int, baseline: str, alpha: float
) -> dict[str, TrackResult]:
    """The tracks with every comparison after Holm over the run's family of ``size`` at
    ``alpha`` (the both-converged comparisons over their own family) and each one's flag
    reasons."""
    cells = [(t, m, c) for t, e in tracks.items() for m, c in e.comparisons.items()]
    held = stats.holm_adjusted([c.comparison for _, _, c in cells], alpha, family=size)
    both = iter(
        stats.holm_adjusted([c.both_converged for _, _, c in cells if c.both_converged], alpha)
    )
    adjusted: dict[str, dict[str, CellResult]] = {t: {} for t in tracks}
    for (track, mixer, cell), comparison in zip(cells, held, strict=True):
        cell = dataclasses.replace(
            cell,
            comparison=comparison,
            both_converged=next(both) if cell.both_converged else None,
        )
        arms = tracks[track].mixers
        cell.flag_reasons = flags.reasons(
            cell, arms[mixer], arms[baseline], arms.get(flags.IDENTITY)
        )
        adjusted[track][mixer] = cell
    return {t: dataclasses.replace(e, comparisons=adjusted[t]) for t, e in tracks.items()}


def analyse(
    plan: Plan,
    results: dict[str, RunRecord],
    failures: list[RunRecord],
    inputs_digest: str | None = None,
) -> Analysis:
    """The whole report of a run, from its plan and the stored records (``inputs_digest``: their
    :func:`report_digest`, when known)."""
    settings = plan.settings
    baseline = settings.baseline
    stopped = futility.stopped_cells(plan, results)
    tracks = {track: _track(plan, track, results, stopped.get(track, {})) for track in plan.tracks}
    cells = [c for e in tracks.values() for c in e.comparisons.values()]
    size = max(plan.family(), len(cells))
    tracks = _holm(tracks, size, baseline, plan.track_alpha)
    controls = {name for name, facts in plan.mixers.items() if resolving.CONTROL in facts.tags}
    tracks = {
        name: dataclasses.replace(
            entry, resolution=resolving.of_track(entry, plan.planned_mde.get(name), controls)
        )
        for name, entry in tracks.items()
    }
    both_converged = sum(c.both_converged is not None for c in cells)
    planned = plan.needed_keys(stopped)
    across = _across(tracks, plan, baseline)
    return Analysis(
        report_version=REPORT_VERSION,
        warnings=[
            *summaries.environment_warnings([results[k] for k in planned if k in results]),
            *filter(None, [suite_warning(plan.settings)]),
        ],
        settings=settings,
        environment=plan.environment,
        mixers=plan.mixers,
        tracks=tracks,
        skipped=plan.skipped,
        scale=summaries.scale_summary(settings.preset, tracks),
        design=summaries.design(
            settings.seeds or 0,
            size,
            sum(c.missing_seeds == 0 for c in cells),
            both_converged,
            (sum(key in results for key in planned), len(planned)),
            settings.design,
            plan.futility,
            sum(len(mixers) for mixers in stopped.values()),
            plan.planned_mde,
            plan.track_alpha,
        ),
        selection=summaries.selection_summary(tracks),
        across_tracks=across,
        learning_curves=curves.summary(tracks),
        quality_vs_cost=quality_vs_cost(tracks, across),
        failures=[
            summaries.failure(r) for r in failures if r.key not in results and r.key in planned
        ],
        inputs_digest=inputs_digest,
    )


def report_digest(plan: Plan, results: dict[str, RunRecord], failures: list[RunRecord]) -> str:
    """Hash of everything a report is made from (the plan, the results used, the failures, and
    the code of the results and output stages): a re-run with the same digest reuses it."""
    stages = Path(__file__).parent.parent
    code = b"".join(
        path.read_bytes()
        for folder in ("results", "output")
        for path in sorted((stages / folder).rglob("*.*"))
        if path.suffix in (".py", ".j2")
    )
    inputs = {key: value for key, value in plan.to_dict().items() if key != "environment"}
    inputs["results"] = sorted(results)
    inputs["failures"] = len(failures)
    payload = json.dumps(inputs, sort_keys=True, default=str).encode() + code
    return hashlib.sha256(payload).hexdigest()[:24]


def _pairs(cell: CellResult) -> Paired:
    """A comparison's paired values, caps and seeds."""
    return Paired(
        baseline=list(cell.baseline_values),
        mixer=list(cell.mixer_values),
        caps=list(cell.caps),
        seeds=list(cell.seeds),
    )


def stage_bounds(plan: Plan) -> list[int]:
    """The seed counts that end each stage of the suite tests: the earlier looks at them in the
    folder, the futility look where it comes after them (which later seeds exist depends on the
    signs it saw), and this run's seeds (docs/statistics.md, "Looks")."""
    seeds = plan.settings.seeds or 0
    bounds = sorted({*plan.looks, seeds})
    look = plan.futility.seeds if plan.futility else None
    if look is not None and look > max(plan.looks, default=0) and look < seeds:
        bounds = sorted({*bounds, look})
    return bounds


def _across(tracks: dict[str, TrackResult], plan: Plan, baseline: str) -> AcrossTracks | None:
    """The across-track figures, from the tracks and mixers in name order: the bootstrap and the
    sign flips draw in that order, so the same store gives the same figures whatever order a run
    listed them in (a reloaded plan's are sorted). Every seed enters; where the seeds come in
    stages (earlier looks, the futility look) the suite tests combine the stages' tests, each
    exact given the stages before it (:func:`stage_bounds`)."""
    per_track, verdicts = {}, {}
    for name, entry in sorted(tracks.items()):
        if not entry.comparisons:
            continue
        per_track[name] = TrackPairs(
            higher_is_better=entry.facts.higher_is_better,
            ideal=plan.tracks[name].ideal,
            pairs={mixer: _pairs(c) for mixer, c in sorted(entry.comparisons.items())},
        )
        verdicts[name] = {m: c.comparison.verdict for m, c in entry.comparisons.items()}
    if not per_track:
        return None
    planned = {
        mixer: [track for track in sorted(plan.cells) if mixer in plan.cells[track]]
        for mixer in plan.settings.mixers or ()
        if mixer != baseline
    }
    planned = {mixer: tracks for mixer, tracks in planned.items() if tracks}
    every_look = [*plan.looks, plan.settings.seeds or 0]
    across = aggregate_across_tracks(
        per_track,
        baseline_name=baseline,
        verdicts=verdicts,
        planned=planned,
        alpha=looks_alpha(len(every_look)),  # alpha/2 at a first look, alpha/4 at a second
        stages=stage_bounds(plan),
    )
    return dataclasses.replace(
        across, tracks_left_out=left_out(tracks, across, baseline), looks=every_look
    )


def left_out(tracks: dict[str, TrackResult], across: AcrossTracks, baseline: str) -> dict[str, str]:
    """Tracks of the run that the across-track figures leave out, with the reason."""
    reasons = {}
    for name, entry in tracks.items():
        if name in across.tracks:
            continue
        if not entry.mixers:
            reasons[name] = "no finished runs"
        elif baseline not in entry.mixers:
            reasons[name] = f"no results for the baseline {baseline}"
        elif not entry.comparisons:
            reasons[name] = "no mixer besides the baseline"
        else:
            reasons[name] = "no score: the metric declares no ideal value and the baseline has none"
    return reasons


def stored_inputs(store: Store, plan: Plan) -> tuple[dict[str, RunRecord], list[RunRecord], str]:
    """The stored results of the plan's jobs, every failure, and their report digest."""
    results, failures = store.results(plan.keys()), store.failures()
    return results, failures, report_digest(plan, results, failures)


def last_plan(store: Store, path: Path) -> Plan:
    """The plan of the last run saved in ``store`` (read from ``path``)."""
    saved = store.last_plan()
    if saved is None:
        raise UsageError(f"store {path} holds no finished run")
    return Plan.from_dict(saved)


def open_store(path: Path) -> Store:
    """The store at ``path``, or a one-line error naming the folder."""
    if not path.exists():
        raise UsageError(f"no benchsuite store in {path.parent} (expected {path})")
    return Store(path)


def analyse_store(path: Path, say: Callable[[str], None] = lambda text: None) -> Analysis:
    """The report of the last run saved in the store at ``path`` (no training, no files);
    ``say`` hears how many stored jobs it analyses, once they are read."""
    store = open_store(path)
    try:
        plan = last_plan(store, path)
        results, failures, digest = stored_inputs(store, plan)
    finally:
        store.close()
    say(f"analysing {len(results) + len(failures)} stored jobs of {path.parent}…")
    return analyse(plan, results, failures, digest)

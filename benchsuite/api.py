"""The Python API the CLI is a thin layer over: :func:`run` and :func:`report`.

A run: check the settings and the executor (before anything is printed or written) -> the design
check (``strict`` refuses a design that cannot reach significance) -> plan (load each track's data
once, skipping broken tracks with their reason; size each mixer; the pre-flight) -> the jobs: each
seed tunes the grid on its own validation split and scores its choice once on the test split,
its record (the chosen config in it) stored as it arrives; under the per-track design, the
futility look at half the seeds -> analysis -> report files -> the exit code. Every finished job
is in the store before the next starts, so an interrupted run resumes::

    from benchsuite import api
    from benchsuite.settings import RunSettings

    summary = api.run(RunSettings(tracks=("sequence",), mixers=("dense", "attention")))
    summary.report.tracks["sequence"].comparisons["attention"].comparison.verdict
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsuite.disk import network_warning
from benchsuite.errors import RunError, UsageError, one_line
from benchsuite.events import DesignCheck, Events
from benchsuite.execute.executors import check_available, make_executor
from benchsuite.execute.interrupts import exit_code, stoppable
from benchsuite.execute.memory import worker_limit
from benchsuite.execute.preflight import checker
from benchsuite.execute.runner import Runner
from benchsuite.execute.worker import Worker
from benchsuite.output.numbers import num
from benchsuite.plan.code import changed_modules
from benchsuite.plan.cost import first_guess, job_units
from benchsuite.plan.design import design_check
from benchsuite.plan.extension import check_extension
from benchsuite.plan.plan import Plan, Skip, plan_run, recipe
from benchsuite.plan.resolve import check_executor, resolve
from benchsuite.protocol.power import holm_first_alpha
from benchsuite.registry import Registry, load_registry
from benchsuite.settings import RunSettings
from benchsuite.store.store import FILENAME, Store
from benchsuite.train.checkpoint import Saves
from benchsuite.train.size import parameter_count
from benchsuite.vocabulary import Claims, SkipKind

if TYPE_CHECKING:  # pragma: no cover - typing only
    from benchsuite.results.schema import Analysis


@dataclass
class RunSummary:
    """What a finished (or interrupted) run returns, with the exit code of its policy."""

    out: Path
    report: Analysis
    trained: int = 0
    reused: int = 0
    failed: int = 0
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    exit_code: int = 0
    signal: str = ""  # the signal that stopped it (SIGINT, SIGTERM)
    dropped: int = 0  # jobs in flight when it stopped, not stored (they train again on resume)
    saved: int = 0  # jobs (or batched cells) whose training is saved: they resume where they were
    complete_tracks: list[str] = field(default_factory=list)  # every needed job stored
    resumed: int = 0  # of the jobs trained, those that went on from an interrupted run's save

    @property
    def broken(self) -> int:
        """Cells skipped because of an error (a broken track or mixer), not by design."""
        return sum(s.kind.failed for s in self.report.skipped)


def prepare(
    settings: RunSettings, registry: Registry | None = None, events: Events | None = None
) -> tuple[RunSettings, Registry, DesignCheck]:
    """Check everything a run needs before it starts: the executor settings and that it can start
    (Ray importable, its address reachable), the plugins, the names and options (one-line usage
    errors), and the design (reported to ``events``)."""
    events = events or Events()
    check_executor(settings)
    check_available(settings.executor, settings.address)
    registry = registry or load_registry(settings.plugins_dir)
    for failure in registry.failures:
        events.warning(f"plugin {failure.name!r} not loaded: {failure.reason}")
    registry.check_loaded("mixer", [*(settings.mixers or ()), settings.baseline])
    registry.check_loaded("track", settings.tracks or ())
    check_out(Path(settings.out))
    resolved = resolve(settings, registry)
    if settings.mixers is None and (added := installed_mixers(resolved, registry)):
        events.note(
            f"the default suite includes {len(added)} mixer(s) from installed plugins: "
            f"{', '.join(added)} (--mixers chooses the mixers)"
        )
    from benchsuite.results.summaries import previous_sd

    check_extension(stored_plans(Path(resolved.out)), resolved, resolved.out)
    design = design_check(
        resolved, registry.tracks, previous_sd(Path(resolved.out)), registry.mixers
    )
    events.design(design)
    if design.warning and resolved.strict:
        raise UsageError(f"{design.warning} (--strict)")
    return resolved, registry, design


def installed_mixers(settings: RunSettings, registry: Registry) -> list[str]:
    """The mixers of a default run (no ``--mixers``) that installed or local plugins added to
    the built-in ones, each with its plugin."""
    return [
        f"{name} (plugin {registry.mixers[name].plugin!r})"
        for name in settings.mixers or ()
        if name in registry.mixers
        and not registry.mixers[name].module.startswith("benchsuite.mixers")
    ]


def skipped_cells(plan: Plan) -> dict[bool, list[Skip]]:
    """The plan's skipped cells (not whole tracks) by whether an error skipped them (True) or
    the data ruled them out (False); a group only where it holds a cell."""
    cells = [skip for skip in plan.skipped if skip.mixer != "*"]
    grouped = {failed: [s for s in cells if s.kind.failed == failed] for failed in (False, True)}
    return {failed: group for failed, group in grouped.items() if group}


def family_note(plan: Plan, design: DesignCheck, family: int) -> str:
    """The line that corrects the design's family once the tracks' data has been probed."""
    why = {False: "ruled out by the data", True: "failed before training"}
    said = [
        f"{', '.join(f'{s.track}/{s.mixer}' for s in group)} {why[failed]}"
        for failed, group in skipped_cells(plan).items()
    ]
    ruled_out = f" ({'; '.join(said)})" if said else ""
    if design.claims == Claims.SUITE:
        return (
            f"design after probing the data: a per-track family of {family} comparisons, not "
            f"{design.comparisons}{ruled_out}"
        )
    return (
        f"design after probing the data: a family of {family} comparisons, not "
        f"{design.comparisons}{ruled_out}; the analysis uses {family}: verdicts at alpha "
        f"{num(holm_first_alpha(family), 2)}, its first step"
    )


def reference_step() -> float:
    """Seconds of one reference step, the unit a run's cost is counted in (imports torch, as the
    plan's other checks do: only a run that trains asks)."""
    from benchsuite.train.reference import reference_step_seconds

    return reference_step_seconds()


def preflight_note(failing: list[Skip]) -> str:
    """Every cell the pre-flight failed, in one warning (before any training)."""
    pairs = "; ".join(f"{s.track}/{s.mixer}: {s.reason}" for s in failing)
    return (
        f"pre-flight: {len(failing)} mixer × track pair(s) fail before training and are "
        f"skipped (the rest runs): {pairs}"
    )


def nothing_to_compare(plan: Plan) -> str:
    """Why a plan has no comparison left once the data is probed and the mixers are checked."""
    kinds = {True: "failed before training", False: "are ruled out by the data"}
    groups = skipped_cells(plan)
    said = [
        f"{len(groups[failed])} cell(s) {text}: "
        + "; ".join(f"{s.track}/{s.mixer}: {s.reason}" for s in groups[failed])
        for failed, text in kinds.items()
        if failed in groups
    ]
    why = f" ({'; '.join(said)})" if said else ""
    return f"nothing to compare with the baseline{why}; nothing was trained"


def stored_plans(out: Path) -> list[dict[str, Any]]:
    """The plans of the runs stored in ``out`` (none when it holds no store yet)."""
    if not (out / FILENAME).exists():
        return []
    store = Store.in_folder(out)
    try:
        return store.plans()
    finally:
        store.close()


def check_out(out: Path) -> None:
    """The output folder can be one: a file of that name is a one-line usage error."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file, not a folder; name a folder (it is created)")


def run(
    settings: RunSettings, *, registry: Registry | None = None, events: Events | None = None
) -> RunSummary:
    """Run the whole protocol for ``settings`` and write the report files into ``settings.out``.

    ``registry``: the plugins to use (default: load them; a registry with mixers added from Python
    runs them with ``executor="local"``). ``events``: callbacks for progress and warnings.
    """
    events = events or Events()
    settings, registry, design = prepare(settings, registry, events)
    with stoppable(events.stopping) as interrupts:
        summary = _run(settings, registry, design, events)
    if summary.interrupted:  # no signal recorded: a run off the main thread, stopped by Ctrl-C
        summary.signal = interrupts.received or "SIGINT"
        summary.exit_code = exit_code(summary.signal)
    return summary


def _run(
    settings: RunSettings, registry: Registry, design: DesignCheck, events: Events
) -> RunSummary:
    """:func:`run` once its settings are checked: plan, train, analyse, write."""
    out = Path(settings.out)
    store = Store.in_folder(out)
    if warning := network_warning(store.path):
        events.warning(warning)
    saves = Saves(out / "checkpoints", settings.save_every)
    worker = Worker(settings.plugins_dir, settings.threads, registry, saves)
    pool = make_executor(
        settings.executor,
        worker,
        jobs=settings.jobs,
        timeout=settings.timeout,
        address=settings.address,
    )
    if settings.executor == "process" or settings.memory_limit is not None:
        worker.memory_limit = worker_limit(settings.memory_limit, pool.slots or 1)
    plan = stored_plan(store, settings, registry)
    if plan is None:
        events.note("planning: loading each track's data, checking and sizing each mixer on it…")
        plan = plan_run(
            settings,
            registry.tracks,
            registry.mixers,
            parameter_count,
            checker(pool, worker),
            reference_step,
            earlier=store.plans(),
            planned_mde=design.planned_mde,
        )
    if (
        plan.family() == 0
    ):  # its one line names every cell: no warning before it says "the rest runs"
        pool.close()
        store.close()
        raise RunError(nothing_to_compare(plan))
    if failing := [s for s in plan.skipped if s.kind == SkipKind.PREFLIGHT]:
        events.warning(preflight_note(failing))
    if (family := plan.family()) != design.comparisons:
        events.design_note(family_note(plan, design, family))
    for note in code_changes(store.last_plan(), plan):
        events.warning(note)
    _announce(plan, store, pool.slots, events)
    stopped = partial(stopped_by_look, plan, store)
    runner = Runner(plan, store, pool, worker, events, out / "logs", stopped=stopped)
    interrupted = False
    try:
        runner.run()
    except KeyboardInterrupt:  # keep what finished, report it, say how to resume
        interrupted = True
    finally:
        pool.close()
    from benchsuite.results.analysis import analyse, stored_inputs

    results, failures, digest = stored_inputs(store, plan)
    needed = set(plan.needed_keys(stopped_by_look(plan, store)))
    store.close()
    report, warnings = _cached_report(out, digest), []
    if report is None:
        events.analysing(len(results) + len(failures))
        report = analyse(plan, results, failures, digest)
        warnings = write_all(report, out)
    counts = runner.counts
    summary = RunSummary(
        out, report, counts.trained, counts.reused, counts.failed, warnings, interrupted
    )
    summary.resumed = counts.resumed
    summary.dropped = runner.in_flight if interrupted else 0
    summary.saved = saves.held() if interrupted else 0
    stored = set(results) | {failure.key for failure in failures}
    summary.complete_tracks = [
        track
        for track, cells in plan.cells.items()
        if all(key in stored for cell in cells.values() for key in cell.jobs if key in needed)
    ]  # every job it still needs is stored
    failed = summary.failed and not settings.allow_failures
    summary.exit_code = 1 if failed or summary.broken else 0
    return summary


def _announce(plan: Plan, store: Store, slots: int | None, events: Events) -> None:
    """Tell ``events`` the jobs left to train (of those the plan needs: never the later seeds
    of a comparison its futility look stopped) and a first guess of their wall time."""
    needed = plan.needed_keys(stopped_by_look(plan, store))
    known = store.known_keys(needed)
    pending = [plan.jobs[key] for key in needed if key not in known]
    guess = first_guess(
        [job_units(job, plan.tracks[job.track].tokens) for job in pending],
        slots,
        plan.environment.reference_step_seconds,
    )
    events.planned(len(pending), len(needed), guess)


def stored_plan(store: Store, settings: RunSettings, registry: Registry) -> Plan | None:
    """The folder's last plan when this run would make the same one (same recipe) and every one
    of its jobs is stored: nothing to train, so no data to probe, no model to build for sizing
    and no reference step to time (its environment is that of the run that trained the jobs)."""
    last = store.last_plan()
    if not last or last.get("recipe") != recipe(settings, registry.tracks, registry.mixers):
        return None
    plan = Plan.from_dict(last)
    keys = plan.needed_keys(stopped_by_look(plan, store))
    return plan if len(store.known_keys(keys)) == len(keys) else None


def stopped_by_look(plan: Plan, store: Store) -> dict[str, dict[str, int]]:
    """The comparisons the plan's futility look stopped, from the stored results of the jobs it
    waits for (none without a look)."""
    if plan.futility is None:
        return {}
    from benchsuite.results.futility import stopped_cells

    return stopped_cells(plan, store.results(plan.look_keys()))


def code_changes(previous: dict[str, Any] | None, plan: Plan) -> list[str]:
    """One line per track or mixer (or the training path) whose code changed since the last run
    in the same folder: their jobs are trained again."""
    before = (previous or {}).get("code", {})
    notes = []
    for part, modules in plan.code.items():
        if part in before and (changed := changed_modules(before[part], modules)):
            notes.append(
                f"code of {part} changed since the last run here ({', '.join(changed)}): "
                "its jobs run again"
            )
    return notes


def report(
    out: Path | str, *, write: bool = True, say: Callable[[str], None] = lambda text: None
) -> Analysis:
    """Re-build every table and file of a finished run from its store alone (no training);
    ``say`` hears what it is doing before each step that takes a while."""
    from benchsuite.results.analysis import analyse_store

    out = Path(out)
    result = analyse_store(out / FILENAME, say)
    if write:
        say("writing report.json, the figures and report.html…")
        write_all(result, out)
    return result


def _cached_report(out: Path, digest: str) -> Analysis | None:
    """The report already in ``out`` when it was made from exactly these inputs, else None."""
    try:
        previous = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        return None
    fresh = previous.get("inputs_digest") == digest and (out / "report.html").exists()
    from benchsuite.results.schema import Analysis

    return Analysis.from_dict(previous) if fresh else None


def write_all(result: Analysis, out: Path) -> list[str]:
    """Write report.json, the per-comparison files, report.html and the plots.

    The JSON files come first; a failure while drawing is returned as a warning, never losing them.
    """
    from benchsuite.output.html import write_html
    from benchsuite.output.report import write_report

    write_report(result, out)
    try:
        write_html(result, out)
    except Exception as error:  # the figures are already safe in report.json
        return [f"report.html not written: {one_line(error)}"]
    return []


__all__ = ["Events", "RunSettings", "RunSummary", "prepare", "report", "run"]

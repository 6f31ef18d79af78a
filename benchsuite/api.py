"""The Python API the CLI is a thin layer over: ``run``, ``report``.

A run: validate the request -> load each track's data once (skip broken tracks with their reason)
-> sweep jobs -> choose configs on validation -> evaluation jobs -> analysis -> report files.
Every finished job is in the store before the next starts, so an interrupted run resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsuite.plan import (
    OVERRIDABLE,
    RunRequest,
    budget_signature,
    effective_budget,
    eval_jobs,
    sweep_jobs,
)
from benchsuite.registry import Registry, load_registry
from benchsuite.seeds import Streams, sweep_seeds
from benchsuite.specs import (
    Job,
    RunRecord,
    UsageError,
    check_names,
    did_you_mean,
    one_line,
    resolve_options,
)
from benchsuite.store import Store


@dataclass
class Progress:
    """Callbacks the runner reports to (the CLI draws a progress bar from them)."""

    start: Callable[[str, int], None] = lambda phase, total: None
    advance: Callable[[RunRecord, bool], None] = lambda record, reused: None


@dataclass
class RunSummary:
    """What a finished (or interrupted) run returns."""

    out: Path
    report: dict[str, Any]
    trained: int = 0
    reused: int = 0
    failed: int = 0
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def broken(self) -> int:
        """Cells skipped because of an error (a broken track or mixer), not by design."""
        return sum(s.get("kind") == "error" for s in self.report["skipped"])


def make_request(
    registry: Registry,
    *,
    tracks: Sequence[str] | None = None,
    mixers: Sequence[str] | None = None,
    baseline: str = "dense",
    seeds: int | None = None,
    sweep_seeds: int = 2,
    preset: str = "quick",
    track_options: dict[str, dict[str, Any]] | None = None,
    mixer_options: dict[str, dict[str, Any]] | None = None,
    data_dir: str | None = None,
    threads: int = 1,
    budget_overrides: dict[str, Any] | None = None,
    device: str = "cpu",
    batch_seeds: bool | None = None,
) -> RunRequest:
    """Validate names and options against the registry; default to every track and mixer."""
    from benchsuite.stats import min_seeds_for_significance

    track_names = list(tracks) if tracks else sorted(registry.tracks)
    mixer_names = list(mixers) if mixers else sorted(registry.mixers)
    check_names("track", track_names, list(registry.tracks))
    check_names("mixer", mixer_names, list(registry.mixers))
    check_names("baseline", [baseline], list(registry.mixers))
    mixer_names = [baseline, *[m for m in mixer_names if m != baseline]]
    if len(mixer_names) < 2:
        raise UsageError(f"nothing to compare: only the baseline {baseline!r} was given")
    if sweep_seeds < 1:
        raise UsageError(f"--sweep-seeds must be at least 1, got {sweep_seeds}")
    comparisons = len(track_names) * (len(mixer_names) - 1)
    if seeds is None:
        seeds = max(8, min_seeds_for_significance(comparisons))
    if seeds < 2:
        raise UsageError(f"--seeds must be at least 2 for a paired comparison, got {seeds}")
    for name in track_names:
        if not registry.tracks[name].budget(preset).grid:
            raise UsageError(f"track {name!r} has an empty sweep grid for preset {preset!r}")
    overrides = _budget_overrides(budget_overrides or {})
    for group, given in (("track", track_options or {}), ("mixer", mixer_options or {})):
        pool = registry.tracks if group == "track" else registry.mixers
        for name in given:
            if name not in pool:
                raise UsageError(
                    f"option given for unknown {group} {name!r}{did_you_mean(name, pool)}"
                )
    resolved_tracks = {
        n: resolve_options(registry.tracks[n].options, (track_options or {}).get(n, {}), n)
        for n in track_names
    }
    resolved_mixers = {
        n: resolve_options(registry.mixers[n].options, (mixer_options or {}).get(n, {}), n)
        for n in mixer_names
    }
    return RunRequest(
        tracks=tuple(track_names),
        mixers=tuple(mixer_names),
        baseline=baseline,
        seeds=seeds,
        sweep_seeds=sweep_seeds,
        preset=preset,
        track_options=resolved_tracks,
        mixer_options=resolved_mixers,
        data_dir=data_dir,
        threads=threads,
        budget_overrides=overrides,
        device=_check_device(device),
        batch_seeds=device.startswith("cuda") if batch_seeds is None else batch_seeds,
    )


def _check_device(device: str) -> str:
    """``cpu`` or an available CUDA device (checking imports torch only when a GPU is asked for)."""
    if device == "cpu":
        return device
    if not device.startswith("cuda"):
        raise UsageError(f"unknown device {device!r}; valid: cpu, cuda, cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise UsageError(f"device {device!r} asked for, but torch sees no CUDA device here")
    return device


def _budget_overrides(given: dict[str, Any]) -> dict[str, int]:
    overrides = {}
    for key, value in given.items():
        if key not in OVERRIDABLE:
            raise UsageError(f"unknown budget key {key!r}; valid: {', '.join(OVERRIDABLE)}")
        try:
            overrides[key] = int(value)
        except (TypeError, ValueError):
            raise UsageError(f"budget {key}: expected a whole number, got {value!r}") from None
        if overrides[key] < 1:
            raise UsageError(f"budget {key}: must be at least 1, got {value!r}")
    return overrides


def _probe_track(registry: Registry, request: RunRequest, name: str) -> dict[str, Any]:
    """Load the track's data for the first sweep seed: token count, dataset line, data key."""
    track = registry.tracks[name]
    options = dict(request.track_options[name])
    data = track.load(Streams(request.salt, name, sweep_seeds(1)[0]), options, request.preset,
                      request.data_dir)  # fmt: skip
    budget = effective_budget(track, request)
    return {
        "metric": track.metric.name,
        "higher_is_better": track.metric.higher_is_better,
        "direction": track.metric.direction,
        "dataset": data.description,
        "verified": data.verified,
        "tokens": data.tokens,
        "grid": [dict(cfg) for cfg in budget.grid],
        "budget": {
            "steps": budget.steps,
            "batch_size": budget.batch_size,
            "dim": budget.dim,
            "depth": budget.depth,
            "checkpoint": budget.checkpoint,
        },
        "budget_signature": budget_signature(track, request),
        "data_key": track.data_key(options, request.preset, request.data_dir) + data.identity,
        "plugin": f"{track.distribution} {track.version}".strip(),
    }


def _mixer_meta(registry: Registry, name: str) -> dict[str, Any]:
    mixer = registry.mixers[name]
    signature = mixer.signature
    return {
        "description": mixer.description,
        "plugin": f"{mixer.distribution} {mixer.version}".strip(),
        "causal": mixer.causal,
        "signature": None if signature is None else {
            "prediction": signature.prediction,
            "predicted": dict(signature.predicted),
            "tolerance": signature.tolerance,
        },
    }  # fmt: skip


class Runner:
    """Carries one run through its phases, writing every record to the store as it arrives."""

    def __init__(self, registry: Registry, request: RunRequest, store: Store, executor,
                 progress: Progress, logs: Path, plugins_dir: str | None) -> None:  # fmt: skip
        self.registry, self.request, self.store = registry, request, store
        self.executor, self.progress, self.logs = executor, progress, logs
        self.plugins_dir = plugins_dir
        self.trained = self.reused = self.failed = 0

    def execute(self, phase: str, jobs: list[Job]) -> dict[str, RunRecord]:
        """Run the jobs that have no stored result; return every stored result among ``jobs``."""
        keys = [job.key for job in jobs]
        known = self.store.known_keys(keys)
        self.progress.start(phase, len(jobs))
        for key in keys:
            if key in known:
                self.reused += 1
                self.progress.advance(RunRecord(key=key, job={}, status="ok"), True)
        todo = [job for job in jobs if job.key not in known]
        for record in self._records(todo):
            if record.status != "ok":
                self._save_traceback(record)
                self.failed += 1
            else:
                self.trained += 1
            self.store.put(record)
            self.progress.advance(record, False)
        return self.store.results(keys)

    def _records(self, jobs: list[Job]) -> Iterator[RunRecord]:
        """Records of ``jobs``: batched cells in this process (it owns the GPU), the rest by the
        executor."""
        from benchsuite.executors import execute_batch

        cells: dict[tuple, list[Job]] = {}
        for job in jobs:
            if job.batched:
                cells.setdefault((job.track, job.mixer, job.config_index), []).append(job)
        for cell in cells.values():
            yield from execute_batch(cell, self.plugins_dir)
        yield from self.executor.map([job for job in jobs if not job.batched])

    def _save_traceback(self, record: RunRecord) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{record.key}.txt"
        path.write_text(record.traceback)
        record.traceback = str(path)


def run(
    request: RunRequest,
    *,
    out: Path | str = "benchsuite-results",
    registry: Registry | None = None,
    plugins_dir: str | None = None,
    executor: str = "process",
    jobs: int | None = None,
    timeout: float | None = None,
    address: str | None = None,
    progress: Progress | None = None,
) -> RunSummary:
    """Run the whole protocol for ``request`` and write the report files into ``out``.

    ``executor``: ``process``, ``local`` or ``ray`` (see docs/running.md); ``jobs``: parallel jobs;
    ``timeout``: hard limit per job in seconds; ``address``: a Ray cluster's ``HOST:PORT``.
    """
    from benchsuite.analysis import analyse
    from benchsuite.executors import make_executor

    out = Path(out)
    registry = registry or load_registry(plugins_dir)
    store = Store.in_folder(out)
    pool = make_executor(executor, jobs, plugins_dir, threads=request.threads, timeout=timeout,
                         address=address)  # fmt: skip
    runner = Runner(registry, request, store, pool, progress or Progress(), out / "logs",
                    plugins_dir)  # fmt: skip
    manifest, sweep = plan_manifest(registry, request)
    interrupted = False
    try:
        _run_phases(runner, manifest, sweep)
    except KeyboardInterrupt:  # keep what finished, report it, say how to resume
        interrupted = True
    finally:
        pool.close()
    results, failures, digest = stored_inputs(store, manifest)
    store.close()
    report, warnings = _cached_report(out, digest), []
    if report is None:
        report = {**analyse(manifest, results, failures), "inputs_digest": digest}
        warnings = write_all(report, out)
    return RunSummary(out, report, runner.trained, runner.reused, runner.failed, warnings,
                      interrupted)  # fmt: skip


def plan_manifest(registry: Registry, request: RunRequest) -> tuple[dict[str, Any], list[Job]]:
    """The run's manifest (request, environment, each track's data, cells, skips) and sweep jobs."""
    from benchsuite.environment import describe

    manifest: dict[str, Any] = {"request": request.to_dict(), "tracks": {}, "skipped": [],
                                "cells": {}}  # fmt: skip
    sweep: list[Job] = []
    manifest["mixers"] = {name: _mixer_meta(registry, name) for name in request.mixers}
    manifest["environment"] = describe(request.device, request.threads)
    for name in request.tracks:
        try:
            meta = _probe_track(registry, request, name)
        except Exception as error:  # one broken track never takes the others down
            manifest["skipped"].append(
                {"track": name, "mixer": "*", "reason": one_line(error), "kind": "error"}
            )
            continue
        manifest["tracks"][name] = meta
        track = registry.tracks[name]
        for mixer_name in request.mixers:
            mixer = registry.mixers[mixer_name]
            reason = mixer.reason_unsupported(meta["tokens"], meta["budget"]["dim"])
            if reason:
                manifest["skipped"].append(
                    {"track": name, "mixer": mixer_name, "reason": reason, "kind": "unsupported"}
                )
                continue
            jobs = sweep_jobs(request, track, mixer, meta["data_key"])
            manifest["cells"].setdefault(name, {})[mixer_name] = {
                "sweep": [job.key for job in jobs],
                "eval": [],
            }
            sweep += jobs
    return manifest, sweep


def _run_phases(runner: Runner, manifest: dict[str, Any], sweep: list[Job]) -> None:
    """Sweep, choose each cell's config on validation, then evaluate (results go to the store)."""
    from benchsuite.analysis import select_configs

    registry, request = runner.registry, runner.request
    swept = runner.execute("sweep", sweep)
    evaluation: list[Job] = []
    for (name, mixer_name), best in select_configs(manifest, swept).items():
        track, mixer = registry.tracks[name], registry.mixers[mixer_name]
        jobs = eval_jobs(request, track, mixer, best, manifest["tracks"][name]["data_key"])
        manifest["cells"][name][mixer_name]["eval"] = [job.key for job in jobs]
        evaluation += jobs
    runner.store.add_run(manifest)
    runner.execute("eval", evaluation)


def report(
    out: Path | str, *, store_path: Path | None = None, write: bool = True
) -> dict[str, Any]:
    """Re-build every table and file of a finished run from its store alone (no training)."""
    from benchsuite.analysis import analyse

    out = Path(out)
    path = Path(store_path) if store_path else out / "benchsuite.sqlite"
    if not path.exists():
        raise UsageError(f"no benchsuite store in {out} (expected {path})")
    store = Store(path)
    try:
        manifest = store.last_run()
        if manifest is None:
            raise UsageError(f"store {path} holds no finished run")
        results, failures, digest = stored_inputs(store, manifest)
        result = {**analyse(manifest, results, failures), "inputs_digest": digest}
    finally:
        store.close()
    if write:
        write_all(result, out)
    return result


def stored_inputs(store: Store, manifest: dict[str, Any]) -> tuple[dict, list, str]:
    """The stored results of the manifest's jobs, every failure, and their report digest."""
    from benchsuite.analysis import report_digest

    keys = [k for cells in manifest["cells"].values() for cell in cells.values()
            for k in cell["sweep"] + cell["eval"]]  # fmt: skip
    results, failures = store.results(keys), store.failures()
    return results, failures, report_digest(manifest, results, failures)


def _cached_report(out: Path, digest: str) -> dict[str, Any] | None:
    """The report already in ``out`` when it was made from exactly these inputs, else None."""
    import json

    try:
        previous = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        return None
    fresh = previous.get("inputs_digest") == digest and (out / "report.html").exists()
    return previous if fresh else None


def write_all(result: dict[str, Any], out: Path) -> list[str]:
    """Write report.json, the per-comparison files, report.html and the plots.

    The JSON files come first; a failure while drawing is returned as a warning, never losing them.
    """
    from benchsuite.html import write_html
    from benchsuite.report import write_report

    write_report(result, out)
    try:
        write_html(result, out)
    except Exception as error:  # the figures are already safe in report.json
        return [f"report.html not written: {one_line(error)}"]
    return []


__all__ = ["Progress", "RunRequest", "RunSummary", "make_request", "report", "run"]

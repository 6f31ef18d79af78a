"""The worker: the one callable every executor runs, in its own process or in the driver's.

A :class:`Worker` is small and picklable, in the style of benchopt's parallel backends: it says
what a fresh process must load (the plugins: installed ones and ``plugins_dir``) and how to run a
job. In the driver's own process it uses the registry it was given, so a mixer registered from
Python runs with the ``local`` executor; pickled into a fresh process it loads the plugins there.
Any exception in a job becomes a failure record with its reason and traceback.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchsuite.errors import PluginError, one_line
from benchsuite.execute import memory
from benchsuite.plan.preflight import Check, Checked
from benchsuite.records import Environment, Job, RunRecord
from benchsuite.registry.variants import base_of, lookup
from benchsuite.vocabulary import Status

if TYPE_CHECKING:
    from benchsuite.registry import Registry
    from benchsuite.train.checkpoint import Saves


def environment(job: Job) -> Environment:
    """What the record needs to say about where it ran."""
    import platform

    import torch

    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "device": job.device,
        "host": platform.node(),
        "pid": os.getpid(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
    }


def failure_record(job: Job, reason: str, details: str, seconds: float) -> RunRecord:
    """A failed job's record: a one-line ``reason`` and the ``details`` (traceback or account)."""
    return RunRecord(
        key=job.key,
        job=job,
        status=Status.FAILED,
        error=reason,
        traceback=details,
        seconds=seconds,
    )


UNKNOWN = (
    "is not registered in this worker process: register it through an installed plugin or "
    "--plugins-dir, or use --executor local"
)


@dataclass(frozen=True)
class Cell:
    """The seeds of one (track, mixer) cell handed to a worker as one task: trained as one
    vmapped stack (:meth:`Worker.batch`), a record per seed. ``size``: its jobs, which scale the
    pool's per-job timeout."""

    jobs: tuple[Job, ...]

    @property
    def key(self) -> str:
        return self.jobs[0].key

    @property
    def label(self) -> str:
        first = self.jobs[0]
        return f"{first.track}/{first.mixer}/{len(self.jobs)} seeds batched"

    @property
    def size(self) -> int:
        return len(self.jobs)


class Worker:
    """Runs jobs and cells; ``setup`` prepares a fresh process (torch threads, plugins)."""

    def __init__(
        self,
        plugins_dir: str | None = None,
        threads: int = 1,
        registry: Registry | None = None,
        saves: Saves | None = None,
        memory_limit: int | None = None,
    ) -> None:
        self.plugins_dir, self.threads, self.registry = plugins_dir, threads, registry
        self.saves = saves  # where jobs save their training as it goes (None: they do not)
        self.memory_limit = memory_limit  # bytes a worker process may allocate (None: any)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its registry: a fresh process loads the plugins itself."""
        return {
            "plugins_dir": self.plugins_dir,
            "threads": self.threads,
            "registry": None,
            "saves": self.saves,
            "memory_limit": self.memory_limit,
        }

    def setup(self) -> None:
        """In a fresh worker process: fix the thread counts, load the plugins once, then cap
        the memory it may allocate (:mod:`benchsuite.execute.memory`)."""
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(self.threads)
        threadpool_limits(self.threads)  # numpy's BLAS too, so workers do not oversubscribe cores
        self.plugins()
        memory.cap(self.memory_limit)

    def plugins(self) -> Registry:
        """The registry jobs run with (loaded on first use in a fresh process)."""
        if self.registry is None:
            from benchsuite.registry import load_registry

            self.registry = load_registry(self.plugins_dir)
        return self.registry

    def _parts(self, job: Job) -> tuple[Any, Any]:
        tracks = self.plugins().tracks
        if job.track not in tracks:
            raise PluginError(f"track {job.track!r} {UNKNOWN}")
        return tracks[job.track], self._mixer(job.mixer)

    def _mixer(self, name: str) -> Any:
        """The mixer (or mixer variant) ``name`` as this process's registry has it."""
        mixers = self.plugins().mixers
        if base_of(name) not in mixers:
            raise PluginError(f"mixer {base_of(name)!r} {UNKNOWN}")
        return lookup(mixers, name)

    def __call__(self, job: Job | Cell | Check) -> RunRecord | list[RunRecord] | Checked:
        """Run one job (a cell: its seeds batched, a record each; a check: the pre-flight of a
        cell); any exception becomes a failure record with its reason and traceback."""
        from benchsuite.train.job import run_job

        if isinstance(job, Cell):
            return self.batch(job.jobs)
        if isinstance(job, Check):
            return self.check(job)

        start = time.perf_counter()
        try:
            result = run_job(job, *self._parts(job), self.saves)
        except Exception as error:  # a failing mixer or track must not take the run down
            details = traceback.format_exc()
            reason = one_line(error)
            if self.memory_limit is not None and memory.out_of_memory(error):
                reason = memory.said(job.mixer, job.track, self.memory_limit)
            return failure_record(job, reason, details, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        return RunRecord.finished(job, result, seconds, environment(job))

    def check(self, check: Check) -> Checked:
        """A cell's pre-flight: its mixer built, run forward and backward at each shape
        (:func:`benchsuite.train.preflight.check_mixer`); the first reason it fails, if any."""
        from benchsuite.train.preflight import check_mixer

        try:
            mixer = self._mixer(check.mixer)
        except PluginError as error:  # its jobs would fail the same way
            return Checked(check.key, one_line(error))
        for tokens, dim in check.shapes:
            if reason := check_mixer(mixer, tokens, dim, dict(check.options)):
                if self.memory_limit is not None and memory.refused(reason):
                    reason = memory.said(check.mixer, check.track, self.memory_limit)
                return Checked(check.key, reason)
        return Checked(check.key, None)

    def failure(
        self,
        job: Job | Cell | Check,
        reason: str,
        details: str,
        seconds: float,
        timed_out: bool = False,
    ) -> RunRecord | list[RunRecord] | Checked:
        """The failure record of a job whose process died or overran (the pool's question); a
        cell's, one per seed; a check's, its reason."""
        if isinstance(job, Check):
            return Checked(job.key, job.timed_out() if timed_out else job.died(reason))
        if isinstance(job, Cell):
            return [failure_record(one, reason, details, seconds / job.size) for one in job.jobs]
        return failure_record(job, reason, details, seconds)

    def retried(
        self, record: RunRecord | list[RunRecord] | Checked, reason: str
    ) -> RunRecord | list[RunRecord] | Checked:
        """``record`` (a cell's: each) of a job that ran again after its first process died,
        saying why (a check's outcome stays as it is)."""
        if isinstance(record, Checked):
            return record
        for one in record if isinstance(record, list) else [record]:
            one.environment["retried_after"] = reason
        return record

    def retire(self, record: RunRecord | list[RunRecord] | Checked) -> bool:
        """Whether the process that produced ``record`` must end: never, workers persist."""
        return False

    def batch(self, jobs: Sequence[Job]) -> list[RunRecord]:
        """The seeds of one cell trained as one batched model; on any error, one by one."""
        from benchsuite.train.job import run_jobs_batched

        start = time.perf_counter()
        try:
            results = run_jobs_batched(list(jobs), *self._parts(jobs[0]), self.saves)
        except Exception:  # failing seeds get their own failure records from the one-by-one path
            return [self(job) for job in jobs]
        seconds = (time.perf_counter() - start) / len(jobs)
        return [
            RunRecord.finished(
                job,
                result,
                seconds,
                {**environment(job), "batched": (result.costs.batched_seeds or 1) > 1},
            )
            for job, result in zip(jobs, results, strict=True)
        ]

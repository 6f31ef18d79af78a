"""Executors: a job in, a result record out, streamed back as jobs finish.

Workers only compute and return records; the driver alone writes the store. An executor knows
nothing of tracks or statistics: it calls :func:`execute` on plain :class:`Job` data.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from functools import lru_cache
from typing import Protocol

from benchsuite.specs import Job, RunRecord


@lru_cache(maxsize=4)
def _registry(plugins_dir: str | None):
    from benchsuite.registry import load_registry

    return load_registry(plugins_dir)


def environment(job: Job) -> dict[str, object]:
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


def execute(job: Job, plugins_dir: str | None) -> RunRecord:
    """Run one job; any exception becomes a failure record with its reason and traceback."""
    from benchsuite.train import run_job

    start = time.perf_counter()
    base = {"key": job.key, "job": asdict(job)}
    try:
        fields = run_job(job, _registry(plugins_dir))
    except Exception as error:  # a failing mixer or track must not take the run down
        lines = str(error).strip().splitlines()
        reason = f"{type(error).__name__}: {lines[0] if lines else ''}"
        return RunRecord(
            **base, status="failed", error=reason.rstrip(": "), traceback=traceback.format_exc(),
            seconds=time.perf_counter() - start,
        )  # fmt: skip
    return RunRecord(
        **base, status="ok", seconds=time.perf_counter() - start, environment=environment(job),
        **fields,
    )  # fmt: skip


class Executor(Protocol):
    """Runs jobs and yields their records in completion order."""

    def map(self, jobs: Sequence[Job]) -> Iterator[RunRecord]: ...


class LocalExecutor:
    """In-process and sequential: for debugging and for one-core machines."""

    def __init__(self, plugins_dir: str | None = None) -> None:
        self.plugins_dir = plugins_dir

    def map(self, jobs: Sequence[Job]) -> Iterator[RunRecord]:
        for job in jobs:
            yield execute(job, self.plugins_dir)


class ProcessExecutor:
    """A persistent pool of worker processes (joblib/loky), one torch thread each by default."""

    def __init__(self, jobs: int, plugins_dir: str | None = None) -> None:
        self.n_jobs = jobs
        self.plugins_dir = plugins_dir

    def map(self, jobs: Sequence[Job]) -> Iterator[RunRecord]:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=self.n_jobs, backend="loky", return_as="generator_unordered")
        yield from parallel(delayed(execute)(job, self.plugins_dir) for job in jobs)


def make_executor(name: str, jobs: int, plugins_dir: str | None) -> Executor:
    """The executor called ``name`` (``local`` or ``process``)."""
    if name == "local" or (name == "process" and jobs <= 1):
        return LocalExecutor(plugins_dir)
    if name == "process":
        return ProcessExecutor(jobs, plugins_dir)
    from benchsuite.specs import UsageError

    raise UsageError(f"unknown executor {name!r}; valid: local, process")

"""Executors: a job in, a result record out, streamed back as jobs finish.

Workers only compute and return records; the driver alone writes the store. An executor knows
nothing of tracks or statistics: it calls :func:`execute` on plain :class:`Job` data.

``local``    in-process and sequential (debugging); no hard timeout, a crash ends the run.
``process``  a supervised pool of persistent worker processes (:mod:`benchsuite.pool`).
``ray``      Ray core tasks on a cluster (:mod:`benchsuite.ray_executor`; ``benchsuite[ray]``).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from functools import lru_cache
from typing import Protocol

from benchsuite.specs import Job, RunRecord, UsageError, one_line

EXECUTORS = ("local", "process", "ray")


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


def failure_record(job: Job, reason: str, details: str, seconds: float) -> RunRecord:
    """A failed job's record: a one-line ``reason`` and the ``details`` (traceback or account)."""
    return RunRecord(
        key=job.key, job=asdict(job), status="failed", error=reason, traceback=details,
        seconds=seconds,
    )  # fmt: skip


def execute(job: Job, plugins_dir: str | None) -> RunRecord:
    """Run one job; any exception becomes a failure record with its reason and traceback."""
    from benchsuite.train import run_job

    start = time.perf_counter()
    try:
        fields = run_job(job, _registry(plugins_dir))
    except Exception as error:  # a failing mixer or track must not take the run down
        details = traceback.format_exc()
        return failure_record(job, one_line(error), details, time.perf_counter() - start)
    return RunRecord(
        key=job.key, job=asdict(job), status="ok", seconds=time.perf_counter() - start,
        environment=environment(job), **fields,
    )  # fmt: skip


def execute_batch(jobs: Sequence[Job], plugins_dir: str | None) -> list[RunRecord]:
    """The seeds of one cell trained as one batched model; on any error, :func:`execute` per job."""
    from benchsuite.batched import run_jobs_batched

    start = time.perf_counter()
    try:
        results = run_jobs_batched(list(jobs), _registry(plugins_dir))
    except Exception:  # failing seeds get their own failure records from the one-by-one path
        return [execute(job, plugins_dir) for job in jobs]
    seconds = (time.perf_counter() - start) / len(jobs)
    return [
        RunRecord(
            key=job.key,
            job=asdict(job),
            status="ok",
            seconds=seconds,
            environment={**environment(job), "batched": fields["costs"]["batched_seeds"] > 1},
            **fields,
        )
        for job, fields in zip(jobs, results, strict=True)
    ]


class Executor(Protocol):
    """Runs jobs and yields their records in completion order; ``close`` frees its workers."""

    def map(self, jobs: Sequence[Job]) -> Iterator[RunRecord]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """In-process and sequential: for debugging (a crash or a hang here stops the run)."""

    def __init__(self, plugins_dir: str | None = None) -> None:
        self.plugins_dir = plugins_dir

    def map(self, jobs: Sequence[Job]) -> Iterator[RunRecord]:
        for job in jobs:
            yield execute(job, self.plugins_dir)

    def close(self) -> None:
        """Nothing to free."""

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def check_executor(name: str, jobs: int | None, timeout: float | None, address: str | None) -> None:
    """A one-line usage error for executor settings that cannot work (checked before a run)."""
    if name not in EXECUTORS:
        raise UsageError(f"unknown executor {name!r}; valid: {', '.join(EXECUTORS)}")
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout:g}")
    if address and name != "ray":
        raise UsageError("--address is for --executor ray")
    if name == "local" and timeout is not None:
        raise UsageError("--timeout needs a job process to kill: use --executor process (or ray)")


def make_executor(
    name: str,
    jobs: int | None = None,
    plugins_dir: str | None = None,
    *,
    threads: int = 1,
    timeout: float | None = None,
    address: str | None = None,
) -> Executor:
    """The executor called ``name`` (``local``, ``process`` or ``ray``).

    ``jobs``: parallel jobs (default: one per free core for ``process``, the cluster's CPUs for
    ``ray``); ``threads``: torch threads per job; ``timeout``: hard limit in seconds per job,
    enforced by killing the job's process; ``address``: a Ray cluster's ``HOST:PORT`` (default: a
    local Ray started for the run).
    """
    check_executor(name, jobs, timeout, address)
    if name == "local":
        return LocalExecutor(plugins_dir)
    plugins_dir = os.path.abspath(plugins_dir) if plugins_dir else None
    if name == "process":
        from benchsuite.pool import ProcessExecutor

        workers = jobs or max(1, available_cores() // threads)
        return ProcessExecutor(workers, plugins_dir, threads=threads, timeout=timeout)
    from benchsuite.ray_executor import RayExecutor

    return RayExecutor(address, plugins_dir, jobs=jobs, threads=threads, timeout=timeout)

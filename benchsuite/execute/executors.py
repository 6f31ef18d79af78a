"""Executors: a job in, a result record out, streamed back as jobs finish.

Every executor runs the same :class:`~benchsuite.execute.worker.Worker` callable: workers only
compute and return records; the driver alone writes the store. An executor knows nothing of
tracks or statistics.

``local``    in the driver's process, sequentially (debugging, in-memory plugins); no hard timeout.
``process``  a supervised pool of persistent worker processes (:mod:`benchsuite.execute.pool`).
``ray``      Ray core tasks on a cluster (:mod:`benchsuite.execute.ray_cluster`; extra ``ray``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Protocol

from benchsuite.execute.worker import Cell, Worker
from benchsuite.records import Job, RunRecord


class Executor(Protocol):
    """Runs jobs and yields their records in completion order; ``close`` frees its workers.

    ``pulls_jobs``: ``map`` takes each job from its iterable only when it can start it, so the
    caller may decide that late which job to hand out; otherwise ``map`` needs a sequence.
    ``takes_cells``: ``map`` also takes a :class:`~benchsuite.execute.worker.Cell` (a cell's
    seeds trained as one stack) and yields its list of records. ``slots``: how many tasks it
    runs at once (None: not known in advance), for the ETA.
    """

    pulls_jobs: bool
    takes_cells: bool
    slots: int | None

    def map(self, jobs: Sequence[Job | Cell]) -> Iterator[RunRecord | list[RunRecord]]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """In the driver's process and sequential (a crash or a hang here stops the run)."""

    pulls_jobs = False  # the runner leases all its jobs at once
    takes_cells = True
    slots = 1

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def map(self, jobs: Sequence[Job | Cell]) -> Iterator[RunRecord | list[RunRecord]]:
        for job in jobs:
            yield self.worker(job)

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


def check_available(name: str, address: str | None = None) -> None:
    """A one-line usage error if executor ``name`` cannot start here (Ray not importable, its
    ``address`` not reachable); cheap enough to run before anything is printed or written."""
    if name == "ray":
        from benchsuite.execute.ray_cluster import check_ray

        check_ray(address)


def make_executor(
    name: str,
    worker: Worker,
    *,
    jobs: int | None = None,
    timeout: float | None = None,
    address: str | None = None,
) -> Executor:
    """The executor called ``name`` (``local``, ``process`` or ``ray``) running ``worker``.

    ``jobs``: parallel jobs (default: one per free core for ``process``, the cluster's CPUs for
    ``ray``); ``timeout``: hard limit in seconds per job, enforced by killing the job's process;
    ``address``: a Ray cluster's ``HOST:PORT`` (default: a local Ray started for the run).
    """
    if name == "local":
        return LocalExecutor(worker)
    if worker.plugins_dir:
        worker.plugins_dir = os.path.abspath(worker.plugins_dir)
    if name == "process":
        from benchsuite.execute.pool import ProcessExecutor

        workers = jobs or max(1, available_cores() // worker.threads)
        return ProcessExecutor(worker, workers, timeout=timeout)
    from benchsuite.execute.ray_cluster import RayExecutor

    return RayExecutor(worker, address, jobs=jobs, timeout=timeout)

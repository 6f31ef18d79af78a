"""The ``ray`` executor: every job a Ray core task, on an existing cluster or a local Ray.

``--executor ray --address HOST:PORT`` connects to a running cluster (``ray start --head`` on one
machine, ``ray start --address HOST:PORT`` on the others); without ``--address`` a private local
Ray is started for the run and shut down after it. Needs the optional extra
``pip install "benchsuite[ray]"``, and benchsuite (and any plugin packages) installed on every node.

Failures: an exception in a job is already a failure record (from the worker). A task whose worker
dies (killed by the OS, a segfault) is retried once by Ray itself (``max_retries=1``); a second
death becomes a failure record with Ray's reason. ``timeout`` is hard: the driver force-cancels the
task, which kills its worker process. Since Ray does not say when a queued task starts, the clock
starts at submission and the driver keeps at most one task per free CPU slot in flight, so queued
time stays small; give a generous timeout on a cluster shared with other work.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

from benchsuite.errors import UsageError, one_line
from benchsuite.execute.worker import Worker, failure_record
from benchsuite.records import Job, RunRecord

_SET_UP: dict[tuple[str | None, int], Worker] = {}  # per Ray worker process


def benchsuite_job(worker: Worker, job: Job) -> RunRecord:
    """The Ray task (its workers are titled ``ray::benchsuite_job``); sets up once per process."""
    settings = (worker.plugins_dir, worker.threads)
    if settings not in _SET_UP:
        worker.setup()
        _SET_UP[settings] = worker
    return _SET_UP[settings](job)


def _import_ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--executor ray needs Ray: pip install 'benchsuite[ray]' (or use --executor process)"
        ) from None
    return ray


def check_ray(address: str | None) -> None:
    """A one-line usage error unless Ray imports and ``address`` (``HOST:PORT`` or
    ``ray://HOST:PORT``) accepts a connection; checked before a run prints or writes anything.
    Ray's own keywords (``auto``, ``local``) are left to Ray."""
    _import_ray()
    if not address or address in ("auto", "local"):
        return
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not (host and colon and port.isdigit()):
        raise UsageError(f"--address {address!r}: expected HOST:PORT (e.g. 10.0.0.5:6379)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UsageError(
            f"cannot reach the Ray cluster at {address} ({reason}): is `ray start --head` "
            "running there, and is the port open?"
        ) from None


class RayExecutor:
    """Runs jobs as Ray tasks, ``jobs`` at a time (default: the cluster's CPUs / ``threads``)."""

    pulls_jobs = False  # map needs the whole sequence
    takes_cells = False  # one job per Ray task; batched cells train in the driver
    slots = None  # the cluster's CPUs, known once connected: the ETA measures the pace instead

    def __init__(
        self,
        worker: Worker,
        address: str | None = None,
        *,
        jobs: int | None = None,
        timeout: float | None = None,
        retries: int = 1,
    ) -> None:
        self.worker, self.address, self.jobs = worker, address, jobs
        self.threads, self.timeout, self.retries = worker.threads, timeout, retries
        self._ray: Any = None

    def _connect(self) -> Any:
        """Connect to the cluster (or start a local Ray) once; forward ``BENCHSUITE_*`` settings."""
        if self._ray is not None:
            return self._ray
        ray = _import_ray()
        if ray.is_initialized():  # the caller's own Ray session: use it, leave it open
            return ray
        forwarded = {k: v for k, v in os.environ.items() if k.startswith("BENCHSUITE_")}
        options: dict[str, Any] = {
            "log_to_driver": False,
            "logging_level": logging.WARNING,
            "runtime_env": {"env_vars": forwarded} if forwarded else None,
        }
        if not self.address:
            options.update(num_cpus=self.jobs and self.jobs * self.threads, include_dashboard=False)
        try:
            ray.init(address=self.address or "local", **options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
            raise UsageError(f"cannot start on {where}: {one_line(error)}") from None
        self._ray = ray
        return ray

    def map(self, jobs: Sequence[Job]) -> Iterator[RunRecord]:
        """Yield one record per job, in completion order."""
        if not jobs:
            return
        ray = self._connect()
        task = ray.remote(benchsuite_job).options(
            num_cpus=self.threads, max_retries=self.retries, retry_exceptions=False
        )
        slots = self.jobs or max(1, int(ray.cluster_resources().get("CPU", 1)) // self.threads)
        queue = list(reversed(jobs))
        running: dict[Any, tuple[Job, float]] = {}
        try:
            while queue or running:
                while queue and len(running) < slots:
                    job = queue.pop()
                    running[task.remote(self.worker, job)] = (job, time.monotonic())
                done, _ = ray.wait(list(running), num_returns=1, timeout=self._wake(running))
                for ref in done:
                    job, started = running.pop(ref)
                    yield self._result(ray, ref, job, started)
                yield from self._expire(ray, running)
        finally:
            for ref in running:  # Ctrl-C or an abandoned iteration: stop what nobody will read
                ray.cancel(ref, force=True)

    def _wake(self, running: dict[Any, tuple[Job, float]]) -> float | None:
        if self.timeout is None:
            return None
        first = min(started for _, started in running.values())
        return max(first + self.timeout - time.monotonic(), 0.0)

    def _result(self, ray: Any, ref: Any, job: Job, started: float) -> RunRecord:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as error:  # its worker died twice, or Ray failed it
            seconds = time.monotonic() - started
            details = f"{job.label}: failed in Ray after {seconds:.1f} s (tried {self.retries + 1}"
            return failure_record(job, one_line(error), f"{details} times)\n{error}\n", seconds)

    def _expire(self, ray: Any, running: dict[Any, tuple[Job, float]]) -> Iterator[RunRecord]:
        """Kill the tasks past their deadline (``force`` ends the worker process)."""
        if self.timeout is None:
            return
        now = time.monotonic()
        for ref, (job, started) in list(running.items()):
            if now - started >= self.timeout:
                ray.cancel(ref, force=True)
                del running[ref]
                reason = f"timed out after {self.timeout:g} s"
                details = f"{job.label}: {reason}; its Ray worker was killed (--timeout)\n"
                yield failure_record(job, reason, details, now - started)

    def close(self) -> None:
        """Disconnect from the cluster (a local Ray started for the run stops with it)."""
        if self._ray is not None:
            self._ray.shutdown()
            self._ray = None

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

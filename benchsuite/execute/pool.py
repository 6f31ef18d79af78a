"""The ``process`` executor: a small supervised pool of persistent worker processes.

Why not joblib/loky or ``concurrent.futures``: when one of their workers dies (killed by the OS, or
by us to enforce a timeout) every pending task of the pool fails. Here each worker has its own
pipe, and the driver waits on all pipes and all process sentinels at once; it therefore sees a
finished job, a dead worker and a passed deadline alike, kills what must die, and starts a new
worker in its place while the others keep working.

Jobs are taken from the caller's iterable one at a time, only when a worker is free for one, so the
caller may decide as late as that which job to hand out (the runner leases each job then, and skips
those another run is training).

Protocol, one duplex pipe per worker (``spawn`` context, the same on every OS):
  worker -> driver   ``("ready", pid)``     once, after importing torch and loading the plugins
  driver -> worker   a task (a job)         run it;  ``None``: exit
  worker -> driver   ``("done", record)``   what the worker returned for it (a job's
                                            :class:`RunRecord`; a batched cell's, a list)

The pool runs any worker of the :class:`PoolWorker` shape on any task with a ``key`` and a
``label``: benchsuite's :class:`~benchsuite.execute.worker.Worker` on jobs and batched cells,
and ``scale``'s measuring worker on its points (each point may end its process: ``retire``).

Failures: an exception in the job is already a failure record (from the worker). A worker that
dies while starting up is replaced (:data:`STARTUP_DEATHS` in a row end the run). A worker
that dies while running a job (a signal, ``os._exit``, a segfault) has its job run once more, with
the same seed, on a fresh worker; a second death makes a failure record ("killed by signal 9
(SIGKILL)"). A job past its hard ``timeout`` (counted from when it was handed to its worker) has
its worker killed and becomes a failure record ("timed out after 30 s"); it is not retried, since a
hang is almost always deterministic. Workers ignore SIGINT and SIGTERM (Ctrl-C and a scheduler's
stop are the driver's to handle: :mod:`benchsuite.execute.interrupts`) and exit when the driver
dies, so no worker outlives its run.

Workers start with glibc's allocator told to keep freed memory (:data:`ALLOCATOR`, unless the
environment already sets those variables): by default every tensor above its threshold is
mapped and unmapped anew, and the page faults of a training step's large temporaries (a mamba
scan's states) cost a fifth of its time in the kernel. Results do not change.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import operator
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Protocol


class Task(Protocol):
    """What the pool hands a worker: a job, or anything with a key and a label (a task with a
    ``size``, such as a batched cell of seeds, gets ``size`` times the per-job timeout; one with
    a ``limit``, such as a pre-flight check, that many seconds whatever the pool's timeout)."""

    @property
    def key(self) -> str: ...

    @property
    def label(self) -> str: ...


class PoolWorker(Protocol):
    """What the pool runs: picklable, set up once per process, a record per task; the driver
    asks it for a task's failure record, to mark a record that ran again, and whether a record
    ends its process."""

    def setup(self) -> None: ...

    def __call__(self, task: Any) -> Any: ...

    def failure(
        self, task: Any, reason: str, details: str, seconds: float, timed_out: bool
    ) -> Any: ...

    def retried(self, record: Any, reason: str) -> Any: ...

    def retire(self, record: Any) -> bool: ...


def _exit_with_parent() -> None:
    """End this worker as soon as the driver process is gone (even mid-job)."""
    parent = multiprocessing.parent_process()
    if parent is not None:

        def watch() -> None:
            wait([parent.sentinel])
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()


def serve(conn: Connection, worker: PoolWorker) -> None:
    """A worker process's life: set up once (torch, plugins), then run jobs until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the driver stops the run, then its workers
    _exit_with_parent()
    worker.setup()
    try:
        conn.send(("ready", os.getpid()))
        while (job := conn.recv()) is not None:
            conn.send(("done", worker(job)))
    except (EOFError, OSError):  # the driver closed the pipe: nothing left to do
        pass


def exit_reason(exitcode: int | None) -> str:
    """Why a process ended, from its ``exitcode`` (negative: the signal that killed it)."""
    if exitcode is None or exitcode >= 0:
        return f"worker exited with code {exitcode}"
    try:
        name = f" ({signal.Signals(-exitcode).name})"
    except ValueError:
        name = ""
    return f"killed by signal {-exitcode}{name}"


class _Supply:
    """The jobs still to hand out, with their attempt number: those to run again after their
    worker died first, then fresh ones, taken from the caller's iterable one at a time."""

    def __init__(self, jobs: Iterable[Task]) -> None:
        self.fresh: Iterator[Task] = iter(jobs)
        self.again: deque[tuple[Task, int]] = deque()
        self.exhausted = False

    def take(self) -> tuple[Task, int] | None:
        if self.again:
            return self.again.popleft()
        if not self.exhausted:
            job = next(self.fresh, None)
            if job is not None:
                return job, 1
            self.exhausted = True
        return None

    def waiting(self, unknown: int) -> int:
        """How many jobs may be left: those to run again and the fresh iterable's length hint
        (``unknown`` when it gives none)."""
        fresh = 0 if self.exhausted else operator.length_hint(self.fresh, unknown)
        return len(self.again) + fresh


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    ready: bool = False
    job: Task | None = None
    attempt: int = 0
    started: float = 0.0


# workers in a row that may die before they are ready (killed from outside: the OS, a person)
# before the pool gives up: one that dies on every start (a plugin that crashes its process on
# import) would otherwise be restarted for ever
STARTUP_DEATHS = 3

# glibc reads these once, at process start: a spawned worker sees them, the driver never does.
# Measured: mamba on vision, 60 steps of its 5-config stack, 30.7 s (8.7 s in the kernel) ->
# 25.6 s (2.0 s); docs/performance.md.
ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "4294967296"}


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """:data:`ALLOCATOR` in ``os.environ`` while a worker is spawned (a variable the user set is
    kept as it is)."""
    added = {name: value for name, value in ALLOCATOR.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


class ProcessExecutor:
    """Runs jobs on ``workers`` persistent processes with crash isolation and hard timeouts."""

    pulls_jobs = True  # map takes each job from its iterable only when a worker is free for it
    takes_cells = True  # a task may be a batched cell: its worker returns a record per seed

    def __init__(
        self, worker: PoolWorker, workers: int, *, timeout: float | None = None, retries: int = 1
    ) -> None:
        self.worker, self.size = worker, workers
        self.slots: int | None = workers
        self.timeout, self.retries = timeout, retries
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._earlier: dict[str, str] = {}  # job key -> why its previous attempt died
        self._startup_deaths = 0  # workers in a row that died before they were ready

    def map(self, jobs: Iterable[Task]) -> Iterator[Any]:
        """Yield the worker's record of each task, in completion order. ``jobs``: a sequence, or
        an iterator whose length hint counts the jobs it may still give (it may give fewer)."""
        supply = _Supply(jobs)
        finished = False
        try:
            while True:
                self._grow(supply.waiting(self.size))
                self._dispatch(supply)
                busy = any(w.job is not None for w in self._workers)
                if not busy and not supply.waiting(self.size):
                    break
                yield from self._collect(supply)
            finished = True
        finally:
            if not finished:  # Ctrl-C or an abandoned iteration: running jobs have no taker
                self.close()

    def close(self) -> None:
        """Stop every worker: idle ones are asked to exit, busy ones are killed."""
        for worker in self._workers:
            if worker.job is None:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
            else:
                worker.process.kill()
        for worker in self._workers:
            worker.process.join(timeout=5)
            if worker.process.exitcode is None:
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self._workers = []

    def __enter__(self) -> ProcessExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _grow(self, waiting: int) -> None:
        """Start workers up to the pool size, but no more than there are jobs to run."""
        busy = sum(w.job is not None for w in self._workers)
        while len(self._workers) < min(self.size, busy + waiting):
            parent, child = self._context.Pipe()
            process = self._context.Process(
                target=serve,
                args=(child, self.worker),
                name="benchsuite-worker",
                daemon=True,
            )
            with _worker_environment():
                process.start()
            child.close()
            self._workers.append(_Worker(process, parent))

    def _dispatch(self, supply: _Supply) -> None:
        for worker in self._workers:
            if worker.ready and worker.job is None:
                taken = supply.take()
                if taken is None:
                    return
                worker.job, worker.attempt = taken
                worker.started = time.monotonic()
                with contextlib.suppress(OSError):  # if it just died, its sentinel says so next
                    worker.conn.send(worker.job)

    def _collect(self, supply: _Supply) -> Iterator[Any]:
        """Wait for the next event (a message, a death, a deadline) and handle what happened."""
        deadlines = [self._deadline(w) for w in self._workers if w.job is not None]
        due = [d for d in deadlines if d is not None]
        wake = min(due) - time.monotonic() if due else None
        handles = [w.conn for w in self._workers] + [w.process.sentinel for w in self._workers]
        ready = set(wait(handles, timeout=None if wake is None else max(wake, 0.0)))
        for worker in list(self._workers):
            if worker.conn in ready:
                record = self._receive(worker)
                if record is not None:
                    yield record
                if worker not in self._workers:  # retired after that record
                    continue
            if worker.process.exitcode is not None:
                record = self._bury(worker, exit_reason(worker.process.exitcode), supply)
            elif self._overdue(worker):
                worker.process.kill()
                worker.process.join()
                reason = f"timed out after {self._allowed(worker):g} s"
                record = self._bury(worker, reason, supply, retry=False)
            else:
                continue
            if record is not None:
                yield record

    def _receive(self, worker: _Worker) -> Any:
        try:
            kind, payload = worker.conn.recv()
        except (EOFError, OSError):  # it died; the exit code tells why
            worker.process.join()
            return None
        if kind == "ready":
            worker.ready, self._startup_deaths = True, 0
            return None
        job, worker.job = worker.job, None
        if job is not None and job.key in self._earlier:
            payload = self.worker.retried(payload, self._earlier.pop(job.key))
        if self.worker.retire(payload):  # a fresh process for the next task
            self._remove(worker)
        return payload

    def _remove(self, worker: _Worker) -> None:
        if worker.process.exitcode is None:
            worker.process.kill()
        worker.process.join()
        worker.conn.close()
        self._workers.remove(worker)

    def _allowed(self, worker: _Worker) -> float | None:
        """Seconds the busy ``worker``'s task may take: its own limit, else the timeout for each
        job of its size (None: no limit)."""
        limit = getattr(worker.job, "limit", None)
        if limit is not None or self.timeout is None:
            return limit
        return self.timeout * getattr(worker.job, "size", 1)

    def _deadline(self, worker: _Worker) -> float | None:
        allowed = self._allowed(worker)
        return None if allowed is None else worker.started + allowed

    def _overdue(self, worker: _Worker) -> bool:
        deadline = self._deadline(worker) if worker.job is not None else None
        return deadline is not None and time.monotonic() >= deadline

    def _bury(self, worker: _Worker, reason: str, supply: _Supply, retry: bool = True) -> Any:
        """Remove a dead worker; queue its job again (``retry``), or return its failure record."""
        self._remove(worker)
        job, seconds = worker.job, time.monotonic() - worker.started
        if job is None:
            if not worker.ready:
                self._startup_deaths += 1
                if self._startup_deaths >= STARTUP_DEATHS:
                    raise RuntimeError(
                        f"a benchsuite worker process died while starting up "
                        f"{self._startup_deaths} times in a row (the last: {reason})"
                    )
            return None  # the next round starts another in its place
        if retry and worker.attempt <= self.retries:
            self._earlier[job.key] = reason
            supply.again.appendleft((job, worker.attempt + 1))
            return None
        earlier = self._earlier.pop(job.key, None)
        details = (
            f"{job.label}: {reason} (worker pid {worker.process.pid}, attempt {worker.attempt}, "
            f"{seconds:.1f} s into the job)"
            + (f"\nthe previous attempt: {earlier}" if earlier else "")
            + ("" if retry else "\nthe worker process was killed at the deadline (--timeout)")
        )
        return self.worker.failure(job, reason, details + "\n", seconds, not retry)

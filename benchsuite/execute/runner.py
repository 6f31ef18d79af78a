"""Carrying a plan through: run what the store does not hold yet and store every record as it
arrives (each record holds the config its seed chose on its validation split; the plan holds no
choice).

Every finished job is in the store before the next one is handed out, so an interrupted run
resumes where it stopped. Runs may share an output folder: a job is leased in the store just
before it is handed out (:mod:`benchsuite.store.leases`), jobs another run is training are left
to it, and once its own jobs are done a run waits for theirs, taking over any whose run stopped.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from benchsuite.errors import RunError
from benchsuite.events import Events
from benchsuite.execute.executors import Executor
from benchsuite.execute.worker import Cell, Worker
from benchsuite.plan.cost import CostModel, JobCost, job_units, run_order
from benchsuite.plan.plan import Plan
from benchsuite.protocol.futility import FutilityLook
from benchsuite.records import RUN, Job, RunRecord
from benchsuite.store.leases import POLL_SECONDS, Heartbeat, Owner, waiting_message
from benchsuite.store.store import Claim, Store, renew_leases
from benchsuite.vocabulary import Status


@dataclass
class JobCounts:
    """What became of a run's jobs: trained now (``resumed``: of those, how many went on from a
    save an interrupted run left), reused from the store, failed."""

    trained: int = 0
    reused: int = 0
    failed: int = 0
    resumed: int = 0


@dataclass
class Runner:
    """Runs a plan's jobs through an executor (a batched cell of seeds as one task)."""

    plan: Plan
    store: Store
    executor: Executor
    worker: Worker
    events: Events
    logs: Path
    counts: JobCounts = field(default_factory=JobCounts)
    owner: Owner = field(default_factory=Owner.here)  # this run, as its leases name it
    poll: float = POLL_SECONDS  # how often a waiting run looks at the store again
    # the comparisons the plan's futility look stopped (track -> mixer -> seeds at the look),
    # asked once the look's jobs are stored (None: it stops none)
    stopped: Callable[[], Mapping[str, Mapping[str, int]]] | None = None
    _pending: dict[str, Job] = field(default_factory=dict, init=False, repr=False)
    _leased: set[str] = field(default_factory=set, init=False, repr=False)  # not stored yet
    _since: float = field(default=0.0, init=False, repr=False)
    outlook: CostModel = field(default_factory=lambda: CostModel({}), init=False, repr=False)

    def run(self) -> None:
        """Save the plan, then run every job (each record, with the config its seed chose, is
        stored as it arrives); under a futility look, first every cell's seeds up to the look,
        then the seeds of the comparisons it did not stop."""
        self.store.save_plan(self.plan.to_dict())
        with Heartbeat(partial(renew_leases, self.store.path, self.owner)):
            try:
                if (look := self.plan.futility) is None:
                    self.execute("train", self.plan.keys())
                else:
                    self.execute(f"train seeds 1-{look.seeds}", self.plan.look_keys())
                    later = self._after_look(look)
                    self.execute(f"train seeds {look.seeds + 1}-{look.planned}", later)
            finally:  # leases left by a crash are taken over anyway (the process is gone)
                with contextlib.suppress(RunError):
                    self.store.release(self.owner)

    def _after_look(self, look: FutilityLook) -> list[str]:
        """The jobs after the futility look, less those of the comparisons it stopped (said in
        a note)."""
        stopped = self.stopped() if self.stopped is not None else {}
        seen = set(self.plan.look_keys())
        planned = self.plan.keys()
        later = [key for key in planned if key not in seen]
        needed = [key for key in self.plan.needed_keys(stopped) if key not in seen]
        halted = sum(len(mixers) for mixers in stopped.values())
        self.events.note(
            f"futility look at {look.seeds} of {look.planned} seeds: {halted} of "
            f"{self.plan.family()} comparisons can no longer reach Holm's first step and stop "
            f"there (p = 1); {len(later) - len(needed)} of {len(later)} later jobs not needed"
        )
        return needed

    def execute(self, phase: str, keys: list[str]) -> None:
        """Run the plan's jobs of ``keys`` that have no stored result, leaving to other runs on
        the folder the jobs they are training and waiting for those at the end (a plan read back
        from the store, which holds no Job objects, may be executed when all are stored)."""
        known = self.store.known_keys(keys)
        pending = [self.plan.jobs[key] for key in keys if key not in known]
        costs = {job.key: self._cost(job) for job in pending}
        self.outlook = CostModel(costs, self.executor.slots)
        self.events.start(phase, len(keys), self.outlook)
        for key in keys:
            if key in known:
                self._reused(key)
        order = run_order({job.key: job.seed for job in pending}, costs)
        self._pending = {key: self.plan.jobs[key] for key in order}
        self._since = time.time()
        todo = list(self._pending.values())
        while todo:
            for record in self._records(todo):
                self._keep(record)
            todo = self._takeovers()

    def _cost(self, job: Job) -> JobCost:
        return JobCost(job.track, job.mixer, job_units(job, self.plan.tracks[job.track].tokens))

    def _keep(self, record: RunRecord) -> None:
        """Store a record this run produced (giving back its lease) and count it."""
        if record.status != Status.OK:
            self._save_traceback(record)
            self.counts.failed += 1
        else:
            self.counts.trained += 1
            self.counts.resumed += (record.result.costs.resumed_at_step or 0) > 0
        # which run timed it: a cost ratio of two cells timed by different runs says so
        record.environment = {**record.environment, RUN: self.owner.id}
        self.store.put(record, self.owner)
        self._pending.pop(record.key, None)
        self._leased.discard(record.key)
        self.outlook.finish(record.key, record.seconds if record.status == Status.OK else 0.0)
        self.events.advance(record)

    def _reused(self, key: str) -> None:
        self.outlook.finish(key, 0.0)
        self.counts.reused += 1
        self.events.advance(None)

    def _lease(self, jobs: list[Job]) -> Claim:
        """Lease those of ``jobs`` nobody else is training; a job another run finished meanwhile
        counts as reused, one it failed meanwhile as failed (it is not tried again)."""
        claim = self.store.claim([job.key for job in jobs], self.owner, self._since)
        for key in sorted(claim.done):
            if self._pending.pop(key, None) is not None:
                self._reused(key)
        for key, record in claim.failed.items():
            if self._pending.pop(key, None) is not None:
                self.outlook.finish(key, 0.0)
                self.counts.failed += 1
                self.events.advance(record)
        return claim

    def _claim(self, jobs: list[Job]) -> list[Job]:
        """Those of ``jobs`` leased to this run now (see :meth:`_lease`)."""
        mine = set(self._lease(jobs).mine)
        self._leased |= mine
        return [job for job in jobs if job.key in mine]

    @property
    def in_flight(self) -> int:
        """Jobs leased to this run and not stored: those an interrupt drops."""
        return len(self._leased)

    def _claim_tasks(self, tasks: list[Job | Cell]) -> list[Job | Cell]:
        """Those of ``tasks`` leased to this run now, in one lease; of a cell, its seeds that are
        (a cell with none is left out)."""
        every = [job for task in tasks for job in (task.jobs if isinstance(task, Cell) else [task])]
        mine = {job.key for job in self._claim(every)} if every else set()
        kept: list[Job | Cell] = []
        for task in tasks:
            if isinstance(task, Cell):
                if seeds := tuple(job for job in task.jobs if job.key in mine):
                    kept.append(Cell(seeds))
            elif task.key in mine:
                kept.append(task)
        return kept

    def _start_task(self, task: Job | Cell) -> Job | Cell | None:
        """``task`` if leased to this run now (of a cell, its seeds that are; None: no part); a
        job is marked as started for the outlook (an executor that pulls takes a task only when
        it can start it). A batched cell's seeds are not: they share its seconds, so none of
        them alone has run for as long as the cell."""
        mine = next(iter(self._claim_tasks([task])), None)
        if isinstance(mine, Job):
            self.outlook.start(mine.key)
        return mine

    def _takeovers(self) -> list[Job]:
        """Wait until the jobs other runs are training are stored, failed, or free to take over
        (their run stopped); return those leased to this run now (none: nothing is left)."""
        told = False
        while self._pending:
            pending = list(self._pending.values())
            claim = self._lease(pending)
            if mine := set(claim.mine):
                return [job for job in pending if job.key in mine]
            if claim.held and not told:
                self.events.warning(waiting_message(claim.held))
                told = True
            if self._pending:
                time.sleep(self.poll)
        return []

    def _records(self, jobs: list[Job]) -> Iterator[RunRecord]:
        """Records of ``jobs``, each leased just before it runs. A cell's batched seeds are one
        task (a :class:`Cell`, its free seeds leased together): on the CPU the executor runs it
        beside the other tasks where it takes cells, otherwise this process trains it (on a
        GPU, the process that owns the device)."""
        cells: dict[tuple, list[Job]] = {}
        for job in jobs:
            if job.batched:
                cells.setdefault((job.track, job.mixer), []).append(job)
        handed = [Cell(tuple(cell)) for cell in cells.values() if self._hands_out(cell)]
        for cell in cells.values():
            if not self._hands_out(cell) and (mine := self._claim(cell)):
                yield from self.worker.batch(mine)
        tasks: list[Job | Cell] = [*handed, *(job for job in jobs if not job.batched)]
        if self.executor.pulls_jobs:
            outputs = self.executor.map(_Leasing(tasks, self._start_task))
        else:
            outputs = self.executor.map(self._claim_tasks(tasks))
        for output in outputs:
            yield from output if isinstance(output, list) else [output]

    def _hands_out(self, cell: list[Job]) -> bool:
        """Whether a batched cell goes to the executor (a CPU cell, one that takes cells)."""
        return self.executor.takes_cells and cell[0].device == "cpu"

    def _save_traceback(self, record: RunRecord) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{record.key}.txt"
        path.write_text(record.traceback)
        record.traceback = str(path)


class _Leasing:
    """The tasks an executor takes one at a time, each leased as it is taken; a task another run
    holds is skipped (of a cell, the seeds it holds). Its length hint counts the tasks left."""

    def __init__(
        self, tasks: list[Job | Cell], claim: Callable[[Job | Cell], Job | Cell | None]
    ) -> None:
        self.tasks, self.claim = deque(tasks), claim

    def __iter__(self) -> _Leasing:
        return self

    def __next__(self) -> Job | Cell:
        while self.tasks:
            if (mine := self.claim(self.tasks.popleft())) is not None:
                return mine
        raise StopIteration

    def __length_hint__(self) -> int:
        return len(self.tasks)

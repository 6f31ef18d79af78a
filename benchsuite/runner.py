"""Carrying a plan through: run what the store does not hold yet, store every record as it
arrives, and record in the plan the config each seed chose.

Every finished job is in the store before the next one is handed out, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchsuite.errors import RunError
from benchsuite.execute.events import Events
from benchsuite.execute.executors import Executor
from benchsuite.execute.record import RunRecord
from benchsuite.execute.worker import Worker
from benchsuite.plan.jobs import Job
from benchsuite.plan.plan import Plan
from benchsuite.results.store import Store


@dataclass
class Runner:
    """Runs a plan's jobs through an executor (batched cells through the worker, in-process)."""

    plan: Plan
    store: Store
    executor: Executor
    worker: Worker
    events: Events
    logs: Path
    counts: dict[str, int] = field(default_factory=lambda: {"trained": 0, "reused": 0, "failed": 0})

    def run(self) -> None:
        """Run every job; the plan is saved first and again, with each seed's chosen config,
        once the jobs are done or the run is interrupted."""
        run_id = self.store.save_plan(self.plan.to_dict())
        try:
            self.execute("train", self.plan.all_jobs())
        except BaseException:  # interrupted or failed: keep the choices made so far if possible
            with contextlib.suppress(RunError):
                self._save_choices(run_id)
            raise
        self._save_choices(run_id)

    def _save_choices(self, run_id: int) -> None:
        record_choices(self.plan, self.store.results(self.plan.keys()))
        self.store.update_plan(run_id, self.plan.to_dict())

    def execute(self, phase: str, jobs: list[Job]) -> dict[str, RunRecord]:
        """Run the jobs that have no stored result; return every stored result among ``jobs``."""
        keys = [job.key for job in jobs]
        known = self.store.known_keys(keys)
        self.events.start(phase, len(jobs))
        for key in keys:
            if key in known:
                self.counts["reused"] += 1
                self.events.advance(RunRecord(key=key, job={}, status="ok"), True)
        todo = [job for job in jobs if job.key not in known]
        for record in self._records(todo):
            if record.status != "ok":
                self._save_traceback(record)
                self.counts["failed"] += 1
            else:
                self.counts["trained"] += 1
            self.store.put(record)
            self.events.advance(record, False)
        return self.store.results(keys)

    def _records(self, jobs: list[Job]) -> Iterator[RunRecord]:
        """Records of ``jobs``: batched cells in this process (it owns the GPU), the rest by the
        executor."""
        cells: dict[tuple, list[Job]] = {}
        for job in jobs:
            if job.batched:
                cells.setdefault((job.track, job.mixer), []).append(job)
        for cell in cells.values():
            yield from self.worker.batch(cell)
        yield from self.executor.map([job for job in jobs if not job.batched])

    def _save_traceback(self, record: RunRecord) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{record.key}.txt"
        path.write_text(record.traceback)
        record.traceback = str(path)


def record_choices(plan: Plan, results: dict[str, RunRecord]) -> None:
    """Copy each finished job's chosen config into its cell of the plan (by seed)."""
    for cell in plan.cell_list():
        for key in cell.jobs:
            record = results.get(key)
            if record is not None and record.chosen is not None:
                cell.chosen[str(record.job["seed"])] = record.chosen

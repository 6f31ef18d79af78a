"""Carrying a plan through its phases: run what the store does not hold yet, store every record as
it arrives, choose each cell's config between the sweep and the evaluation.

Every finished job is in the store before the next one is handed out, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchsuite.execute.events import Events
from benchsuite.execute.executors import Executor
from benchsuite.execute.record import RunRecord
from benchsuite.execute.worker import Worker
from benchsuite.plan.jobs import Job
from benchsuite.plan.plan import Cell, Plan
from benchsuite.plan.selection import select_best_config
from benchsuite.results.store import Store
from benchsuite.results.sweeps import sweep_table


@dataclass
class Runner:
    """Runs a plan's jobs through an executor (batched cells through the worker, in-process)."""

    plan: Plan
    store: Store
    executor: Executor
    worker: Worker
    events: Events
    logs: Path
    counts: dict[str, int] = field(default_factory=lambda: {"trained": 0, "reused": 0,
                                                            "failed": 0})  # fmt: skip

    def run(self) -> None:
        """Sweep, choose each cell's config on validation, then evaluate; saves the plan."""
        swept = self.execute("sweep", self.plan.sweep())
        evaluation: list[Job] = []
        for cell in self.plan.cell_list():
            index = choose(self.plan, cell, swept)
            if index is not None:
                evaluation += self.plan.choose(cell, index)
        self.store.save_plan(self.plan.to_dict())
        self.execute("eval", evaluation)

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
                cells.setdefault((job.track, job.mixer, job.config_index), []).append(job)
        for cell in cells.values():
            yield from self.worker.batch(cell)
        yield from self.executor.map([job for job in jobs if not job.batched])

    def _save_traceback(self, record: RunRecord) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        path = self.logs / f"{record.key}.txt"
        path.write_text(record.traceback)
        record.traceback = str(path)


def choose(plan: Plan, cell: Cell, results: dict[str, RunRecord]) -> int | None:
    """The grid index the sweep of ``cell`` selects (None when none of its runs succeeded)."""
    facts = plan.tracks[cell.track]
    rows = sweep_table(facts.grid, facts.metric, facts.higher_is_better, cell.sweep, results)
    swept = [row for row in rows if row["val"]]
    return select_best_config(swept)[0] if swept else None

"""What a run reports while it goes: callbacks a front end (the CLI) implements, and what they
are given. Plain callables and a protocol, in a module every stage may import, so that a front
end listens to a run without reaching into the stages that run it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from benchsuite.records import RunRecord


class Outlook(Protocol):
    """The jobs a phase has left, as a front end sees them for its ETA (the run's cost model,
    :class:`benchsuite.plan.cost.CostModel`, learning their pace from each finished one)."""

    @property
    def ready(self) -> bool:
        """It has seen enough jobs finish to say how long the rest takes."""
        ...

    def seconds_left(self, now: float | None = None) -> float | None:
        """Wall seconds until the phase's jobs are done, at ``now`` (monotonic clock)."""
        ...


@dataclass
class Events:
    """What a run reports while it goes (the CLI prints from these; every one may be omitted)."""

    design: Callable[[dict], None] = lambda design: None
    # a line of the design block after it is printed (the family once the data is probed)
    design_note: Callable[[str], None] = lambda text: None
    warning: Callable[[str], None] = lambda text: None
    note: Callable[[str], None] = lambda text: None
    # the plan is made: jobs to train, jobs planned, a first guess of the wall seconds (or None)
    planned: Callable[[int, int, float | None], None] = lambda train, total, seconds: None
    # a phase of ``total`` jobs starts; ``outlook`` holds those left to train and learns their
    # pace as the runner reports each finished one
    start: Callable[[str, int, Outlook], None] = lambda phase, total, outlook: None
    # a job is done: its record, or None for a job found stored (reused, nothing trained)
    advance: Callable[[RunRecord | None], None] = lambda record: None
    # the first SIGINT or SIGTERM (its name) arrived: said at once, from the signal handler
    stopping: Callable[[str], None] = lambda signal: None
    # training is over (finished or stopped); the report of ``records`` stored jobs is written
    analysing: Callable[[int], None] = lambda records: None

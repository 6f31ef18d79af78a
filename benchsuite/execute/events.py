"""What a run reports while it goes: callbacks a front end (the CLI) implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchsuite.plan.cost import CostModel
from benchsuite.records import RunRecord


@dataclass
class Events:
    """What a run reports while it goes (the CLI prints from these; every one may be omitted)."""

    design: Callable[[dict], None] = lambda design: None
    warning: Callable[[str], None] = lambda text: None
    note: Callable[[str], None] = lambda text: None
    # the plan is made: jobs to train, jobs planned, a first guess of the wall seconds (or None)
    planned: Callable[[int, int, float | None], None] = lambda train, total, seconds: None
    # a phase of ``total`` jobs starts; ``outlook`` holds those left to train and learns their
    # pace as the runner reports each finished one
    start: Callable[[str, int, CostModel], None] = lambda phase, total, outlook: None
    advance: Callable[[RunRecord, bool], None] = lambda record, reused: None
    # the first SIGINT or SIGTERM (its name) arrived: said at once, from the signal handler
    stopping: Callable[[str], None] = lambda signal: None
    # training is over (finished or stopped); the report of ``records`` stored jobs is written
    analysing: Callable[[int], None] = lambda records: None

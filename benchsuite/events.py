"""What a run reports while it goes: callbacks a front end (the CLI) implements, and what they
are given (the design check among them). Plain callables, dataclasses and a protocol, in a
module every stage may import, so that a front end listens to a run without reaching into the
stages that run it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchsuite.records import RunRecord
from benchsuite.vocabulary import Claims, Scale


@dataclass
class PlannedTrack:
    """What the design plans on one track: the planning sd of the paired differences (relative,
    on the track's ``scale``), where it came from, and the MDE in % it gives at the design's
    alpha (None: nothing detectable)."""

    planning_sd_rel: float
    scale: Scale
    source: str
    planned_mde_rel_pct: float | None


@dataclass
class DesignCheck:
    """The design check printed before training (docs/protocol.md, "Two designs")."""

    claims: Claims
    comparisons: int  # the per-track Holm family, counted before the data is probed
    mixers: int  # the compared mixers (the suite's Holm family)
    tracks_planned: int
    seeds: int
    default_seeds: int  # the design's own count
    seeds_given: bool  # the run asked for another count
    suite_seeds: int | None  # what suite verdicts need (None: fewer than 2 tracks or mixers)
    per_track_seeds: int  # what per-track verdicts need, one discordant seed allowed
    alpha: float  # Holm's first step over the per-track family
    detectable: bool
    min_seeds_for_significance: int
    warning: str | None
    futility_seeds: int | None  # the per-track design's futility look (None: none)
    tracks: dict[str, PlannedTrack]
    mixer_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # every one given
    mixer_options_set: dict[str, dict[str, Any]] = field(default_factory=dict)  # not default

    @property
    def planned_mde(self) -> dict[str, float | None]:
        """Per track, the MDE in % the design plans (None: nothing detectable)."""
        return {name: planned.planned_mde_rel_pct for name, planned in self.tracks.items()}


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

    # the design check, before anything trains
    design: Callable[[DesignCheck], None] = lambda design: None
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

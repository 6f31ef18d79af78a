"""What a job will cost before it runs, and what the rest of a run will cost once some jobs have.

A job's *units* are its most training steps times its configs times the work of a step: a fixed
per-step cost (the Python and per-operator overhead that dominates tiny models on a CPU) plus
arithmetic in proportion to the tokens of a batch. :class:`CostModel` turns units into seconds by
the seconds per unit the finished jobs showed: those of the same cell when some have finished,
else a track effect times a mixer effect fitted to the cells seen (an unseen track or mixer
counts as the average one). The runner starts the costliest jobs first (the tail of a run is
then short) and the progress bar's ETA is the model's seconds left (docs/running.md, "What a run
prints"). Pure Python, no torch.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from benchsuite.plan.jobs import Job

# The per-step overhead in token-examples of arithmetic: a step costs about as much fixed work as
# 256 tokens' worth of computing. Fitted to the quick dense jobs (sequence 0.9, dynamics 1.3,
# vision 1.2, tabular 1.9 ms per unit on the 2-core reference machine).
OVERHEAD_TOKENS = 256
FIT_ROUNDS = 25  # alternating least-squares rounds of the track and mixer effects


def job_units(job: Job, tokens: int) -> float:
    """The job's cost in units: steps × configs × (1 + tokens × batch / OVERHEAD_TOKENS)."""
    steps, batch = job.budget.steps, job.budget.batch_size
    return float(steps * len(job.grid) * (1 + tokens * batch / OVERHEAD_TOKENS))


@dataclass(frozen=True)
class JobCost:
    """A job's cell and its units."""

    track: str
    mixer: str
    units: float


def longest_first(jobs: Iterable[Job], costs: dict[str, JobCost]) -> list[Job]:
    """``jobs`` costliest first; among equal costs the first seed of every mixer before any
    second seed, so that every mixer's pace is seen early (the ETA learns it)."""
    return sorted(jobs, key=lambda job: (-costs[job.key].units, job.seed))


@dataclass
class CostModel:
    """The jobs a run has left to train and the seconds per unit its finished jobs showed."""

    left: dict[str, JobCost]  # the jobs not finished yet
    slots: int | None = None  # jobs trained at once (None: unknown, measured from the pace)
    trained_seconds: float = 0.0  # job-seconds of the jobs learnt from
    _rates: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))

    def finish(self, key: str, seconds: float) -> None:
        """A job of the run finished after ``seconds`` (one worker's): it is no longer left,
        and, if it trained, its seconds per unit are learnt."""
        cost = self.left.pop(key, None)
        if cost is not None and seconds > 0 and cost.units > 0:
            self._rates[cost.track, cost.mixer].append(math.log(seconds / cost.units))
            self.trained_seconds += seconds

    @property
    def learnt(self) -> int:
        """How many finished jobs the model has learnt from."""
        return sum(len(rates) for rates in self._rates.values())

    def _effects(self) -> tuple[dict[str, float], dict[str, float]]:
        """log seconds per unit as track + mixer effects, fitted to the cells' means by
        alternating least squares (a mixer seen on one track then predicts it on another);
        mixer effects average 0."""
        cells = {cell: statistics.fmean(rates) for cell, rates in self._rates.items() if rates}
        tracks = {t: 0.0 for t, _ in cells}
        mixers = {m: 0.0 for _, m in cells}
        for _ in range(FIT_ROUNDS):
            for track in tracks:
                tracks[track] = statistics.fmean(
                    rate - mixers[m] for (t, m), rate in cells.items() if t == track
                )
            for mixer in mixers:
                mixers[mixer] = statistics.fmean(
                    rate - tracks[t] for (t, m), rate in cells.items() if m == mixer
                )
        shift = statistics.fmean(mixers.values())
        return {t: a + shift for t, a in tracks.items()}, {m: b - shift for m, b in mixers.items()}

    def job_seconds_left(self) -> float | None:
        """Predicted job-seconds of the jobs left (None until one has finished)."""
        if not self.learnt:
            return None
        tracks, mixers = self._effects()
        usual = statistics.fmean(tracks.values())  # a track not seen yet: the average one
        total = 0.0
        for cost in self.left.values():
            if own := self._rates.get((cost.track, cost.mixer)):
                rate = statistics.fmean(own)
            else:
                rate = tracks.get(cost.track, usual) + mixers.get(cost.mixer, 0.0)
            total += cost.units * math.exp(rate)
        return total

    def seconds_left(self, elapsed: float) -> float | None:
        """Predicted wall seconds left, ``elapsed`` seconds into the phase: the job-seconds left
        divided by the jobs trained at once (``slots``, else the pace so far: job-seconds
        trained per elapsed second); None until a job has finished."""
        left = self.job_seconds_left()
        parallel = self.slots or (self.trained_seconds / elapsed if elapsed > 0 else 0.0)
        return None if left is None or parallel <= 0 else left / parallel

"""What a job will cost before it runs, and what the rest of a run will cost once some jobs have.

A job's *units* are its most training steps times its configs times the work of a step: a fixed
per-step cost (the Python and per-operator overhead that dominates tiny models on a CPU) plus
arithmetic in proportion to the tokens of a batch. :class:`CostModel` turns units into seconds by
the seconds per unit the finished jobs showed: those of the same cell when some have finished,
else a track effect times a mixer effect fitted to the cells seen; a running job counts what its
prediction has left. The runner starts a scout of every track and every mixer first, then the
costliest jobs (the tail of a run is then short), and the progress bar's ETA is the model's
seconds left once it has seen every track and mixer (docs/running.md, "What a run prints").
Pure Python, no torch.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from benchsuite.budget import RateSchedule
from benchsuite.records import Job

# The per-step overhead in token-examples of arithmetic: a step costs about as much fixed work as
# 256 tokens' worth of computing. Fitted to the quick dense jobs (sequence 0.9, dynamics 1.3,
# vision 1.2, tabular 1.9 ms per unit on the 2-core reference machine).
OVERHEAD_TOKENS = 256
# Before any job has finished: the seconds per unit of every job of the 2-seed default run on the
# 2-core reference machine (reference step 2.03 ms), 0.49 ms (by track from 0.25 ms, dynamics, to
# 1.13 ms, selective_copying), scaled by this machine's reference step.
PRIOR_SECONDS_PER_UNIT, PRIOR_REFERENCE_STEP = 0.49e-3, 2.03e-3
# Under the plateau schedule a job's longest config trains about this share of the cap: the
# median of the default run's jobs was 1,500 of 4,000 steps on dynamics, 520 of 880 on vision
# (2026-12-06); under the cosine 69-100% of the most steps.
PLATEAU_SHARE = 0.5
FIT_ROUNDS = 25  # alternating least-squares rounds of the track and mixer effects
ETA_AFTER = 2  # trained jobs before the model predicts (the pace of one job is no pace)


def units(steps: int, batch_size: int, configs: int, tokens: int) -> float:
    """Cost units of training ``configs`` configs for at most ``steps`` steps of ``batch_size``
    examples of ``tokens`` tokens: steps × configs × (1 + tokens × batch / OVERHEAD_TOKENS)."""
    return float(steps * configs * (1 + tokens * batch_size / OVERHEAD_TOKENS))


def first_guess(
    costs: list[float], slots: int | None, reference_step: float | None
) -> float | None:
    """Wall seconds of jobs of ``costs`` units by their sizes alone, before any has run: the
    prior seconds per unit scaled by this machine's ``reference_step`` over ``slots`` jobs at
    once (None without a reference step). Good to a factor of about two: the progress bar's
    estimate, from the jobs that finish, replaces it."""
    if reference_step is None:
        return None
    rate = PRIOR_SECONDS_PER_UNIT * reference_step / PRIOR_REFERENCE_STEP
    return sum(costs) * rate / max(slots or 1, 1)


def job_units(job: Job, tokens: int) -> float:
    """The job's cost in units (:func:`units` of its budget and grid); under the plateau schedule
    its most steps are a cap the configs stop well before (:data:`PLATEAU_SHARE` of it)."""
    budget = job.budget
    steps = budget.steps * (PLATEAU_SHARE if budget.schedule == RateSchedule.PLATEAU else 1)
    return units(round(steps), budget.batch_size, len(job.grid), tokens)


@dataclass(frozen=True)
class JobCost:
    """A job's cell and its units."""

    track: str
    mixer: str
    units: float


def run_order(seeds: dict[str, int], costs: dict[str, JobCost]) -> list[str]:
    """The jobs' keys in the order a run hands them out: first the *scouts*, one per track (its
    costliest job) and one per mixer not yet among them (its cheapest job), costliest first, so
    that the pace of every track and of every mixer is seen within the first minute; then the
    rest costliest first (the tail of the run is short), among equal costs the first seed of
    every mixer before any second seed. ``seeds``: each job's seed, by key."""
    ranked = sorted(seeds, key=lambda key: (-costs[key].units, seeds[key]))
    scouts: dict[str, str] = {}
    for key in ranked:
        scouts.setdefault(costs[key].track, key)
    cheapest: dict[str, str] = {}
    for key in sorted(seeds, key=lambda key: (costs[key].units, seeds[key])):
        cheapest.setdefault(costs[key].mixer, key)
    seen = {costs[key].mixer for key in scouts.values()}
    chosen = {*scouts.values(), *(key for m, key in cheapest.items() if m not in seen)}
    return [key for key in ranked if key in chosen] + [key for key in ranked if key not in chosen]


@dataclass
class CostModel:
    """The jobs a run has left to train, those running and since when, and the seconds per
    unit its finished jobs showed. Times are on the monotonic clock (:func:`time.monotonic`)."""

    left: dict[str, JobCost]  # the jobs not finished yet
    slots: int | None = None  # jobs trained at once (None: unknown, measured from the pace)
    opened: float = field(default_factory=time.monotonic)  # when the phase began
    running: dict[str, float] = field(default_factory=dict)  # jobs started, not finished: when
    trained_seconds: float = 0.0  # job-seconds of the jobs learnt from
    _rates: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))

    def start(self, key: str, at: float | None = None) -> None:
        """A job of the run started (now, or at ``at``)."""
        if key in self.left:
            self.running[key] = time.monotonic() if at is None else at

    def finish(self, key: str, seconds: float) -> None:
        """A job of the run finished after ``seconds`` (one worker's): it is no longer left,
        and, if it trained, its seconds per unit are learnt."""
        cost = self.left.pop(key, None)
        self.running.pop(key, None)
        if cost is not None and seconds > 0 and cost.units > 0:
            self._rates[cost.track, cost.mixer].append(math.log(seconds / cost.units))
            self.trained_seconds += seconds

    @property
    def learnt(self) -> int:
        """How many finished jobs the model has learnt from."""
        return sum(len(rates) for rates in self._rates.values())

    @property
    def ready(self) -> bool:
        """Whether a prediction means something: ETA_AFTER jobs learnt from, and a job of every
        track and of every mixer that has jobs left (the first to finish are the cheap ones:
        the mixers not seen yet are the slow ones, not the average)."""
        tracks = {track for track, _ in self._rates}
        mixers = {mixer for _, mixer in self._rates}
        return self.learnt >= ETA_AFTER and all(
            cost.track in tracks and cost.mixer in mixers for cost in self.left.values()
        )

    def _rate(self, cells: dict[tuple[str, str], list[float]]) -> Callable[[JobCost], float]:
        """log seconds per unit of a job, from the observed ``cells``: the mean of its own cell
        where seen, else track + mixer effects fitted to the cells' means by alternating least
        squares (a mixer seen on one track then predicts it on another; mixer effects average
        0; an unseen track counts as the average one)."""
        means = {cell: statistics.fmean(rates) for cell, rates in cells.items() if rates}
        tracks = {t: 0.0 for t, _ in means}
        mixers = {m: 0.0 for _, m in means}
        for _ in range(FIT_ROUNDS):
            for track in tracks:
                tracks[track] = statistics.fmean(
                    rate - mixers[m] for (t, m), rate in means.items() if t == track
                )
            for mixer in mixers:
                mixers[mixer] = statistics.fmean(
                    rate - tracks[t] for (t, m), rate in means.items() if m == mixer
                )
        shift = statistics.fmean(mixers.values())
        tracks = {t: a + shift for t, a in tracks.items()}
        mixers = {m: b - shift for m, b in mixers.items()}
        usual = statistics.fmean(tracks.values())

        def rate(cost: JobCost) -> float:
            if (cost.track, cost.mixer) in means:
                return means[cost.track, cost.mixer]
            return tracks.get(cost.track, usual) + mixers.get(cost.mixer, 0.0)

        return rate

    def job_seconds_left(self, now: float | None = None) -> float | None:
        """Predicted job-seconds of the jobs left at ``now`` (None until one has finished). A
        running job that has outlived its prediction teaches a lower bound of its cell's pace,
        its seconds so far (the slow jobs are the last to report, so the finished ones alone
        flatter the pace); a running job counts what its prediction has left."""
        if not self.learnt:
            return None
        now = time.monotonic() if now is None else now
        rate = self._rate(self._rates)
        cells = {cell: list(rates) for cell, rates in self._rates.items()}
        for key, started in self.running.items():
            cost = self.left[key]
            if (elapsed := now - started) > cost.units * math.exp(rate(cost)) > 0:
                cells.setdefault((cost.track, cost.mixer), []).append(
                    math.log(elapsed / cost.units)
                )
        rate = self._rate(cells)
        total = 0.0
        for key, cost in self.left.items():
            expected = cost.units * math.exp(rate(cost))
            if key in self.running:
                expected = max(expected - now + self.running[key], 0.0)
            total += expected
        return total

    def seconds_left(self, now: float | None = None) -> float | None:
        """Predicted wall seconds left at ``now`` (default: now): the job-seconds left divided
        by the jobs trained at once (``slots``, else the pace so far: job-seconds trained per
        second since the phase opened); None until a job has finished."""
        now = time.monotonic() if now is None else now
        left = self.job_seconds_left(now)
        elapsed = now - self.opened
        parallel = self.slots or (self.trained_seconds / elapsed if elapsed > 0 else 0.0)
        return None if left is None or parallel <= 0 else left / parallel

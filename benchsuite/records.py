"""A job (:class:`Job`: everything that determines one training run), what training it yields
(:class:`JobResult`, the trainer's answer) and what the store keeps of it (:class:`RunRecord`:
the result with the job, its status and where it ran): typed values, stored as JSON, in a module
every stage may import."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchsuite import serial
from benchsuite.budget import Budget
from benchsuite.measures import Costs, Scores
from benchsuite.specs import OptionValue
from benchsuite.vocabulary import DivergenceReason, Split, Status


@dataclass(frozen=True)
class Job:
    """One tuned training run: every config of ``grid`` trained on one seed, the one with the best
    validation score chosen, scored on test. Everything that determines its result, nothing else.
    """

    track: str
    mixer: str
    seed: int
    grid: tuple[Mapping[str, float], ...]
    preset: str
    budget: Budget  # the preset's, after overrides; its grid is ``grid``, not repeated here
    track_options: Mapping[str, OptionValue]
    mixer_options: Mapping[str, OptionValue]
    data_dir: str | None
    threads: int
    device: str
    salt: str
    measure: bool = False  # measure mechanism probes on the chosen model
    batched: bool = False  # trained with the other seeds of its cell as one vmapped stack
    mlp_hidden: int | None = None  # the channel MLPs' width the equal-size rule chose (None: ratio)
    fingerprint: Mapping[str, str] = field(default_factory=dict)  # versions, code, data

    def to_plain(self) -> dict[str, Any]:
        """The job as plain JSON-able values (as a record stores it: the budget's training
        fields, :meth:`Budget.training`)."""
        return {**dataclasses.asdict(self), "budget": self.budget.training()}

    @property
    def key(self) -> str:
        """Content hash of everything that determines this job's result.

        ``data_dir`` is left out: where the data lies does not matter, what it is does, and that
        is in ``fingerprint["data"]`` (the track's data key: checksums, file hashes, options).
        """
        fields = self.to_plain()
        del fields["data_dir"]
        payload = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:24]

    @property
    def label(self) -> str:
        return f"{self.track}/{self.mixer}/seed{self.seed}"


@dataclass(frozen=True)
class LegacyJob:
    """A job as benchsuite 0.1 stored it (schema 2: one config of a shared sweep, or one
    evaluation seed with the config the sweep chose); read back as it was, for the migration
    and ``export``."""

    track: str
    mixer: str
    seed: int
    stage: str = ""
    config_index: int | None = None
    config: dict[str, float] = field(default_factory=dict)
    measure: bool = False

    def to_plain(self) -> dict[str, Any]:
        """As stored."""
        return dataclasses.asdict(self)


def stored_job(raw: Mapping[str, Any]) -> Job | LegacyJob:
    """A record's job as the store kept it: a :class:`Job` (its budget read back without
    checking it again), or for a record of benchsuite 0.1 a :class:`LegacyJob`."""
    if "grid" not in raw:
        names = {f.name for f in dataclasses.fields(LegacyJob)}
        return LegacyJob(**{k: v for k, v in raw.items() if k in names})
    names = {f.name for f in dataclasses.fields(Job)}
    values = {k: v for k, v in raw.items() if k in names}
    values["grid"] = tuple(raw["grid"])
    values["budget"] = Budget.from_dict(raw["budget"])
    return Job(**values)


@dataclass
class SweepPoint:
    """One config of a job's grid as it trained on the job's seed (over a ladder's rungs: the
    metrics' and the curve's means, the steps summed). The early-stopping fields are None when
    the budget has no stopping rule (and a record of such a job does not store them)."""

    index: int  # in the grid
    config: dict[str, float]
    metrics: Scores  # its training loss and validation scores
    finite: bool = True  # its training loss and scores stayed finite
    # the training loss, the mean over equal windows of the steps done
    curve: list[float] = field(default_factory=list)
    steps: int | None = field(default=None, metadata=serial.OMIT_NONE)  # over the rungs
    # stopped by the rule on every rung
    converged: bool | None = field(default=None, metadata=serial.OMIT_NONE)
    # per rung, the step of its best check
    best_step: list[int | None] | None = field(default=None, metadata=serial.OMIT_NONE)
    # per rung, the step halving stopped it at
    pruned_at: list[int | None] | None = field(default=None, metadata=serial.OMIT_NONE)
    # per rung, the steps the plateau schedule cut at
    cut_at: list[list[int]] | None = field(default=None, metadata=serial.OMIT_NONE)

    def val(self, metric: str) -> float:
        """Its validation score of ``metric`` (NaN when it has none)."""
        return self.metrics.of(Split.VAL, metric)


@dataclass
class JobResult:
    """What training one job gives (the trainer's answer, held whole by its record): every
    config of its grid trained on its seed, the one chosen on the seed's validation split, and
    that one's test scores, probes and costs. A failed job's record holds an empty one."""

    metrics: Scores = field(default_factory=Scores)  # the chosen config's
    chosen: int | None = None  # grid index chosen on the seed's validation split
    sweep: list[SweepPoint] = field(default_factory=list)  # every config of the grid
    diverged: bool = False
    divergence: DivergenceReason = DivergenceReason.NONE  # why it is imputed (NONE: it is not)
    probes: dict[str, float] = field(default_factory=dict)
    costs: Costs = field(default_factory=Costs)
    data_description: str = ""
    data_verified: bool = True
    cap: float | None = None  # the trivial predictor's test score
    # the test score's standard error over the test examples (folds; None: a record from before
    # it was measured)
    test_se: float | None = None
    test_digest: str = ""  # hash of the test split the result was scored on


Environment = dict[str, str | int | float | bool]
"""Where a job ran (torch and python versions, threads, device, host, pid, determinism, …)."""
RUN = "run"
"""The key of a record's environment naming the run that trained (and timed) it (the runner's
lease owner id; absent from records stored before it was kept)."""


@dataclass
class RunRecord:
    """One job as the store keeps it: the job, its status, the trainer's :class:`JobResult`
    whole, and where and how long it ran. Stored as one flat JSON object (the result's fields
    beside the job's; :meth:`to_dict`, :meth:`from_dict`, which reads the older forms too)."""

    key: str
    job: Job | LegacyJob
    status: Status
    result: JobResult = field(default_factory=JobResult, metadata=serial.FLATTEN)
    seconds: float = 0.0
    error: str = ""
    traceback: str = ""
    environment: Environment = field(default_factory=dict)

    @classmethod
    def finished(
        cls, job: Job, result: JobResult, seconds: float, environment: Environment
    ) -> RunRecord:
        """The record of a job that trained: its result, as the trainer gave it."""
        return cls(job.key, job, Status.OK, result, seconds, environment=environment)

    def to_dict(self) -> dict[str, Any]:
        """As the store keeps it (JSON-able)."""
        return serial.to_plain(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunRecord:
        """A record as the store kept it (older forms included: a job of benchsuite 0.1)."""
        return dataclasses.replace(serial.build(cls, raw), job=stored_job(raw["job"]))

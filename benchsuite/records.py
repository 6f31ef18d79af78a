"""What training one job yields (:class:`JobResult`, the trainer's answer) and what the store
keeps of it (:class:`RunRecord`: the result with the job, its status and where it ran): plain
values only, in a module every stage may import."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchsuite.vocabulary import Status


@dataclass
class JobResult:
    """What training one job gives: every config of its grid trained on its seed, the one chosen
    on the seed's validation split, and that one's test score."""

    metrics: dict[str, float]  # the chosen config's: "train_loss", "val.NAME", "test.NAME"
    chosen: int  # grid index chosen on the seed's validation split
    sweep: list[dict[str, Any]]  # every config: its metrics, curve and stopping
    diverged: bool
    divergence: str  # "non_finite" or "no_better_than_trivial" when diverged
    probes: dict[str, float]
    costs: dict[str, float]
    data_description: str
    data_verified: bool
    cap: float | None  # the trivial predictor's test score
    test_se: float | None  # the test score's standard error over the test examples (folds)
    test_digest: str  # hash of the test split the result was scored on


@dataclass
class RunRecord:
    """The result of one job, as stored: plain values only (JSON-serialisable)."""

    key: str
    job: dict[str, Any]
    status: Status
    metrics: dict[str, float] = field(default_factory=dict)  # of the chosen config
    chosen: int | None = None  # grid index chosen on the seed's validation split
    sweep: list[dict[str, Any]] = field(default_factory=list)  # every config: metrics, curve
    diverged: bool = False
    divergence: str = ""  # "non_finite" or "no_better_than_trivial" when diverged
    probes: dict[str, float] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)
    data_description: str = ""
    data_verified: bool = True
    cap: float | None = None
    test_se: float | None = None  # None: a record from before it was measured
    test_digest: str = ""  # hash of the test split the record was scored on
    seconds: float = 0.0
    error: str = ""
    traceback: str = ""
    environment: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def finished(
        cls,
        key: str,
        job: dict[str, Any],
        result: JobResult,
        seconds: float,
        environment: dict[str, Any],
    ) -> RunRecord:
        """The record of a job that trained: its result, as the trainer gave it."""
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
        return cls(
            key=key, job=job, status=Status.OK, seconds=seconds, environment=environment, **fields
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})

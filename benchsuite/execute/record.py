"""What running one job yields: a :class:`RunRecord` of plain values, stored as it is."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunRecord:
    """The result of one job, as stored: plain values only (JSON-serialisable)."""

    key: str
    job: dict[str, Any]
    status: str  # "ok" or "failed"
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
    test_digest: str = ""  # hash of the test split the record was scored on
    seconds: float = 0.0
    error: str = ""
    traceback: str = ""
    environment: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})

"""What a job measures besides its scores, declared once (as :func:`benchsuite.budget.knob`
declares a budget field): each cost a record may hold, its label, its unit and whether it is a
trade-off axis (quality against cost, docs/report.md). The trade-off list, the unit a cost is
written in and the cost captions derive from these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Unit(StrEnum):
    """How a cost is written: a count with a suffix (``1.2M``), a time, or a plain number."""

    COUNT = "count"
    SECONDS = "seconds"
    NUMBER = "number"


@dataclass(frozen=True)
class Cost:
    """One cost: its ``name`` (the record's key), what it is (``label``), its ``unit``, whether
    quality is weighed against it (``tradeoff``) and whether the cost captions explain it."""

    name: str
    label: str
    unit: Unit
    tradeoff: bool = False
    explained: bool = False


COSTS: dict[str, Cost] = {
    cost.name: cost
    for cost in (
        Cost("params", "whole model", Unit.COUNT, tradeoff=True, explained=True),
        Cost("mixer_params", "token mixers only", Unit.COUNT, explained=True),
        Cost("flops_per_example", "forward FLOPs per example", Unit.COUNT, True, True),
        Cost("seconds_per_step", "training step time", Unit.SECONDS, True, True),
        Cost("examples_per_second", "training throughput", Unit.NUMBER),
        Cost("activation_bytes", "activation memory of a training step", Unit.COUNT),
        Cost("peak_memory_bytes", "peak device memory (CUDA)", Unit.COUNT),
        Cost("members", "configs trained as one stack", Unit.COUNT),
        Cost("batched_seeds", "seeds trained as one stack", Unit.COUNT),
        Cost("steps", "steps trained under the stopping rules", Unit.NUMBER),
        Cost("resumed_at_step", "the step its training went on from a save", Unit.NUMBER),
    )
}
TRADEOFFS = tuple(name for name, cost in COSTS.items() if cost.tradeoff)


def unit_of(name: str) -> Unit:
    """The unit cost ``name`` is written in (a plain number for one not declared)."""
    cost = COSTS.get(name)
    return cost.unit if cost is not None else Unit.NUMBER


def explained() -> str:
    """``params = whole model, …``: the costs the captions explain, in declaration order."""
    return ", ".join(f"{c.name} = {c.label}" for c in COSTS.values() if c.explained)

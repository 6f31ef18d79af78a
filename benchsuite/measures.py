"""What a job measures, declared once (as :func:`benchsuite.budget.knob` declares a budget
field): its scores (:class:`Scores`: the training loss and, per split, each of the track's
metrics, with each rung's own on a ladder) and its costs (:class:`Costs`, each field declared by
:func:`cost` with its label, unit, whether quality is weighed against it, its column in
``benchsuite list --costs`` and its figure in ``benchsuite scale``).

Everything that shows a cost (the terminal, report.json, the page, ``list --costs``, ``scale``,
``export``) reads these declarations, and no other module spells a cost's or a score's name:
adding a cost is one field here and the code that measures it (tests/test_measures.py checks
both).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from benchsuite import serial
from benchsuite.vocabulary import Split


class Unit(StrEnum):
    """How a cost is written: a count with a suffix (``1.2M``), bytes (``4.6MB``), FLOPs
    (``3.2G``), a time (``1.2 ms``), or a plain number."""

    COUNT = "count"
    BYTES = "bytes"
    FLOPS = "FLOPs"
    SECONDS = "seconds"
    NUMBER = "number"


@dataclass(frozen=True)
class Cost:
    """What one cost is, outside the code that measures it: its ``label``, its ``unit``, whether
    quality is weighed against it (``tradeoff``), its column heading in ``benchsuite list
    --costs`` (``column``; empty: not a column) and the stem of its ``benchsuite scale`` figure
    (``figure``; empty: none)."""

    label: str
    unit: Unit
    tradeoff: bool = False
    column: str = ""
    figure: str = ""


def cost(label: str, unit: Unit, **declared: Any) -> Any:
    """A :class:`Costs` field with its :class:`Cost` (``declared``: the other fields); None
    until measured, and not written while None."""
    return field(default=None, metadata={"cost": Cost(label, unit, **declared), **serial.OMIT_NONE})


@dataclass
class Costs:
    """What a job's chosen model cost (or a cell's median of it): each field a declared cost,
    None where it was not measured. Stored (:mod:`benchsuite.serial`) as a JSON object of the
    measured ones."""

    params: float | None = cost(
        "parameters (whole model)", Unit.COUNT, tradeoff=True, column="params"
    )
    mixer_params: float | None = cost(
        "parameters of the token mixers", Unit.COUNT, column="mixer params"
    )
    flops_per_example: float | None = cost(
        "forward FLOPs per example",
        Unit.FLOPS,
        tradeoff=True,
        column="FLOPs/ex",
        figure="flops",
    )
    seconds_per_step: float | None = cost(
        "seconds per training step",
        Unit.SECONDS,
        tradeoff=True,
        column="step",
        figure="time",
    )
    examples_per_second: float | None = cost(
        "training throughput (examples per second)", Unit.NUMBER
    )
    activation_bytes: float | None = cost(
        "activation memory of a training step", Unit.BYTES, column="activations", figure="memory"
    )
    peak_memory_bytes: float | None = cost(
        "peak device memory (CUDA)", Unit.BYTES, column="peak memory", figure="memory"
    )
    members: float | None = cost("configs trained as one stack", Unit.NUMBER)
    batched_seeds: float | None = cost("seeds trained as one stack", Unit.NUMBER)
    steps: float | None = cost("steps trained under the stopping rules", Unit.NUMBER)
    resumed_at_step: float | None = cost("the step its training went on from a save", Unit.NUMBER)

    def items(self) -> Iterator[tuple[str, float]]:
        """The measured costs, ``(name, value)``, in declaration order."""
        for name in COSTS:
            if (value := getattr(self, name)) is not None:
                yield name, value

    def get(self, name: str) -> float | None:
        """Cost ``name`` (a key of :data:`COSTS`), None when not measured."""
        return getattr(self, name)

    @classmethod
    def median(cls, measured: Iterable[Costs]) -> Costs:
        """Each cost's median over ``measured``, of those that measured it."""
        import numpy as np  # not at import: light commands read the declarations

        measured = list(measured)
        values = {
            name: [v for c in measured if (v := getattr(c, name)) is not None] for name in COSTS
        }
        return cls(**{k: float(np.median(v)) for k, v in values.items() if v})


COSTS: dict[str, Cost] = {f.name: f.metadata["cost"] for f in dataclasses.fields(Costs)}
TRADEOFFS = tuple(name for name, c in COSTS.items() if c.tradeoff)
FIGURED = tuple(name for name, c in COSTS.items() if c.figure)  # ``benchsuite scale`` draws


def memory_on(cuda: bool) -> str:
    """The cost that says what memory a training step takes on the device: the peak allocated
    on CUDA, the activations autograd saves elsewhere."""
    return "peak_memory_bytes" if cuda else "activation_bytes"


def unit_of(name: str) -> Unit:
    """The unit cost ``name`` is written in (a plain number for one not declared)."""
    declared = COSTS.get(name)
    return declared.unit if declared is not None else Unit.NUMBER


def explained(names: Iterable[str]) -> str:
    """``params = parameters (whole model), …``: what each of the costs ``names`` is."""
    return ", ".join(f"{name} = {COSTS[name].label}" for name in names)


RUNG = "@rung"  # a rung's own score: "val.mse@rung1"


@dataclass
class Scores:
    """What a model scored: its training loss and, per split, each of the track's metrics (on a
    ladder the mean over its rungs, and in ``rungs`` each rung's own). Stored as one flat JSON
    object: ``train_loss``, ``val.NAME``, ``test.NAME``, ``val.NAME@rung0``, …"""

    train_loss: float | None = None
    val: dict[str, float] = field(default_factory=dict)
    test: dict[str, float] = field(default_factory=dict)
    rungs: list[Scores] = field(default_factory=list)

    def of(self, split: Split, metric: str) -> float:
        """Its score of ``metric`` on ``split`` (NaN when it has none)."""
        return self.on(split).get(metric, math.nan)

    def on(self, split: Split) -> dict[str, float]:
        """Its scores on ``split``, by metric."""
        return self.val if split == Split.VAL else self.test

    def with_test(self, tested: Scores) -> Scores:
        """These scores with ``tested``'s test scores (each rung's too)."""
        rungs = [
            Scores(r.train_loss, r.val, t.test)
            for r, t in zip(self.rungs, tested.rungs, strict=True)
        ]
        return Scores(self.train_loss, self.val, tested.test, rungs)

    def to_plain(self) -> dict[str, float]:
        """The stored form: one flat object."""
        flat: dict[str, float] = {}
        if self.train_loss is not None:
            flat["train_loss"] = self.train_loss
        for split in Split:
            flat.update({key(split, name): v for name, v in self.on(split).items()})
            for index, rung in enumerate(self.rungs):
                flat.update({f"{key(split, n)}{RUNG}{index}": v for n, v in rung.on(split).items()})
        return flat

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Scores:
        """Scores as stored (every stored form has been this flat one)."""
        scores = cls(train_loss=raw.get("train_loss"))
        for name, value in raw.items():
            score, _, rung = name.partition(RUNG)
            split, dot, metric = score.partition(".")
            if not dot or split not in tuple(Split):
                continue
            if rung:
                while len(scores.rungs) <= int(rung):
                    scores.rungs.append(cls())
                scores.rungs[int(rung)].on(Split(split))[metric] = float(value)
            else:
                scores.on(Split(split))[metric] = float(value)
        return scores

    @classmethod
    def over_rungs(cls, per_rung: list[Scores], train_loss: float | None = None) -> Scores:
        """The rungs' scores in one: each metric's mean over them, and with several rungs each
        one's own."""
        import numpy as np  # not at import: light commands read the declarations

        merged = cls(train_loss=train_loss)
        for split in Split:
            names = per_rung[0].on(split)
            merged.on(split).update(
                {n: float(np.mean([r.on(split)[n] for r in per_rung])) for n in names}
            )
        if len(per_rung) > 1:
            merged.rungs = [cls(val=dict(r.val), test=dict(r.test)) for r in per_rung]
        return merged


def key(split: Split, metric: str) -> str:
    """How a table or a stored score names a split's score of ``metric``: ``val.accuracy``."""
    return f"{split}.{metric}"

"""A track's training budget under one preset: steps, batch, model size, sweep grid, and the
early-stopping rule every mixer trains under (docs/protocol.md, "Training length").

Part of the plugin contracts (re-exported by :mod:`benchsuite.specs` and ``benchsuite``); nothing
here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from benchsuite.errors import did_you_mean


def lr_grid(*lrs: float, weight_decay: float = 0.0) -> tuple[dict[str, float], ...]:
    """A sweep grid over learning rates at one weight decay (the usual shape of a track's grid)."""
    return tuple({"lr": lr, "weight_decay": weight_decay} for lr in lrs)


class ScoredAt(StrEnum):
    """The state a config is scored in: after its last step, or at its best validation check."""

    LAST = "last"
    BEST = "best"


class RateSchedule(StrEnum):
    """The learning rate after the warm-up (docs/protocol.md, "The learning-rate schedule")."""

    COSINE = "cosine"
    PLATEAU = "plateau"


# How a knob's value is written and read (its type, in the --budget help).
WHOLE, NUMBER, CHOICE, STEPS = "whole number", "number", "choice", "steps"
# When the budget signature covers a knob (docs/protocol.md, the protocol's third rule).
ALWAYS, WHEN_SET, WITH_SCHEDULE = "always", "when set", "with a schedule other than cosine"


@dataclass(frozen=True)
class Knob:
    """What one budget field is outside the training loop, declared once: how ``--budget
    KEY=VALUE`` and ``[budget]`` read it (``given``: they may set it), the values it takes,
    whether a track variant or ``--axis`` may set it (``variant``), when the budget signature
    covers it (``signed``), and under which ``topic`` the ``--budget`` help lists it."""

    kind: str
    topic: str = ""
    least: float | None = None  # the smallest value allowed
    below: float | None = None  # a bound the value must stay under
    choices: type[StrEnum] | None = None
    given: bool = True
    variant: bool = False
    signed: str = ""

    def words(self) -> str:
        """The values it takes, in words: "a whole number ≥ 1", "last or best"."""
        if self.choices is not None:
            return " or ".join(self.choices)
        if self.kind == STEPS:
            return "increasing steps such as 120,240, or none"
        if self.below is not None:
            return f"a {self.kind} between {self.least:g} and {self.below:g}"
        return f"a {self.kind} ≥ {self.least:g}"

    def read(self, name: str, value: Any) -> Any:
        """``value`` (text from a flag, or a config file's value) as the field's type; a value
        of the wrong type or out of range is a ValueError naming ``budget NAME``."""
        if self.kind == STEPS:
            return _steps(name, value)
        if self.choices is not None:
            try:
                return self.choices(value)
            except ValueError:
                raise ValueError(f"budget {name}: expected {self.words()}, got {value!r}") from None
        parse = int if self.kind == WHOLE else float
        try:
            parsed = parse(value)
        except (TypeError, ValueError):
            raise ValueError(f"budget {name}: expected a {self.kind}, got {value!r}") from None
        if self.below is not None and not self.least < parsed < self.below:
            raise ValueError(f"budget {name}: expected {self.words()}, got {value!r}")
        if self.least is not None and not parsed >= self.least:
            raise ValueError(f"budget {name}: must be at least {self.least:g}, got {value!r}")
        return parsed


def _steps(name: str, value: Any) -> tuple[int, ...]:
    """Steps from the command line (``120,240``, ``none``), a config file's list or a preset."""
    if isinstance(value, str) and value.strip().lower() in ("", "none", "0"):
        return ()
    given = value.split(",") if isinstance(value, str) else value
    try:
        steps = tuple(int(step) for step in given)
    except (TypeError, ValueError):
        raise ValueError(
            f"budget {name}: expected steps such as 120,240 or none, got {value!r}"
        ) from None
    if any(step < 1 for step in steps) or list(steps) != sorted(set(steps)):
        raise ValueError(f"budget {name}: expected increasing steps ≥ 1, got {value!r}")
    return steps


def knob(default: Any = dataclasses.MISSING, **declared: Any) -> Any:
    """A :class:`Budget` field with its :class:`Knob` (``declared``: the knob's fields)."""
    return field(default=default, metadata={"knob": Knob(**declared)})


SIZE, STOPPING = "the size", "early stopping (docs/protocol.md, Training length)"
PRUNING = "pruning the grid (docs/protocol.md, Pruning the grid)"
SCHEDULING = "the learning-rate schedule (docs/protocol.md, The learning-rate schedule)"
FIXED = {"kind": "", "given": False}  # set by a track's preset only


@dataclass(frozen=True)
class Budget:
    """The training budget and shared sweep grid of a track under one preset.

    ``grid`` is the list of shared hyperparameter configurations every mixer is swept over
    (keys understood by :mod:`benchsuite.train`: ``lr``, ``weight_decay``). Each other field
    declares its :class:`Knob`: what ``--budget``, the config file, track variants, the budget
    signature and the help derive from it (adding a key touches this class and the code that
    uses it, nothing else).
    """

    steps: int = knob(kind=WHOLE, least=1, topic=SIZE, variant=True, signed=ALWAYS)
    batch_size: int = knob(kind=WHOLE, least=1, topic=SIZE, variant=True, signed=ALWAYS)
    dim: int = knob(kind=WHOLE, least=1, topic=SIZE, variant=True, signed=ALWAYS)
    depth: int = knob(kind=WHOLE, least=1, topic=SIZE, variant=True, signed=ALWAYS)
    grid: tuple[Mapping[str, float], ...] = knob(**FIXED)
    mlp_ratio: int = knob(2, **FIXED)
    eval_batch_size: int = knob(1024, **FIXED)
    # the state scored: after training, or at the best check
    checkpoint: ScoredAt = knob(
        ScoredAt.LAST, kind=CHOICE, choices=ScoredAt, topic=STOPPING, signed=ALWAYS
    )
    # the weights checked and scored: the raw iterate (0), or the running average of the
    # iterates over about this many steps (docs/protocol.md, "The weights scored"): the mean of
    # every iterate up to this step, an exponential moving average with weight 1/N after it
    average_steps: int = knob(0, kind=WHOLE, least=0, topic=STOPPING, signed=WHEN_SET)
    warmup_fraction: float = knob(0.05, **FIXED)
    # the warm-up's length in steps (0: warmup_fraction of ``steps``)
    warmup_steps: int = knob(0, kind=WHOLE, least=0, topic=SCHEDULING, signed=WITH_SCHEDULE)
    clip: float = knob(0.0, **FIXED)  # gradient norm clipping (0: none), per model
    # early stopping, the same for every mixer (docs/protocol.md, "Training length"): every
    # ``eval_every`` steps (0: never) each config's validation score is read; a config whose score
    # has not improved by more than ``min_delta`` (relative) for ``patience`` checks in a row
    # (0: never) stops, but never before ``min_steps`` and never while its best score is still at
    # the trivial predictor's level (a config that has learnt nothing has not converged);
    # ``steps`` is the most any config trains
    eval_every: int = knob(0, kind=WHOLE, least=0, topic=STOPPING, signed=WHEN_SET)
    patience: int = knob(0, kind=WHOLE, least=0, topic=STOPPING, signed=WHEN_SET)
    min_delta: float = knob(0.0, kind=NUMBER, least=0, topic=STOPPING, signed=WHEN_SET)
    min_steps: int = knob(0, kind=WHOLE, least=0, topic=STOPPING, signed=WHEN_SET)
    # successive halving inside each seed (docs/protocol.md, "Pruning the grid"): at the first
    # check at or after each of these steps, the configs still training are ranked by their best
    # validation score so far and only the better half (rounded up) trains on; () never prunes
    halve_at: tuple[int, ...] = knob((), kind=STEPS, topic=PRUNING, signed=WHEN_SET)
    # the learning rate after the warm-up (docs/protocol.md, "The learning-rate schedule"):
    # cosine decays it to zero at ``steps``; plateau holds it until the stopping rule's
    # patience runs out, then multiplies it by ``cut_factor`` and restarts the patience, ``cuts``
    # times, and the next plateau stops the config (``steps`` is only a cap)
    schedule: RateSchedule = knob(
        RateSchedule.COSINE,
        kind=CHOICE,
        choices=RateSchedule,
        topic=SCHEDULING,
        signed=WITH_SCHEDULE,
    )
    cuts: int = knob(1, kind=WHOLE, least=0, topic=SCHEDULING, signed=WITH_SCHEDULE)
    cut_factor: float = knob(
        0.1, kind=NUMBER, least=0, below=1, topic=SCHEDULING, signed=WITH_SCHEDULE
    )

    def __post_init__(self) -> None:
        """Each knob's value checked by its knob (and read as its type: a checkpoint or
        schedule given as text, steps given as a list), then the rules that tie knobs."""
        for name, declared in knobs().items():
            if declared.given:
                object.__setattr__(self, name, declared.read(name, getattr(self, name)))
        if self.schedule == RateSchedule.PLATEAU and not (self.eval_every and self.patience):
            raise ValueError(
                "budget schedule 'plateau' needs eval_every and patience ≥ 1 (its rate is cut "
                "when the validation score stops improving)"
            )
        best = self.checkpoint == ScoredAt.BEST
        if (self.patience or self.halve_at or best) and not self.eval_every:
            raise ValueError(
                "budget patience, halve_at and checkpoint='best' need eval_every ≥ 1 "
                "(steps between validation checks)"
            )
        if self.halve_at and self.halve_at[0] < self.min_steps:
            raise ValueError(
                f"budget halve_at {list(self.halve_at)}: the first halving comes before "
                f"min_steps {self.min_steps} (pruning slow starters early favours fast learners)"
            )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Budget:
        """A budget as a plan or a report stored it, read back without checking it again (it
        was checked when it was made): its knobs as their types, a key that a plan of an older
        version did not keep at its default (the grid: empty, a plan keeps it apart)."""
        budget = object.__new__(cls)
        for spec in dataclasses.fields(cls):
            declared: Knob = spec.metadata["knob"]
            default = () if spec.default is dataclasses.MISSING else spec.default
            value = raw.get(spec.name, default)
            if declared.choices is not None:
                value = declared.choices(value)
            elif isinstance(value, list):
                value = tuple(value)
            object.__setattr__(budget, spec.name, value)
        return budget

    @property
    def warmup(self) -> int:
        """The warm-up's length in steps (at least 1)."""
        return max(1, self.warmup_steps or int(self.warmup_fraction * self.steps))

    def training(self) -> dict[str, Any]:
        """The fields that shape one training run (everything but the grid)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "grid"}

    def signed(self) -> dict[str, Any]:
        """The knobs a budget signature covers, with their values: those signed always, those
        signed when set that are, and the schedule's when it is not the cosine."""
        scheduled = self.schedule != RateSchedule.COSINE
        return {
            name: getattr(self, name)
            for name, declared in knobs().items()
            if declared.signed == ALWAYS
            or (declared.signed == WHEN_SET and getattr(self, name))
            or (declared.signed == WITH_SCHEDULE and scheduled)
        }


def knobs() -> dict[str, Knob]:
    """Every field of :class:`Budget` with its knob, in declaration order."""
    return {f.name: f.metadata["knob"] for f in dataclasses.fields(Budget)}


def given_keys() -> tuple[str, ...]:
    """The keys ``--budget`` and ``[budget]`` may set."""
    return tuple(name for name, declared in knobs().items() if declared.given)


def variant_keys() -> tuple[str, ...]:
    """The budget keys a track variant (``TRACK[KEY=VALUE]``) and ``--axis`` may set."""
    return tuple(name for name, declared in knobs().items() if declared.variant)


def read_overrides(given: Mapping[str, Any]) -> dict[str, Any]:
    """``--budget`` / ``[budget]`` values read by their knobs (an unknown key, a value of the
    wrong type or out of range: a ValueError naming it)."""
    valid = given_keys()
    unknown = [key for key in given if key not in valid]
    if unknown:
        hint = did_you_mean(unknown[0], valid)
        raise ValueError(f"unknown budget key {unknown[0]!r}{hint}; valid: {', '.join(valid)}")
    declared = knobs()
    return {key: declared[key].read(key, value) for key, value in given.items()}


def overrides_help() -> str:
    """The ``--budget`` help: every key it may set, with its values, by topic."""
    topics: dict[str, list[str]] = {}
    for name, declared in knobs().items():
        if declared.given:
            topics.setdefault(declared.topic, []).append(f"{name} ({declared.words()})")
    said = [f"{topic}: {', '.join(keys)}" for topic, keys in topics.items()]
    return "override the preset's budget on every track; " + "; ".join(said)

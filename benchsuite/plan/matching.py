"""The equal-size rule (docs/protocol.md, "Equal size"): per track, every mixer's model is brought
within ±10% of the baseline model's parameter count (the Long Range Arena rule), the same way for
every mixer.

A mixer already within the band keeps its configuration. Otherwise the suite searches, by
bisection over whole numbers (parameter counts grow with the value), first the mixer's declared
``size_option`` (unless the run gave that option), then, at the option's closest value, the
hidden width of the block's channel MLP (from half to four times its declared width), and takes
the value whose count is closest to the baseline's. When no value reaches the band the cell trains
as declared and records by how much the closest size missed; its comparison is flagged.

Counting is the caller's (a ``Count``: parameters of the model for a size, built on the ``meta``
device by :mod:`benchsuite.train.size`); nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchsuite.errors import PluginError, one_line
from benchsuite.protocol.stats import PARAM_TOLERANCE
from benchsuite.serial import OMIT_NONE
from benchsuite.specs import Mixer
from benchsuite.vocabulary import Match

MLP_WIDEST = 4  # the widest channel MLP searched, in multiples of its declared width
MLP_NARROWEST = 0.5  # the narrowest channel MLP searched, as a fraction of its declared width
OPTION_WIDEST = 8  # the largest size option searched, in multiples of its default
OPTION_LARGEST = 2**16  # where the search of an option whose default is 0 gives up

Count = Callable[[Mapping[str, int]], int]
"""Parameters of a cell's model under a size: ``{"mlp_hidden": 96}``, ``{"expansion": 3}``."""


@dataclass
class Sizing:
    """How the equal-size rule sized one cell's model (``Cell.size``): ``set`` (what its jobs
    change: a mixer option and/or ``mlp_hidden``), ``by`` (``"baseline"``, ``"as declared"``,
    ``"option NAME"``, ``"option NAME, mlp_hidden"``, ``"mlp_hidden"``, ``"unmatched"``),
    ``params`` (of the model trained; None: not counted), ``baseline_params`` (the count the
    track matches to), their ``ratio``, whether it is ``within`` the band, and ``reason`` when
    the band is out of reach or the model could not be counted."""

    baseline_params: int | None
    by: str
    set: dict[str, int]
    params: int | None
    ratio: float | None
    within: bool
    reason: str | None = field(default=None, metadata=OMIT_NONE)
    rule: Match = Match.PARAMS


def within_band(ratio: float) -> bool:
    """Whether a parameter ratio to the baseline is inside ±``PARAM_TOLERANCE`` (the band's edge is
    inside: rounded to 12 digits, so 110 against 100 parameters passes)."""
    return round(abs(ratio - 1.0), 12) <= PARAM_TOLERANCE


def within(params: int, target: int) -> bool:
    """Whether ``params`` is inside the band around ``target``."""
    return within_band(params / target)


def closest(count: Callable[[int], int], target: int, low: int, high: int) -> tuple[int, int]:
    """The whole number in ``[low, high]`` whose count is closest to ``target``, and its count,
    by bisection (``count`` must not decrease as the value grows)."""
    seen: dict[int, int] = {}

    def at(value: int) -> int:
        if value not in seen:
            seen[value] = count(value)
        return seen[value]

    lo, hi = low, high
    while lo < hi:  # the least value whose count reaches the target (or ``high``)
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if at(mid) < target else (lo, mid)
    best = min((v for v in (lo - 1, lo) if v >= low), key=lambda v: abs(at(v) - target))
    return best, at(best)


def option_range(count: Callable[[int], int], default: int, declared: int) -> int:
    """The largest value the size option is searched to: ``OPTION_WIDEST`` times its default, or,
    for a default of 0 (a size the mixer derives from the shape, e.g. ``mlp``'s ``hidden``), the
    least power of two whose count reaches the declared model's (``count`` must not decrease)."""
    if default:
        return OPTION_WIDEST * default
    value = 1
    while value < OPTION_LARGEST and count(value) < declared:
        value *= 2
    return value


def size_option(mixer: Mixer, name: str, options: Mapping[str, Any]) -> str:
    """The option the rule may search: the declared ``size_option``, unless the run gave it (in
    the variant's name or as a value other than its default); ``""`` when there is none."""
    if not mixer.size_option:
        return ""
    declared = {opt.name: opt for opt in mixer.options}
    option = declared.get(mixer.size_option)
    if option is None or option.type is not int:
        whole = ", ".join(o.name for o in mixer.options if o.type is int) or "none"
        raise PluginError(
            f"mixer {mixer.name!r}: size_option {mixer.size_option!r} is not one of "
            f"its whole-number options ({whole})"
        )
    given = f"{option.name}=" in name.partition("[")[2]
    return "" if given or options.get(option.name) != option.default else option.name


def match(
    mixer: Mixer, name: str, options: Mapping[str, Any], target: int, width: int, count: Count
) -> Sizing:
    """The size of one cell under the rule: ``set`` (what the jobs change: a mixer option and/or
    ``mlp_hidden``), ``by`` (``"as declared"``, ``"option NAME"``, ``"option NAME, mlp_hidden"``,
    ``"mlp_hidden"``, ``"unmatched"``), ``params`` (of the model trained), ``baseline_params``,
    ``ratio``, ``within`` and, when the band is out of reach, ``reason``: the closest count
    reached, the cell then trains as declared. ``width``: the channel MLPs' declared width."""
    option = size_option(mixer, name, options)
    try:
        declared = count({})
        if within(declared, target):
            return _record(target, "as declared", {}, declared)
        chosen: dict[str, int] = {}
        if option:

            def sized(value: int) -> int:
                return count({option: value})

            highest = option_range(sized, options[option], declared)
            value, found = closest(sized, target, 1, highest)
            chosen = {option: value}
            if within(found, target):
                return _record(target, f"option {option}", chosen, found)
        known = None if chosen else (width, declared)
        narrowest = max(1, math.ceil(MLP_NARROWEST * width))
        hidden, found = _mlp_width(
            lambda h: count({**chosen, "mlp_hidden": h}),
            target,
            narrowest,
            MLP_WIDEST * width,
            known,
        )
    except Exception as error:  # a model that cannot be built is the job's error to report
        return uncounted(target, error)
    chosen["mlp_hidden"] = hidden
    by = ", ".join([*(f"option {o}" for o in chosen if o != "mlp_hidden"), "mlp_hidden"])
    if within(found, target):
        return _record(target, by, chosen, found)
    shown = ", ".join(f"{k}={v}" for k, v in chosen.items())
    return dataclasses.replace(
        _record(target, "unmatched", {}, declared),
        reason=f"no size within ±{PARAM_TOLERANCE:.0%} of the baseline's parameters (closest "
        f"{found / target:.2f}x at {shown}): trained as declared, "
        f"{declared / target:.2f}x",
    )


def _mlp_width(
    count: Callable[[int], int],
    target: int,
    narrowest: int,
    widest: int,
    known: tuple[int, int] | None,
) -> tuple[int, int]:
    """The channel-MLP width in ``[narrowest, widest]`` whose count is closest to ``target``. The
    count is affine in the width (only the MLPs change): two points (``known``: one already
    counted) give the line, a third build confirms the width read off it (else: bisection)."""
    far, at_far = known if known and known[0] > narrowest else (narrowest + 1, count(narrowest + 1))
    low = count(narrowest)
    slope = max((at_far - low) / (far - narrowest), 1e-9)
    guess = min(max(round(narrowest + (target - low) / slope), narrowest), widest)
    found = count(guess)
    if found == round(low + slope * (guess - narrowest)):
        return guess, found
    return closest(count, target, narrowest, widest)


def _record(target: int, by: str, chosen: Mapping[str, int], params: int) -> Sizing:
    return Sizing(target, by, dict(chosen), params, params / target, within(params, target))


def uncounted(target: int | None, error: Exception) -> Sizing:
    """The record of a cell whose model could not be counted (its jobs will fail with why)."""
    reason = f"parameters not counted: {one_line(error)}"
    return Sizing(target, "unmatched", {}, None, None, False, reason)


def baseline_size(params: int) -> Sizing:
    """The baseline's own record: the count every other cell of its track is matched to."""
    return _record(params, "baseline", {}, params)

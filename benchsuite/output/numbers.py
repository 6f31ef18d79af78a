"""One way to write a number, shared by the terminal tables, the HTML page and the figures.

``num`` keeps ``digits`` significant digits and switches to ``k``/``M``/``G``/``T`` from 10 000
(``10.1k``, ``1.23M``; ``3.4e-05`` below 1e-4); ``count`` writes counts (parameters, FLOPs) with
those suffixes from 1 000, as ``benchsuite list --costs`` does; ``pct`` writes percentages with
their sign; ``cost`` picks the right one for a recorded cost; ``options_text`` writes mixer
options. A missing or non-finite value is ``–`` everywhere.
"""

from __future__ import annotations

import math
from typing import Any

from benchsuite.measures import Unit, unit_of

MISSING = "–"
SUFFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
NUMBER = 1e4  # from here a plain number is written with a suffix
COUNT = 1e3  # from here a count is


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None (handles None, NaN, inf,
    text)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _suffixed(number: float, digits: int, start: float) -> str | None:
    """``number`` with a k/M/G/T suffix when, rounded, it is at least ``start``."""
    rounded = float(f"{number:.{digits}g}")
    for scale, suffix in SUFFIXES:
        if abs(rounded) >= max(scale, start):
            return f"{rounded / scale:.{digits}g}{suffix}"
    return None


def num(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits: ``0.1235``, ``3.4e-05``, ``10.1k``."""
    number = finite(value)
    if number is None:
        return MISSING
    return _suffixed(number, min(digits, 3), NUMBER) or f"{number:.{digits}g}"


def count(value: Any) -> str:
    """A count (parameters, FLOPs) with 3 significant digits: ``812``, ``10.1k``, ``1.2M``."""
    number = finite(value)
    if number is None:
        return MISSING
    return _suffixed(number, 3, COUNT) or f"{number:.3g}"


def seconds(value: Any) -> str:
    """A duration in the unit that keeps it readable: ``1.23 ms``, ``45.6 µs``, ``2.5 s``."""
    number = finite(value)
    if number is None:
        return MISSING
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(number) >= scale:
            return f"{number / scale:.3g} {unit}"
    return f"{number / 1e-9:.3g} ns"


def pct(value: Any, signed: bool = True, digits: int = 1) -> str:
    """A percentage, with its sign unless ``signed`` is false: ``+12.3%``, ``-0.4%``."""
    number = finite(value)
    if number is None:
        return MISSING
    return f"{number:{'+' if signed else ''}.{digits}f}%"


UNADJUSTED = "†"  # beside an interval that excludes 0 where the verdict's Holm p does not pass


def marked_interval(bounds: Any, significant: bool, write: Any = num) -> str:
    """:func:`interval`, marked :data:`UNADJUSTED` where it excludes 0 but the verdict beside
    it is not significant (the interval is at its test's level, before Holm)."""
    lo, hi = bounds if isinstance(bounds, list | tuple) and len(bounds) == 2 else (None, None)
    excludes = lo is not None and hi is not None and (lo > 0 or hi < 0)
    return interval(bounds, write) + (UNADJUSTED if excludes and not significant else "")


def interval(bounds: Any, write: Any = num) -> str:
    """``[lo, hi]`` with each bound written by ``write`` (``[–, –]`` when missing)."""
    lo, hi = bounds if isinstance(bounds, list | tuple) and len(bounds) == 2 else (None, None)
    return f"[{write(lo)}, {write(hi)}]"


def summary(value: Any, bounds: list[float] | None, digits: int) -> str:
    """A bootstrap summary with its interval, ``0.49 [0.48, 0.50]``, or alone where it has none
    (too few seeds per track for one)."""
    shown = num(value, digits)
    return shown if bounds is None else f"{shown} {interval(bounds, lambda v: num(v, digits))}"


def cost(name: str, value: Any) -> str:
    """A recorded cost in its declared unit (:mod:`benchsuite.measures`): counts with suffixes,
    times with a unit, anything else as a number."""
    unit = unit_of(name)
    if unit == Unit.SECONDS:
        return seconds(value)
    if unit == Unit.BYTES and finite(value) is not None:
        return f"{count(value)}B"
    return count(value) if unit in (Unit.COUNT, Unit.FLOPS) else num(value)


def config(values: dict, sep: str = " ") -> str:
    """``{"lr": 0.001, "weight_decay": 0}`` -> ``lr=0.001 weight_decay=0``."""
    return sep.join(
        f"{k}={num(v)}" if finite(v) is not None else f"{k}={v}" for k, v in values.items()
    )


def options_text(options: dict[str, dict]) -> str:
    """``attention[heads=2]: heads=2; mamba: state=8, expand=2, conv=4``."""
    return "; ".join(
        f"{mixer}: {', '.join(f'{k}={v}' for k, v in given.items())}"
        for mixer, given in options.items()
    )

"""The variants of one track as one table's data: quality against an axis (e.g. width) at each
setting of the others (e.g. length), one row per mixer and setting, one column per axis value.

:func:`axis_groups` reads the typed results alone (a variant's canonical name says what it
sets); output/track_tables.py draws them (terminal and page). Every cell is the variant's own
result: its mean and its verdict against the baseline on that variant (the statistics stay per
track variant; this only lays them side by side).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from benchsuite.registry.track_variants import assignments

if TYPE_CHECKING:
    from benchsuite.results.schema import Analysis

PREFERRED_COLUMN = "dim"  # quality against width, when width varies


@dataclass
class AxisCell:
    """One track variant's result for one mixer: its mean and verdict (None: the baseline)."""

    track: str
    mean: float | None
    verdict: str | None


@dataclass
class AxisRow:
    """One mixer at one setting of the keys that are not the column."""

    mixer: str
    setting: dict[str, str]
    cells: dict[str, AxisCell] = field(default_factory=dict)


@dataclass
class AxisGroup:
    """The variants of one track: the column key and its values, the other varying keys, rows."""

    track: str
    metric: str
    baseline: str
    column: str
    values: list[str]
    keys: list[str]
    rows: list[AxisRow]


def _order(value: str) -> tuple[int, float | str]:
    """Numbers by value, then any text."""
    try:
        return (0, float(value))
    except ValueError:
        return (1, value)


def _follows(variants: dict[str, dict[str, str]], key: str, column: str) -> bool:
    """Whether ``key`` is set by ``column`` (one value of it per column value): it then varies
    with the columns, not across rows (``num_pairs`` with ``seq_len``)."""
    seen: dict[str | None, set[str | None]] = {}
    for keys in variants.values():
        seen.setdefault(keys.get(column), set()).add(keys.get(key))
    return all(len(values) == 1 for values in seen.values())


def axis_groups(report: Analysis) -> list[AxisGroup]:
    """Per registered track with two or more variants in ``report``: the keys that vary among
    them, the column key (``dim`` if it varies, else the last varying key) with its values, and
    one row per (mixer, setting of the other varying keys, less those the column sets) holding
    each column's mean and verdict (``None`` for the baseline)."""
    by_base: dict[str, dict[str, dict[str, str]]] = {}
    for name in report.tracks:
        base, keys = assignments(name)
        if keys:
            by_base.setdefault(base, {})[name] = keys
    groups = []
    for base, variants in by_base.items():
        if len(variants) < 2:
            continue
        every = sorted({k for keys in variants.values() for k in keys})
        varying = [k for k in every if len({keys.get(k) for keys in variants.values()}) > 1]
        if not varying:
            continue
        column = PREFERRED_COLUMN if PREFERRED_COLUMN in varying else varying[-1]
        others = [k for k in varying if k != column and not _follows(variants, k, column)]
        values = sorted({keys[column] for keys in variants.values()}, key=_order)
        rows: dict[tuple, AxisRow] = {}
        for name, keys in variants.items():
            entry = report.tracks[name]
            setting = tuple(keys.get(k, "") for k in others)
            for mixer in entry.ordered():
                row = rows.setdefault(
                    (mixer, setting), AxisRow(mixer, dict(zip(others, setting, strict=True)))
                )
                cell = entry.comparisons.get(mixer)
                row.cells[keys[column]] = AxisCell(
                    name, entry.mixers[mixer].full.mean, cell.comparison.verdict if cell else None
                )
        mixers = list(dict.fromkeys(m for m, _ in rows))
        ordered = sorted(rows, key=lambda r: (mixers.index(r[0]), [_order(v) for v in r[1]]))
        first = report.tracks[next(iter(variants))]
        groups.append(
            AxisGroup(
                base,
                first.facts.metric,
                first.baseline,
                column,
                values,
                others,
                [rows[key] for key in ordered],
            )
        )
    return groups

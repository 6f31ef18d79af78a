"""The cost of each mixer on each track, as recorded with its first evaluation run: the columns
are every declared cost (:mod:`benchsuite.measures`) some cell recorded, for the page's "Cost per
mixer" and the terminal's table under ``-v``."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from benchsuite.measures import COSTS
from benchsuite.output import captions, numbers
from benchsuite.results.schema import Analysis


def cost_rows(report: Analysis) -> tuple[list[str], list[tuple[str, ...]]]:
    """The costs some cell recorded (declaration order) and per cell ``(track, mixer, *costs)``
    written in each cost's unit."""
    arms = [arm for entry in report.tracks.values() for arm in entry.mixers.values()]
    measured = {name for arm in arms for name, _ in arm.costs.items()}
    names = [name for name in COSTS if name in measured]
    rows = [
        (track, mixer, *(numbers.cost(name, arm.costs.get(name)) for name in names))
        for track, entry in report.tracks.items()
        for mixer, arm in entry.mixers.items()
    ]
    return names, rows


def cost_table(report: Analysis) -> Table | None:
    """The terminal's cost table (None when no cost was recorded)."""
    names, rows = cost_rows(report)
    if not names:
        return None
    table = Table(title="[bold]cost per mixer[/]", caption=captions.costs(names))
    for column in ("track", "mixer", *names):
        table.add_column(column, justify="right" if column in names else "left")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table

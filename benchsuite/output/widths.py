"""Rich tables that never split a word or a number across lines.

rich shrinks a table that is too wide for the terminal by narrowing its widest columns, down
into their words if need be, and then folds a verdict or a number mid-token (``inconclusiv`` /
``e``). :func:`fit` does the sizing instead: every column gets at least its longest word (text
then wraps only at spaces) and the room left goes first to the columns that need least to show
whole; when even the longest words do not fit, it says so and the caller prints a
narrower layout. :class:`FirstFitting` draws the first of several layouts that fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(cell).plain if isinstance(cell, str) else ""


def _longest(texts: list[str], words: bool) -> int:
    """The widest word (``words``) or line of the texts, in terminal cells."""
    parts = [
        piece
        for text in texts
        for line in text.splitlines()
        for piece in (line.split() if words else [line])
    ]
    return max((cell_len(part) for part in parts), default=0)


def _extra(table: Table) -> int:
    """Border and padding cells a table adds to its columns' contents."""
    borders = (len(table.columns) - 1 + (2 if table.show_edge else 0)) if table.box else 0
    _, right, _, left = table.padding
    edges = 0 if table.pad_edge else left + right  # no padding outside the first and last column
    return borders + (left + right) * len(table.columns) - edges


def fit(table: Table, width: int, wrap: bool = True) -> bool:
    """Give each column of ``table`` a fixed width so that it fits ``width`` cells without
    splitting a word; False (the table left as it was) when its longest words do not fit, or
    (``wrap`` false) when any cell would have to wrap."""
    texts = [[_plain(c.header), *map(_plain, c.cells)] for c in table.columns]
    need = [
        _longest(t, words=not column.no_wrap)
        for t, column in zip(texts, table.columns, strict=True)
    ]
    full = [max(_longest(t, words=False), n) for t, n in zip(texts, need, strict=True)]
    room = width - _extra(table)
    if sum(full) <= room:
        return True
    if sum(need) > room or not wrap:
        return False
    widths = share(room - sum(need), need, full)
    for column, value in zip(table.columns, widths, strict=True):
        column.width = value
    return True


def share(spare: int, need: Sequence[int], full: Sequence[int]) -> list[int]:
    """``need`` plus ``spare`` cells: the columns that want least get their full width first
    (short numbers and labels stay on one line), the last one wrapping gets what is left."""
    widths = list(need)
    for index in sorted(range(len(need)), key=lambda i: full[i] - need[i]):
        extra = min(full[index] - need[index], spare)
        widths[index] += extra
        spare -= extra
    return widths


Layout = Callable[[int], list[Table]]  # the tables of one layout, built for a width


class FirstFitting:
    """A renderable: the tables of the first layout that fits the width it is drawn at (the
    last layout, as rich sizes it, when none does). The first ``unwrapped`` layouts count as
    fitting only when no cell wraps (a wide layout that would wrap is worse than the narrow one)."""

    def __init__(self, layouts: Sequence[Layout], unwrapped: int = 0) -> None:
        self.layouts, self.unwrapped = layouts, unwrapped

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for index, build in enumerate(self.layouts):
            tables = build(width)
            fitting = [fit(table, width, wrap=index >= self.unwrapped) for table in tables]
            if all(fitting) or index == len(self.layouts) - 1:
                yield from tables
                return

"""A rich progress bar fed by the runner's :class:`~benchsuite.api.Progress` callbacks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress

from benchsuite.api import Progress
from benchsuite.specs import RunRecord


@contextmanager
def progress_bar(console: Console) -> Iterator[Progress]:
    """Jobs done / total with elapsed time and ETA, one bar per phase (sweep, eval)."""
    bar = RichProgress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=console, transient=False,
    )  # fmt: skip
    tasks: dict[str, int] = {}
    current = {"phase": ""}

    def start(phase: str, total: int) -> None:
        current["phase"] = phase
        tasks[phase] = bar.add_task(phase, total=total, note="")

    def advance(record: RunRecord, reused: bool) -> None:
        job = record.job
        note = "" if reused else f"{job.get('track')}/{job.get('mixer')}"
        if record.status != "ok":
            note = f"[red]failed {note}[/]"
        bar.update(tasks[current["phase"]], advance=1, note=note)

    with bar:
        yield Progress(start=start, advance=advance)

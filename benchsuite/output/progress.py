"""What the terminal shows while a run goes: the design line, warnings and a rich progress bar,
all fed by the run's :class:`~benchsuite.execute.events.Events`."""

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

from benchsuite.execute.events import Events
from benchsuite.execute.record import RunRecord
from benchsuite.output.tables import print_design


@contextmanager
def progress_events(console: Console) -> Iterator[Events]:
    """Events that print the design and warnings, and draw jobs done / total with elapsed time
    and ETA, one bar per phase (sweep, eval)."""
    bar = RichProgress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=console, transient=False,
    )  # fmt: skip
    tasks: dict[str, int] = {}
    current = {"phase": ""}

    def start(phase: str, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        current["phase"] = phase
        tasks[phase] = bar.add_task(phase, total=total, note="")

    def advance(record: RunRecord, reused: bool) -> None:
        job = record.job
        note = "" if reused else f"{job.get('track')}/{job.get('mixer')}"
        if record.status != "ok":
            note = f"[red]failed {note}[/]"
        bar.update(tasks[current["phase"]], advance=1, note=note)

    def warning(text: str) -> None:
        console.print(f"[yellow]warning:[/] {text}")

    try:
        yield Events(design=lambda design: print_design(design, console), warning=warning,
                     start=start, advance=advance)  # fmt: skip
    finally:
        bar.stop()

"""What the terminal shows: the CLI's consoles (data on standard output, progress, warnings and
notes on standard error), and while a run goes, fed by its
:class:`~benchsuite.execute.events.Events`, the design (with the config file used) on the data
console, warnings and a rich progress bar (or, verbose, one line per job) on the status console."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
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


class PipeConsole(Console):
    """A rich console that lets a closed pipe raise :class:`BrokenPipeError` (rich's default exits
    with status 1), so the CLI can end quietly with status 0, as ``| head`` users expect."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def console(*, quiet: bool = False, stderr: bool = False) -> Console:
    """A console on standard output (data) or standard error (progress, warnings, notes); when
    printing to a file or pipe, wide enough that tables do not fold."""
    stream = sys.stderr if stderr else sys.stdout
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return PipeConsole(width=140 if wide else None, stderr=stderr, quiet=quiet)


def job_line(record: RunRecord) -> str:
    """One job run now (not reused from the store), as ``--verbose`` prints it."""
    job = record.job
    where = f"{job.get('track')}/{job.get('mixer')} seed {job.get('seed')}"
    if record.status != "ok":
        return f"failed {where}: {record.error}"
    return f"trained {where} in {record.seconds:.1f} s"


@contextmanager
def progress_events(console: Console, status: Console, *, config: str = "",
                    verbose: bool = False) -> Iterator[Events]:  # fmt: skip
    """Events that print the design (and ``config``, the file the settings came from) on
    ``console``, and on ``status`` the warnings and, when it is a terminal, jobs done / total with
    elapsed time and ETA, one bar per phase; ``verbose``: one line per job trained (or failed)
    instead of the bar (a bar cannot be followed in a file or a CI log)."""
    bar = RichProgress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=status, transient=False, disable=verbose or not status.is_terminal,
    )  # fmt: skip
    tasks: dict[str, int] = {}
    current = {"phase": ""}

    def design(plan: dict) -> None:
        print_design(plan, console)
        if config:
            console.print(f"  config: {escape(config)}")

    def start(phase: str, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        current["phase"] = phase
        tasks[phase] = bar.add_task(phase, total=total, note="")

    def advance(record: RunRecord, reused: bool) -> None:
        if verbose and not reused:
            status.print(escape(job_line(record)), highlight=False)
        job = record.job
        note = "" if reused else f"{job.get('track')}/{job.get('mixer')}"
        if record.status != "ok":
            note = f"[red]failed {note}[/]"
        bar.update(tasks[current["phase"]], advance=1, note=note)

    def warning(text: str) -> None:
        status.print(f"[yellow]warning:[/] {escape(text)}")

    try:
        yield Events(design=design, warning=warning, start=start, advance=advance)
    finally:
        if bar.live.is_started:  # stopping a bar never started prints an empty line
            bar.stop()

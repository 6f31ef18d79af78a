"""What the terminal shows: the CLI's consoles (data on standard output, progress, warnings and
notes on standard error), and while a run goes, fed by its
:class:`~benchsuite.events.Events`, the design block on the data console, every line of it (the
design, its warning, the config file used, the jobs planned, the family once the data is
probed: docs/troubleshooting.md, "What goes where"), the other warnings and a rich progress bar
(off a terminal a plain line now and then; verbose, one line per job) on the status console."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as RichProgress

from benchsuite.events import DesignCheck, Events, Outlook
from benchsuite.output.numbers import num, options_text, pct
from benchsuite.records import RunRecord
from benchsuite.vocabulary import Claims, Scale, Status


def print_design(design: DesignCheck, console: Console, verbose: bool = False) -> None:
    """The design check, before training, in one line (and its warning): which claims the seeds
    are planned for and what the other claims need; ``verbose``: each track's planned MDE too."""
    m, seeds, mixers = design.comparisons, design.seeds, design.mixers
    if design.claims == Claims.SUITE:
        why = (
            "as given"
            if design.seeds_given
            else "the fewest with which a suite verdict passes Holm with one discordant seed and "
            "any one track left out"
        )
        console.print(
            f"design: suite claims, {seeds} paired seeds ({why}): each mixer's verdict across "
            f"{design.tracks_planned} tracks, Holm over {mixers} mixers; per-track verdicts "
            f"(Holm over {m} comparisons) need at least {design.min_seeds_for_significance} "
            f"seeds (the per-track design plans {design.per_track_seeds}: one discordant seed "
            "allowed): --design per-track into the same --out trains only the new seeds"
        )
    else:
        why = (
            "as given"
            if design.seeds_given
            else "the fewest with which a comparison with one discordant seed passes Holm, and "
            "at least 12"
        )
        look = design.futility_seeds
        console.print(
            f"design: per-track claims, {seeds} paired seeds ({why}), {m} comparisons (Holm "
            f"needs at least {design.min_seeds_for_significance} seeds; verdicts at alpha "
            f"{num(design.alpha, 2)}, its first step)"
            + (
                f"; futility look at {look} of {seeds} seeds (pre-registered; --no-futility "
                "trains every seed)"
                if look
                else ""
            )
        )
    if design.warning:
        console.print(f"[yellow]warning:[/] {design.warning}")
    shown = design.mixer_options if verbose else design.mixer_options_set
    if shown:
        which = "" if verbose else " not at their defaults (-v: every one)"
        console.print(f"mixer options{which}: {escape(options_text(shown))}")
    if not verbose:
        return
    for track, plan in design.tracks.items():
        scale = "geometric-mean ratio" if plan.scale == Scale.LOG else "of the baseline mean"
        mde = (
            f"planned MDE {pct(plan.planned_mde_rel_pct, signed=False)} ({scale}) at alpha "
            f"{num(design.alpha, 2)}"
            if plan.planned_mde_rel_pct is not None
            else f"nothing detectable: the smallest sign-flip p of {seeds} seeds is "
            "not below that alpha"
        )
        console.print(
            f"  {escape(track)}: {mde} (sd of paired differences "
            f"{pct(100 * plan.planning_sd_rel, signed=False)}, {plan.source})"
        )


def duration(seconds: float) -> str:
    """``under a minute``, ``about 25 min``, ``about 2 h 10 min``."""
    minutes = round(seconds / 60)
    if minutes < 1:
        return "under a minute"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min" if hours else f"about {minutes} min"


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
    where = f"{job.track}/{job.mixer} seed {job.seed}"
    if record.status != Status.OK:
        return f"failed {where}: {record.error}"
    return f"trained {where} in {record.seconds:.1f} s"


# A plain progress line (stderr not a terminal) at most every LINE_SECONDS, and every LINE_JOBS.
LINE_SECONDS, LINE_JOBS = 30.0, 25


@dataclass
class Phase:
    """Jobs done in one phase of a run, timed from its start, and the outlook of those left (their
    costs and the pace the finished ones showed), for the ETA."""

    name: str
    total: int
    outlook: Outlook | None = None
    started: float = field(default_factory=time.monotonic)
    done: int = 0

    def eta(self, now: float) -> str:
        """``about H:MM:SS left``, the outlook's seconds left at ``now`` (monotonic clock); empty
        until the outlook is ready (it has seen a job of every track and every mixer left), or
        when all are done."""
        if self.outlook is None or not self.outlook.ready or self.done >= self.total:
            return ""
        left = self.outlook.seconds_left(now)
        return "" if left is None else f"about {timedelta(seconds=round(left))} left"

    def line(self, now: float) -> str:
        """The plain progress line: ``train: 12/845 jobs, 0:01:02 elapsed, about 0:40:00 left``."""
        elapsed = timedelta(seconds=round(now - self.started))
        eta = self.eta(now)
        return f"{self.name}: {self.done}/{self.total} jobs, {elapsed} elapsed" + (
            f", {eta}" if eta else ""
        )


@contextmanager
def progress_events(
    console: Console,
    status: Console,
    *,
    config: str = "",
    out: str = "",
    verbose: bool = False,
) -> Iterator[Events]:
    """Events that print the design (and ``config``, the file the settings came from) on
    ``console``, and on ``status`` the warnings and the progress: on a terminal, jobs done / total
    with elapsed time and ETA, one bar per phase; elsewhere (a file, a CI log) one plain line
    every LINE_JOBS jobs or LINE_SECONDS seconds; ``verbose``: one line per job trained (or
    failed) instead."""
    plain = not verbose and not status.is_terminal
    bar = RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
        console=status,
        transient=False,
        disable=verbose or plain,
    )
    tasks: dict[str, int] = {}
    current: dict[str, Phase] = {}
    printed = {"at": 0.0}

    def design(plan: DesignCheck) -> None:
        print_design(plan, console, verbose)
        if out or config:
            console.print(f"  out: {escape(out)}; config: {escape(config)}")

    def design_note(text: str) -> None:
        console.print(escape(text))

    def planned(train: int, total: int, seconds: float | None) -> None:
        guess = (
            f", {duration(seconds)} on this machine (a first guess from their sizes; the "
            "progress bar refines it)"
            if seconds is not None and train
            else ""
        )
        console.print(f"  jobs: {train} to train of {total} planned{guess}", highlight=False)

    def start(phase: str, total: int, outlook: Outlook) -> None:
        if not bar.live.is_started:
            bar.start()
        current["phase"] = Phase(phase, total, outlook)
        printed["at"] = time.monotonic()
        tasks[phase] = bar.add_task(phase, total=total, note="", eta="")

    def advance(record: RunRecord | None) -> None:
        phase, now = current["phase"], time.monotonic()
        phase.done += 1
        note = ""  # a job reused from the store
        if record is not None:
            if verbose:
                status.print(escape(job_line(record)), highlight=False)
            note = f"{record.job.track}/{record.job.mixer}"
            if record.status != Status.OK:
                note = f"[red]failed {note}[/]"
        bar.update(tasks[phase.name], advance=1, note=note, eta=phase.eta(now))
        due = phase.done % LINE_JOBS == 0 or now - printed["at"] >= LINE_SECONDS
        if plain and (due or phase.done == phase.total):
            printed["at"] = now
            status.print(phase.line(now), highlight=False, markup=False)

    def warning(text: str) -> None:
        status.print(f"[yellow]warning:[/] {escape(text)}")

    def stopping(signal: str) -> None:  # from the signal handler: print only
        status.print(
            f"[yellow]stopping ({signal}):[/] every finished job is kept, the jobs in flight stop "
            "at their last save; writing the report of what finished (Ctrl-C again to quit now)"
        )

    def analysing(records: int) -> None:
        if bar.live.is_started:
            bar.stop()  # the clock stops with the training
        status.print(f"writing the report of {records} stored jobs…", highlight=False)

    def note(text: str) -> None:
        status.print(escape(text))

    try:
        yield Events(
            design=design,
            design_note=design_note,
            warning=warning,
            note=note,
            start=start,
            advance=advance,
            stopping=stopping,
            analysing=analysing,
            planned=planned,
        )
    finally:
        if bar.live.is_started:  # stopping a bar never started prints an empty line
            bar.stop()

"""``benchsuite run``: mixers x tracks, paired by seed; the work is in :func:`benchsuite.api.run`.

Its flags are :class:`~benchsuite.settings.RunSettings`'s, over the config file (``--config``, else
the one found in the working folder), over the defaults.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from benchsuite import settings as run_settings
from benchsuite.cli import arguments
from benchsuite.settings import RunSettings

if TYPE_CHECKING:  # pragma: no cover - typing only
    from benchsuite import api

HELP = "run mixers x tracks, paired by seed, every seed tuned alike"
EXAMPLES = (
    (
        "benchsuite run --tracks sequence --mixers dense,butterfly --seeds 8",
        "one track, two mixers",
    ),
    ("benchsuite run --config bench.toml --out my-run -q", "settings from a file, errors only"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config``, ``--no-config`` and one flag per run setting (``--plugins-dir``: the CLI's)."""
    parser.add_argument(
        "--config",
        help="TOML file with run settings (flags override it; "
        f"default: ./{run_settings.CONFIG_FILE}, else [tool.benchsuite] in "
        f"./{run_settings.PYPROJECT})",
    )
    parser.add_argument(
        "--no-config", action="store_true", help="ignore the config file of the working folder"
    )
    arguments.add_settings(parser, RunSettings, skip=("plugins_dir",))  # a flag of every verb


def config_file(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The config file a run reads, and the design's line saying which and why."""
    if getattr(args, "config", None):
        return Path(args.config), f"{args.config} (--config; flags override it)"
    found = None if getattr(args, "no_config", False) else run_settings.find_config(Path())
    if found is None:
        return None, "none (defaults and flags)"
    return found, f"{found} (found in the working folder; flags override it)"


def settings_from(args: argparse.Namespace, path: Path | None) -> RunSettings:
    """The run settings: flags over the config file ``path`` (see :func:`config_file`) over the
    defaults."""
    from_file = run_settings.load_config(path) if path else {}
    return run_settings.merge(from_file, arguments.given(RunSettings, args))


def run(args: argparse.Namespace) -> int:
    """Run, print the report's tables and the line of what was trained; the run's exit code."""
    from rich.markup import escape

    from benchsuite import api
    from benchsuite.output.progress import console, progress_events
    from benchsuite.output.tables import print_partial, print_report

    path, config_line = config_file(args)
    settings = settings_from(args, path)
    args.out = settings.out  # where an unexpected error's traceback is saved
    tables, status = console(quiet=args.quiet), arguments.status(args)
    verbose = args.verbose and not args.quiet
    with progress_events(
        tables, status, config=config_line, out=str(settings.out), verbose=verbose
    ) as events:
        summary = api.run(settings, events=events)
    if summary.interrupted:
        print_partial(summary.report, summary.complete_tracks, tables)
        for line in interrupted_lines(summary):
            status.print(line, highlight=False)
        console(stderr=True).print(  # even under --quiet: how the run ended, and its exit code
            f"[yellow]interrupted[/] ({summary.signal}; exit {summary.exit_code}): "
            "run the same command again to resume"
        )
        return summary.exit_code
    print_report(summary.report, tables, verbose=verbose)
    for warning in summary.warnings:
        status.print(f"[yellow]warning:[/] {escape(warning)}")
    console().print(  # even under --quiet: the one line that says how the run ended
        f"jobs: {summary.trained} trained, {summary.reused} reused, {summary.failed} failed"
        f"{resumed_words(summary.resumed)}; "
        f"report: {Path(settings.out) / 'report.html'}{exit_reason(summary, settings)}"
    )
    return summary.exit_code


def resumed_words(resumed: int) -> str:
    """How many of the jobs trained went on from their saves ("" for none)."""
    return f" ({resumed} of those trained went on from their saves)" if resumed else ""


def interrupted_lines(summary: api.RunSummary) -> list[str]:
    """What an interrupted run kept, what it dropped and what is complete, in three lines."""
    design = summary.report.design
    complete = summary.complete_tracks
    tracks = f"{', '.join(complete)} (tables above)" if complete else "none yet"
    return [
        f"kept: {design.jobs_finished} of {design.jobs} jobs ({summary.trained} trained now); "
        f"in flight: {summary.dropped} job(s), {summary.saved} save(s) of their training kept "
        "(a resumed run goes on from a save; a job without one starts over)",
        f"complete: {design.finished} of {design.comparisons} comparisons; tracks: {tracks}",
        f"the report of what finished: {Path(summary.out) / 'report.html'}",
    ]


def exit_reason(summary: api.RunSummary, settings: RunSettings) -> str:
    """Why the exit code is not 0, after the final line (empty when it is 0)."""
    if not summary.exit_code:
        return ""
    why = []
    if summary.failed and not settings.allow_failures:
        why.append(f"{summary.failed} job(s) failed (--allow-failures accepts them)")
    if summary.broken:
        why.append(f"{summary.broken} cell(s) failed before training")
    return f" (exit {summary.exit_code}: {'; '.join(why)})"

"""The ``benchsuite`` command: the dispatcher. Each verb is a module of this package with its
flags (``add_arguments``, derived from a settings dataclass by :mod:`benchsuite.cli.arguments`),
its help line and examples (``HELP``, ``EXAMPLES``) and its handler (``run``); the use-cases it
calls are in :mod:`benchsuite.api` and :mod:`benchsuite.commands`.

Start-up imports nothing heavy: torch, plugins and the statistics load only in the commands that
need them. Data (tables, JSON, exported rows, completion scripts) goes to standard output;
progress, warnings and notes go to standard error (``--quiet``: errors only), so a pipe carries
data alone, and a pipe closed early (``| head``) ends the command quietly with status 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from benchsuite import settings as run_settings
from benchsuite.cli import (
    arguments,
    compare,
    completion,
    data,
    export,
    listing,
    new_mixer,
    plugins,
    report,
    run,
    scale,
)
from benchsuite.cli import test as contract
from benchsuite.errors import PluginError, RunError, UsageError, one_line
from benchsuite.version import __version__

# The verbs in the order --help lists them.
COMMANDS: dict[str, ModuleType] = {
    "run": run,
    "list": listing,
    "new-mixer": new_mixer,
    "plugins": plugins,
    "scale": scale,
    "report": report,
    "data": data,
    "export": export,
    "compare": compare,
    "test": contract,
    "completion": completion,
}
# Two examples per command, shown at the end of its --help.
EXAMPLES = {
    "benchsuite": (
        ("benchsuite run --tracks sequence --mixers dense,butterfly", "compare two mixers"),
        ("benchsuite list", "what can be run, with every option"),
    ),
    **{name: module.EXAMPLES for name, module in COMMANDS.items()},
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one line naming the command, exit status 2 (not the
    whole usage: ``--help`` has that)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    """``--debug``, ``-q/--quiet``, ``-v/--verbose`` and ``--plugins-dir``; after a command's
    name ``default`` is SUPPRESS, so the same flag given before the name is kept."""
    parser.add_argument(
        "--debug", action="store_true", default=default, help="show full tracebacks"
    )
    loudness = parser.add_mutually_exclusive_group()
    quiet = "print errors only (and the data a command exists to print; run: its last line)"
    loudness.add_argument("-q", "--quiet", action="store_true", default=default, help=quiet)
    verbose = "more detail on standard error (run: one line per job)"
    loudness.add_argument("-v", "--verbose", action="store_true", default=default, help=verbose)
    parser.add_argument(
        "--plugins-dir",
        default=None if default is False else default,
        help=run_settings.help_of("plugins_dir"),
    )


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="benchsuite",
        description="Benchmark token mixers on several tracks with paired-seed statistics.",
        epilog=arguments.examples(EXAMPLES["benchsuite"]) + "\n\n`benchsuite COMMAND --help` for "
        "a command's flags; docs/ has the rest.",
        formatter_class=arguments.FORMATTER,
    )
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"benchsuite {__version__}")
    _add_common(parser, False)
    verbs = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    for name, module in COMMANDS.items():
        verb = verbs.add_parser(
            name,
            parents=[common],
            help=module.HELP,
            epilog=arguments.examples(module.EXAMPLES),
            formatter_class=arguments.FORMATTER,
        )
        module.add_arguments(verb)
        verb.set_defaults(handler=module.run)
    verbs.choices["completion"].set_defaults(root=parser)
    return parser


def _log_traceback(args: Any) -> Path | None:
    """Save the traceback of an unexpected error in the run's own output folder: only a folder
    that already holds a run's store (nothing is created, no other folder is written)."""
    from benchsuite.store.store import FILENAME

    out = getattr(args, "out", None)
    if not out or not (Path(out) / FILENAME).is_file():
        return None
    path = Path(out) / "benchsuite-error.log"
    try:
        path.write_text(traceback.format_exc())
    except OSError:
        return None
    return path


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.handler(args)
    except BrokenPipeError:
        raise
    except (UsageError, PluginError, RunError) as error:
        if args.debug:
            traceback.print_exc()
        print(f"error: {error}", file=sys.stderr)
        return 1 if isinstance(error, RunError) else 2
    except KeyboardInterrupt:
        resumable = args.command == "run"
        print(
            "interrupted"
            + (
                ": finished jobs are saved; run the same command again to resume"
                if resumable
                else ""
            ),
            file=sys.stderr,
        )
        return 130
    except Exception as error:
        if args.debug:
            traceback.print_exc()
        log = _log_traceback(args)
        where = f"traceback in {log}" if log else "--debug shows the traceback"
        print(f"error: {one_line(error)} ({where})", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchsuite`` console script; returns the exit code.

    A pipe closed early (``benchsuite list --json | head -1``) ends quietly with status 0.
    """
    try:
        code = _dispatch(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python's advice: point standard output at devnull so the flush at exit cannot fail
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code

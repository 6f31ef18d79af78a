"""``benchsuite report``: re-render a run's tables and files from its store (no training)."""

from __future__ import annotations

import argparse

from benchsuite.settings import RunSettings

HELP = "re-render tables and files from a run's store"
EXAMPLES = (
    ("benchsuite report", "re-render benchsuite-results/ from its store"),
    ("benchsuite report my-run -q", "only rewrite the files"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run's output folder."""
    parser.add_argument("out", nargs="?", default=RunSettings.out)


def run(args: argparse.Namespace) -> int:
    """Rewrite the files and print the tables."""
    from benchsuite import api
    from benchsuite.output.progress import console
    from benchsuite.output.tables import print_report

    status = console(stderr=True, quiet=args.quiet)
    report = api.report(args.out, say=lambda text: status.print(text, highlight=False))
    print_report(report, console(quiet=args.quiet), verbose=args.verbose and not args.quiet)
    return 0

"""``benchsuite export``: every training run of a store as one row
(:mod:`benchsuite.commands.export`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from benchsuite.cli import arguments
from benchsuite.commands.export import FORMATS
from benchsuite.settings import RunSettings

HELP = "write every training run as one row"
EXAMPLES = (
    ("benchsuite export my-run --format parquet", "writes my-run/results.parquet"),
    ("benchsuite export my-run --output - | head", "CSV on standard output"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run's folder, ``--format``, ``--output`` and ``--failures``."""
    parser.add_argument("out", nargs="?", default=RunSettings.out)
    parser.add_argument("--format", choices=FORMATS, default=FORMATS[0])
    parser.add_argument(
        "--output", help="file to write, - for standard output (default: OUT/results.FORMAT)"
    )
    parser.add_argument("--failures", action="store_true", help="add failed runs (status=failed)")


def run(args: argparse.Namespace) -> int:
    """Write the rows to a file, or to standard output with ``--output -``."""
    from benchsuite.commands.export import export

    if args.output != "-":
        path, rows = export(args.out, args.format, args.output, include_failures=args.failures)
        arguments.status(args).print(f"{rows} rows -> {path}", highlight=False)
        return 0
    with tempfile.TemporaryDirectory() as folder:  # the writers take a path; copy it out whole
        path, rows = export(
            args.out,
            args.format,
            Path(folder) / f"results.{args.format}",
            include_failures=args.failures,
        )
        sys.stdout.buffer.write(path.read_bytes())
    arguments.status(args).print(f"{rows} rows -> standard output", highlight=False)
    return 0

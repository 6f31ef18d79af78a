"""``benchsuite compare A B``: two finished runs, paired by seed
(:mod:`benchsuite.commands.compare`)."""

from __future__ import annotations

import argparse

from benchsuite.cli import arguments
from benchsuite.settings import split_names

HELP = "compare two finished runs seed by seed"
EXAMPLES = (
    ("benchsuite compare before/ after/", "B against A, paired by seed"),
    ("benchsuite compare before/ after/ --mixers mymix --json", "one mixer, as data"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The two runs, ``--mixers`` and ``--json``."""
    parser.add_argument("a", help="output folder (or store file) of run A, the reference")
    parser.add_argument("b", help="output folder (or store file) of run B")
    parser.add_argument("--mixers", type=split_names, help="only these mixers")
    arguments.add_json(parser, "a table")


def run(args: argparse.Namespace) -> int:
    """Print the comparison as a table or as JSON."""
    import json

    from benchsuite.commands.compare import compare_runs, load_run
    from benchsuite.output.progress import console
    from benchsuite.output.tables import compare_table

    result = compare_runs(load_run(args.a), load_run(args.b), mixers=args.mixers)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        console().print(compare_table(result))
    return 0

"""``benchsuite new-mixer NAME``: write a mixer plugin distribution to start from."""

from __future__ import annotations

import argparse

from benchsuite.cli import arguments

HELP = "write a mixer plugin distribution"
EXAMPLES = (
    ("benchsuite new-mixer mymix", "writes ./benchsuite-mymix/"),
    ("benchsuite new-mixer mymix --path ~/src", "somewhere else"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The mixer's name and ``--path``."""
    parser.add_argument("name", help="the mixer's name: lowercase letters, digits, underscores")
    parser.add_argument("--path", default=".", help="where to write benchsuite-NAME/")


def run(args: argparse.Namespace) -> int:
    """Write the scaffold and say what to do next."""
    from benchsuite.registry.scaffold import new_mixer

    folder = new_mixer(args.name, args.path)
    arguments.status(args).print(
        f"wrote {folder}; next: pip install -e {folder}, then see {folder / 'README.md'}",
        highlight=False,
    )
    return 0

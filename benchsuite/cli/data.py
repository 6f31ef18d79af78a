"""``benchsuite data fetch DATASET``: download a real dataset a track can read."""

from __future__ import annotations

import argparse

from benchsuite.cli import arguments
from benchsuite.errors import UsageError

HELP = "manage real datasets"
EXAMPLES = (
    ("benchsuite data fetch cifar10", "download CIFAR-10 into the data folder"),
    ("benchsuite data fetch cifar10 --data-dir ~/data", "somewhere else"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``fetch`` action, its dataset and ``--data-dir``."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser(
        "fetch",
        help="download a dataset (needs a network)",
        epilog=arguments.examples(EXAMPLES),
        formatter_class=arguments.FORMATTER,
    )
    fetch.add_argument("dataset", help="a dataset a track can fetch (e.g. cifar10)")
    fetch.add_argument("--data-dir", help="where to put it (default: the data folder)")


def run(args: argparse.Namespace) -> int:
    """Fetch the dataset through the first track that can."""
    import socket

    from benchsuite.registry import load_registry

    registry = load_registry(args.plugins_dir)
    owners = [t for t in registry.tracks.values() if args.dataset in t.fetchable]
    if not owners:
        known = sorted({name for t in registry.tracks.values() for name in t.fetchable})
        raise UsageError(f"no track can fetch {args.dataset!r}; known: {', '.join(known)}")
    socket.setdefaulttimeout(30)
    print(f"{args.dataset} is in {owners[0].fetch(args.dataset, args.data_dir)}")
    return 0

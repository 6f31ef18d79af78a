"""``benchsuite plugins``: the loaded plugins, what each registered, and the plugin failures."""

from __future__ import annotations

import argparse

from benchsuite.cli import arguments

HELP = "list loaded plugins and plugin failures"
EXAMPLES = (
    ("benchsuite plugins", "loaded plugins, what they registered, failures"),
    ("benchsuite plugins --json --plugins-dir ./my_mixers", "the same as data"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``."""
    arguments.add_json(parser)


def run(args: argparse.Namespace) -> int:
    """Print the plugins as a table or as JSON."""
    import json

    from benchsuite.output.listing import plugins_data, print_plugins
    from benchsuite.output.progress import console
    from benchsuite.registry import load_registry

    registry = load_registry(args.plugins_dir)
    if args.json:
        print(json.dumps(plugins_data(registry), indent=2))
    else:
        print_plugins(registry, console())
    return 0

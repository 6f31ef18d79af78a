"""``benchsuite list``: the registered mixers and tracks with every option; ``--costs`` measures
what each mixer costs on each track (:mod:`benchsuite.commands.costs`) with the run settings that
decide the model."""

from __future__ import annotations

import argparse

from benchsuite import settings as run_settings
from benchsuite.cli import arguments
from benchsuite.settings import RunSettings

HELP = "list registered mixers and tracks"
EXAMPLES = (
    ("benchsuite list --json | jq '.mixers | keys'", "the mixer names, as data"),
    ("benchsuite list --costs --tracks sequence", "parameters, FLOPs, time and memory"),
)
# The run settings --costs measures with: their flags are the run's.
COSTS = (
    "tracks",
    "mixers",
    "baseline",
    "preset",
    "data_dir",
    "device",
    "track_options",
    "mixer_options",
    "match",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--costs`` and the run settings of ``COSTS``."""
    arguments.add_json(parser)
    parser.add_argument(
        "--costs",
        action="store_true",
        help="measure parameters, FLOPs, step time and memory per mixer x track "
        "(with the run flags below)",
    )
    arguments.add_settings(parser, RunSettings, COSTS)


def run(args: argparse.Namespace) -> int:
    """Print the listing, or the costs table, as tables or JSON."""
    import json

    from benchsuite.output.listing import listing, print_listing
    from benchsuite.output.progress import console
    from benchsuite.registry import load_registry

    registry = load_registry(args.plugins_dir)
    if args.costs:
        from benchsuite.commands.costs import costs_table
        from benchsuite.output.listing import print_costs

        settings = run_settings.merge(arguments.given(RunSettings, args, COSTS))
        status = arguments.status(args)
        rows = costs_table(
            registry,
            settings.preset,
            settings.tracks,
            settings.mixers,
            baseline=settings.baseline,
            track_options=settings.track_options,
            mixer_options=settings.mixer_options,
            data_dir=settings.data_dir,
            device=settings.device,
            match=settings.match,
            say=lambda text: status.print(text, highlight=False),
        )
        if args.json:
            print(json.dumps(rows, indent=2, default=str))
        else:
            print_costs(rows, console())
        return 0
    if args.json:
        print(json.dumps(listing(registry), indent=2, default=str))
    else:
        print_listing(registry, console(), arguments.status(args))
    return 0

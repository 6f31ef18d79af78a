"""``benchsuite scale``: step time, memory and FLOPs against tokens (the measuring is
:mod:`benchsuite.commands.scale`; the flags are its ``ScaleSettings``)."""

from __future__ import annotations

import argparse
from typing import Any

from benchsuite.cli import arguments
from benchsuite.commands.scale import ScaleSettings, scale

HELP = "step time, memory and FLOPs against tokens"
EXAMPLES = (
    ("benchsuite scale --mixers dense,attention,fnet", "64 to 16384 tokens on the CPU"),
    ("benchsuite scale --tokens 256,1024,4096 --device cuda --json", "on a GPU, as data"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The :class:`ScaleSettings` flags and ``--json``."""
    arguments.add_settings(parser, ScaleSettings)
    arguments.add_json(parser)


def run(args: argparse.Namespace) -> int:
    """Measure, write scaling.json, its plots and its page scaling.html, print the table."""
    import json

    from benchsuite.output.progress import console
    from benchsuite.output.scaling import point_line, print_scaling, write_scaling
    from benchsuite.registry import load_registry

    settings, status = arguments.read(ScaleSettings, args), arguments.status(args)
    settings.check()  # before the plugins load

    def on_point(mixer: str, point: dict[str, Any]) -> None:
        status.print(point_line(mixer, point), markup=False, highlight=False)

    result = scale(load_registry(settings.plugins_dir), settings, on_point=on_point)
    written = write_scaling(result, settings.out)
    page = written[0].with_name("scaling.html")  # written beside it; report.html links it
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print_scaling(result, console())
    updated = f"; updated {page}" if page else ""
    status.print(f"wrote {written[0]} and {len(written) - 1} plots in plots/{updated}")
    return 0

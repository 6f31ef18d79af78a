"""The ``benchsuite`` command: parsing and printing only; the work is in :mod:`benchsuite.api`.

Start-up imports nothing heavy: torch, plugins and the statistics load only in the commands that
need them.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchsuite import settings as run_settings
from benchsuite.errors import PluginError, RunError, UsageError, one_line
from benchsuite.settings import RunSettings, parse_assignments, split_names

DEFAULT_OUT = RunSettings.out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchsuite",
        description="Benchmark token mixers on several tracks with paired-seed statistics.",
    )
    plugins_help = run_settings.help_of("plugins_dir")
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show full tracebacks"
    )
    plugins = argparse.ArgumentParser(add_help=False)
    plugins.add_argument("--plugins-dir", default=argparse.SUPPRESS, help=plugins_help)
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--plugins-dir", help=plugins_help)
    commands = parser.add_subparsers(dest="command", required=True)

    def add_command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A sub-command that also takes --debug and --plugins-dir after its name."""
        return commands.add_parser(name, parents=[debug, plugins], **kwargs)

    run = commands.add_parser("run", parents=[debug],
                              help="run mixers x tracks under the shared protocol")  # fmt: skip
    run.add_argument("--config", help="TOML file with run settings (flags override it)")
    run_settings.add_flags(run)
    listing = add_command("list", help="list registered mixers and tracks")
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    listing.add_argument(
        "--costs",
        action="store_true",
        help="measure parameters, FLOPs, step time and memory per mixer x track",
    )
    listing.add_argument(
        "--preset",
        default=RunSettings.preset,
        help=f"budget used by --costs (default {RunSettings.preset})",
    )
    listing.add_argument("--tracks", type=split_names, help="tracks for --costs (default: all)")
    listing.add_argument("--mixers", type=split_names, help="mixers for --costs (default: all)")
    listing.add_argument(
        "--baseline", default=RunSettings.baseline, help="reference of the parameter ratio"
    )
    listing.add_argument("--track-option", action="append", default=[], metavar="TRACK.KEY=VALUE")
    listing.add_argument("--mixer-option", action="append", default=[], metavar="MIXER.KEY=VALUE")
    listing.add_argument("--data-dir", help="folder with real datasets")
    listing.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    new_mixer = add_command("new-mixer", help="write a mixer plugin distribution")
    new_mixer.add_argument("name", help="the mixer's name: lowercase letters, digits, underscores")
    new_mixer.add_argument("--path", default=".", help="where to write benchsuite-NAME/")
    add_command("plugins", help="list loaded plugins and plugin failures")
    report = add_command("report", help="re-render tables and files from a run's store")
    report.add_argument("out", nargs="?", default=DEFAULT_OUT)
    data = add_command("data", help="manage real datasets")
    data_commands = data.add_subparsers(dest="action", required=True)
    fetch = data_commands.add_parser("fetch", help="download a dataset (needs a network)")
    fetch.add_argument("dataset", help="a dataset a track can fetch (e.g. cifar10)")
    fetch.add_argument("--data-dir", help="where to put it (default: the data folder)")
    export = add_command("export", help="write every training run as one row")
    export.add_argument("out", nargs="?", default=DEFAULT_OUT)
    export.add_argument("--format", choices=("csv", "parquet", "json"), default="csv")
    export.add_argument("--output", help="file to write (default: OUT/results.FORMAT)")
    export.add_argument("--failures", action="store_true", help="add failed runs (status=failed)")
    compare = add_command("compare", help="compare two finished runs seed by seed")
    compare.add_argument("a", help="output folder (or store file) of run A, the reference")
    compare.add_argument("b", help="output folder (or store file) of run B")
    compare.add_argument("--mixers", type=split_names, help="only these mixers")
    compare.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def _console():
    """A rich console; when printing to a file or pipe, wide enough that tables do not fold."""
    import os

    from rich.console import Console

    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(width=140 if wide else None)


def settings_from(args: argparse.Namespace) -> RunSettings:
    """The run settings: flags over the ``--config`` file over the defaults."""
    from_file = run_settings.load_config(args.config) if args.config else {}
    flags = run_settings.from_flags(args)
    return run_settings.merge(from_file, flags)


def cmd_run(args: argparse.Namespace) -> int:
    from benchsuite import api
    from benchsuite.output.progress import progress_events
    from benchsuite.output.tables import print_report

    settings = settings_from(args)
    args.out = settings.out
    console = _console()
    with progress_events(console) as events:
        summary = api.run(settings, events=events)
    print_report(summary.report, console)
    if summary.interrupted:
        console.print("[yellow]interrupted:[/] the tables above hold what finished; "
                      "run the same command again to resume")  # fmt: skip
        return summary.exit_code
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    console.print(
        f"jobs: {summary.trained} trained, {summary.reused} reused, {summary.failed} failed; "
        f"report: {Path(settings.out) / 'report.html'}"
    )
    return summary.exit_code


def cmd_list(args: argparse.Namespace) -> int:
    import json

    from benchsuite.output.listing import listing, print_listing
    from benchsuite.registry import load_registry

    registry = load_registry(args.plugins_dir)
    if args.costs:
        from benchsuite.commands.costs import costs_table
        from benchsuite.output.listing import print_costs

        rows = costs_table(
            registry, args.preset, args.tracks, args.mixers, baseline=args.baseline,
            track_options=parse_assignments(args.track_option, "--track-option"),
            mixer_options=parse_assignments(args.mixer_option, "--mixer-option"),
            data_dir=args.data_dir, device=args.device,
        )  # fmt: skip
        if args.json:
            print(json.dumps(rows, indent=2, default=str))
        else:
            print_costs(rows, _console())
        return 0
    if args.json:
        print(json.dumps(listing(registry), indent=2, default=str))
    else:
        print_listing(registry, _console())
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    from benchsuite.output.listing import print_plugins
    from benchsuite.registry import load_registry

    print_plugins(load_registry(args.plugins_dir), _console())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from benchsuite import api
    from benchsuite.output.tables import print_report

    print_report(api.report(args.out), _console())
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from benchsuite.commands.compare import compare_runs, load_run
    from benchsuite.output.tables import compare_table

    result = compare_runs(load_run(args.a), load_run(args.b), mixers=args.mixers)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        _console().print(compare_table(result))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchsuite.commands.export import export

    path, rows = export(args.out, args.format, args.output, include_failures=args.failures)
    print(f"{rows} rows -> {path}")
    return 0


def cmd_new_mixer(args: argparse.Namespace) -> int:
    from benchsuite.registry.scaffold import new_mixer

    folder = new_mixer(args.name, args.path)
    print(f"wrote {folder}; next: pip install -e {folder}, then see {folder / 'README.md'}")
    return 0


def cmd_data(args: argparse.Namespace) -> int:
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


COMMANDS = {
    "data": cmd_data,
    "new-mixer": cmd_new_mixer,
    "export": cmd_export,
    "run": cmd_run,
    "list": cmd_list,
    "plugins": cmd_plugins,
    "report": cmd_report,
    "compare": cmd_compare,
}


def _log_traceback(args: Any, create: bool = True) -> Path | None:
    """Save the traceback in the output folder (made only for unexpected errors)."""
    folder = Path(getattr(args, "out", None) or DEFAULT_OUT)
    try:
        if not folder.is_dir() and not create:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "benchsuite-error.log"
        path.write_text(traceback.format_exc())
        return path
    except OSError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchsuite`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (UsageError, PluginError, RunError) as error:
        if args.debug:
            traceback.print_exc()
        _log_traceback(args, create=False)
        print(f"error: {error}", file=sys.stderr)
        return 1 if isinstance(error, RunError) else 2
    except KeyboardInterrupt:
        print("interrupted: finished jobs are saved; run the same command again to resume",
              file=sys.stderr)  # fmt: skip
        return 130
    except Exception as error:
        if args.debug:
            traceback.print_exc()
        log = _log_traceback(args)
        where = f" (traceback in {log})" if log else ""
        print(f"error: {one_line(error)}{where}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

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

from benchsuite.specs import PluginError, RunError, UsageError, one_line

DEFAULT_OUT = "benchsuite-results"


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_assignments(items: Sequence[str], flag: str) -> dict[str, dict[str, str]]:
    """``["vision.verify=false", ...]`` -> ``{"vision": {"verify": "false"}}``."""
    result: dict[str, dict[str, str]] = {}
    for item in items:
        for assignment in _split(item):
            name, dot, rest = assignment.partition(".")
            key, equals, value = rest.partition("=")
            if not (name and dot and key and equals):
                raise UsageError(f"{flag} {assignment!r}: expected NAME.KEY=VALUE")
            result.setdefault(name, {})[key.strip()] = value.strip()
    return result


def parse_pairs(items: Sequence[str], flag: str) -> dict[str, str]:
    """``["steps=20,dim=16"]`` -> ``{"steps": "20", "dim": "16"}``."""
    result = {}
    for item in items:
        for assignment in _split(item):
            key, equals, value = assignment.partition("=")
            if not (key.strip() and equals):
                raise UsageError(f"{flag} {assignment!r}: expected KEY=VALUE")
            result[key.strip()] = value.strip()
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchsuite",
        description="Benchmark token mixers on several tracks with paired-seed statistics.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show full tracebacks"
    )
    common.add_argument(
        "--plugins-dir",
        default=argparse.SUPPRESS,
        help="folder of *.py plugins (or $BENCHSUITE_PLUGINS_DIR)",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--plugins-dir", help="folder of *.py plugins (or $BENCHSUITE_PLUGINS_DIR)")
    commands = parser.add_subparsers(dest="command", required=True)

    def add_command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A sub-command that also takes --debug and --plugins-dir after its name."""
        return commands.add_parser(name, parents=[common], **kwargs)

    run = add_command("run", help="run mixers x tracks under the shared protocol")
    run.add_argument("--config", help="TOML file with run settings (flags override it)")
    run.add_argument("--tracks", type=_split, help="comma-separated tracks (default: all)")
    run.add_argument("--mixers", type=_split, help="comma-separated mixers (default: all)")
    run.add_argument("--baseline", help="baseline mixer (default: dense)")
    run.add_argument("--seeds", type=int, help="paired evaluation seeds (default: enough for Holm)")
    run.add_argument("--sweep-seeds", type=int, help="seeds per sweep config (default 2)")
    run.add_argument("--preset", help="quick (default, CPU) or full (GPU)")
    run.add_argument("--out", help=f"output folder (default {DEFAULT_OUT})")
    run.add_argument("--data-dir", help="folder with real datasets (e.g. cifar-10-batches-py/)")
    run.add_argument("--track-option", action="append", default=[], metavar="TRACK.KEY=VALUE")
    run.add_argument("--mixer-option", action="append", default=[], metavar="MIXER.KEY=VALUE")
    run.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override the preset's steps, batch_size, dim or depth on every track",
    )
    run.add_argument("--executor", help="process (default: worker processes), local or ray")
    run.add_argument("--address", help="Ray cluster HOST:PORT for --executor ray (default: local)")
    run.add_argument("--jobs", type=int, help="parallel jobs (default: one per free core)")
    run.add_argument(
        "--timeout", type=float, metavar="SECONDS",
        help="hard limit per job: a job still running then is killed and recorded as failed",
    )  # fmt: skip
    run.add_argument(
        "--allow-failures", action="store_true", default=None,
        help="exit 0 even when some jobs failed",
    )  # fmt: skip
    run.add_argument("--threads", type=int, help="torch threads per job (default 1)")
    run.add_argument("--device", help="cpu (default) or cuda[:N]")
    run.add_argument(
        "--batch-seeds",
        action="store_true",
        default=None,
        help="train a cell's evaluation seeds as one vmapped model (default on cuda)",
    )
    run.add_argument(
        "--strict",
        action="store_true",
        default=None,
        help="refuse a design whose seeds cannot reach significance",
    )
    listing = add_command("list", help="list registered mixers and tracks")
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    listing.add_argument(
        "--costs",
        action="store_true",
        help="measure parameters, FLOPs, step time and memory per mixer x track",
    )
    listing.add_argument("--preset", default="quick", help="budget used by --costs (default quick)")
    listing.add_argument("--tracks", type=_split, help="tracks for --costs (default: all)")
    listing.add_argument("--mixers", type=_split, help="mixers for --costs (default: all)")
    listing.add_argument("--baseline", default="dense", help="reference of the parameter ratio")
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
    fetch.add_argument("dataset", choices=("cifar10",))
    fetch.add_argument("--data-dir", help="where to put it (default: the data folder)")
    export = add_command("export", help="write every training run as one row")
    export.add_argument("out", nargs="?", default=DEFAULT_OUT)
    export.add_argument("--format", choices=("csv", "parquet", "json"), default="csv")
    export.add_argument("--output", help="file to write (default: OUT/results.FORMAT)")
    export.add_argument("--failures", action="store_true", help="add failed runs (status=failed)")
    compare = add_command("compare", help="compare two finished runs seed by seed")
    compare.add_argument("a", help="output folder (or store file) of run A, the reference")
    compare.add_argument("b", help="output folder (or store file) of run B")
    compare.add_argument("--mixers", type=_split, help="only these mixers")
    compare.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def _console():
    """A rich console; when printing to a file or pipe, wide enough that tables do not fold."""
    import os

    from rich.console import Console

    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(width=140 if wide else None)


RUN_DEFAULTS: dict[str, Any] = {
    "tracks": None,
    "mixers": None,
    "baseline": "dense",
    "seeds": None,
    "sweep_seeds": 2,
    "preset": "quick",
    "out": DEFAULT_OUT,
    "data_dir": None,
    "executor": "process",
    "address": None,
    "jobs": None,
    "timeout": None,
    "allow_failures": False,
    "threads": 1,
    "strict": False,
    "device": "cpu",
    "batch_seeds": None,
}


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Flags over the ``--config`` file over the defaults; options and budget merged by key."""
    from benchsuite.config import load_config

    config = load_config(args.config) if args.config else {}
    from_file = config.get("run", {})
    settings = {
        key: next((v for v in (getattr(args, key), from_file.get(key)) if v is not None), default)
        for key, default in RUN_DEFAULTS.items()
    }
    settings["track_options"] = _merge(
        config.get("tracks", {}), parse_assignments(args.track_option, "--track-option")
    )
    settings["mixer_options"] = _merge(
        config.get("mixers", {}), parse_assignments(args.mixer_option, "--mixer-option")
    )
    settings["budget"] = {**config.get("budget", {}), **parse_pairs(args.budget, "--budget")}
    return settings


def _merge(base: dict[str, dict], override: dict[str, dict]) -> dict[str, dict]:
    merged = {name: dict(values) for name, values in base.items()}
    for name, values in override.items():
        merged.setdefault(name, {}).update(values)
    return merged


def cmd_run(args: argparse.Namespace) -> int:
    from benchsuite import api
    from benchsuite.design import design_check
    from benchsuite.executors import check_executor
    from benchsuite.progress import progress_bar
    from benchsuite.registry import load_registry
    from benchsuite.tables import print_design, print_report

    settings = run_settings(args)
    args.out = settings["out"]
    console = _console()
    registry = load_registry(args.plugins_dir)
    for failure in registry.failures:
        console.print(f"[yellow]plugin {failure.name!r} not loaded:[/] {failure.reason}")
    request = api.make_request(
        registry,
        tracks=settings["tracks"],
        mixers=settings["mixers"],
        baseline=settings["baseline"],
        seeds=settings["seeds"],
        sweep_seeds=settings["sweep_seeds"],
        preset=settings["preset"],
        track_options=settings["track_options"],
        mixer_options=settings["mixer_options"],
        data_dir=settings["data_dir"],
        threads=settings["threads"],
        budget_overrides=settings["budget"],
        device=settings["device"],
        batch_seeds=settings["batch_seeds"],
    )
    check_executor(settings["executor"], settings["jobs"], settings["timeout"], settings["address"])
    design = design_check(request, registry, Path(settings["out"]))
    print_design(design, console)
    if design["warning"] and settings["strict"]:
        raise UsageError(f"{design['warning']} (--strict)")
    with progress_bar(console) as progress:
        summary = api.run(
            request, out=settings["out"], registry=registry, plugins_dir=args.plugins_dir,
            executor=settings["executor"], jobs=settings["jobs"], timeout=settings["timeout"],
            address=settings["address"], progress=progress,
        )  # fmt: skip
    print_report(summary.report, console)
    if summary.interrupted:
        console.print("[yellow]interrupted:[/] the tables above hold what finished; "
                      "run the same command again to resume")  # fmt: skip
        return 130
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    console.print(
        f"jobs: {summary.trained} trained, {summary.reused} reused, {summary.failed} failed; "
        f"report: {Path(settings['out']) / 'report.html'}"
    )
    return 1 if (summary.failed and not settings["allow_failures"]) or summary.broken else 0


def cmd_list(args: argparse.Namespace) -> int:
    import json

    from benchsuite.listing import listing, print_listing
    from benchsuite.registry import load_registry

    registry = load_registry(args.plugins_dir)
    if args.costs:
        from benchsuite.costs import costs_table, print_costs

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
    from benchsuite.listing import print_plugins
    from benchsuite.registry import load_registry

    print_plugins(load_registry(args.plugins_dir), _console())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from benchsuite import api
    from benchsuite.tables import print_report

    print_report(api.report(args.out), _console())
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from benchsuite.compare import compare_runs, load_run
    from benchsuite.tables import compare_table

    result = compare_runs(load_run(args.a), load_run(args.b), mixers=args.mixers)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        _console().print(compare_table(result))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchsuite.export import export

    path, rows = export(args.out, args.format, args.output, include_failures=args.failures)
    print(f"{rows} rows -> {path}")
    return 0


def cmd_new_mixer(args: argparse.Namespace) -> int:
    from benchsuite.scaffold import new_mixer

    folder = new_mixer(args.name, args.path)
    print(f"wrote {folder}; next: pip install -e {folder}, then see {folder / 'README.md'}")
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    import socket

    from benchsuite.tracks.cifar import fetch_cifar10

    socket.setdefaulttimeout(30)
    print(f"CIFAR-10 is in {fetch_cifar10(args.data_dir)}")
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

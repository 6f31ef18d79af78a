"""The ``benchsuite`` command: parsing and printing only; the work is in :mod:`benchsuite.api`.

Start-up imports nothing heavy: torch, plugins and the statistics load only in the commands that
need them. Data (tables, JSON, exported rows, completion scripts) goes to standard output;
progress, warnings and notes go to standard error (``--quiet``: errors only), so a pipe carries
data alone, and a pipe closed early (``| head``) ends the command quietly with status 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from benchsuite import __version__
from benchsuite import settings as run_settings
from benchsuite.errors import PluginError, RunError, UsageError, one_line
from benchsuite.settings import RunSettings, parse_assignments, split_names

DEFAULT_OUT = RunSettings.out
FORMATTER = argparse.RawDescriptionHelpFormatter

# Two examples per command, shown at the end of its --help.
EXAMPLES = {
    "benchsuite": [
        ("benchsuite run --tracks sequence --mixers dense,butterfly", "compare two mixers"),
        ("benchsuite list", "what can be run, with every option"),
    ],
    "run": [
        ("benchsuite run --tracks sequence --mixers dense,butterfly --seeds 8",
         "one track, two mixers"),
        ("benchsuite run --config bench.toml --out my-run -q",
         "settings from a file, errors only"),
    ],
    "list": [
        ("benchsuite list --json | jq '.mixers | keys'", "the mixer names, as data"),
        ("benchsuite list --costs --tracks sequence", "parameters, FLOPs, time and memory"),
    ],
    "new-mixer": [
        ("benchsuite new-mixer mymix", "writes ./benchsuite-mymix/"),
        ("benchsuite new-mixer mymix --path ~/src", "somewhere else"),
    ],
    "plugins": [
        ("benchsuite plugins", "loaded plugins, what they registered, failures"),
        ("benchsuite plugins --json --plugins-dir ./my_mixers", "the same as data"),
    ],
    "scale": [
        ("benchsuite scale --mixers dense,attention,fnet", "64 to 16384 tokens on the CPU"),
        ("benchsuite scale --tokens 256,1024,4096 --device cuda --json", "on a GPU, as data"),
    ],
    "report": [
        ("benchsuite report", "re-render benchsuite-results/ from its store"),
        ("benchsuite report my-run -q", "only rewrite the files"),
    ],
    "data": [
        ("benchsuite data fetch cifar10", "download CIFAR-10 into the data folder"),
        ("benchsuite data fetch cifar10 --data-dir ~/data", "somewhere else"),
    ],
    "export": [
        ("benchsuite export my-run --format parquet", "writes my-run/results.parquet"),
        ("benchsuite export my-run --output - | head", "CSV on standard output"),
    ],
    "compare": [
        ("benchsuite compare before/ after/", "B against A, paired by seed"),
        ("benchsuite compare before/ after/ --mixers mymix --json", "one mixer, as data"),
    ],
    "test": [
        ("benchsuite test dense attention", "every contract check, one line each"),
        ("benchsuite --plugins-dir ./my_mixers test mymix --tokens 8,64", "a plugins-folder mixer"),
    ],
    "completion": [
        ("benchsuite completion bash > ~/.local/share/bash-completion/completions/benchsuite",
         "bash"),
        ("benchsuite completion fish > ~/.config/fish/completions/benchsuite.fish", "fish"),
    ],
}  # fmt: skip


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one line naming the command, exit status 2 (not the
    whole usage: ``--help`` has that)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def examples(name: str) -> str:
    """The ``examples:`` epilog of a command's help."""
    width = max(len(command) for command, _ in EXAMPLES[name])
    lines = [f"  {command:<{width}}  # {why}" for command, why in EXAMPLES[name]]
    return "examples:\n" + "\n".join(lines)


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    """``--debug``, ``-q/--quiet`` and ``-v/--verbose``; after a command's name ``default`` is
    SUPPRESS, so the same flag given before the name is kept."""
    parser.add_argument("--debug", action="store_true", default=default,
                        help="show full tracebacks")  # fmt: skip
    loudness = parser.add_mutually_exclusive_group()
    quiet = "print errors only (and the data a command exists to print)"
    loudness.add_argument("-q", "--quiet", action="store_true", default=default, help=quiet)
    verbose = "more detail on standard error (run: one line per job)"
    loudness.add_argument("-v", "--verbose", action="store_true", default=default, help=verbose)


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="benchsuite",
        description="Benchmark token mixers on several tracks with paired-seed statistics.",
        epilog=examples("benchsuite") + "\n\n`benchsuite COMMAND --help` for a command's flags; "
        "docs/ has the rest.",
        formatter_class=FORMATTER,
    )
    plugins_help = run_settings.help_of("plugins_dir")
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    plugins = argparse.ArgumentParser(add_help=False)
    plugins.add_argument("--plugins-dir", default=argparse.SUPPRESS, help=plugins_help)
    parser.add_argument("--version", action="version", version=f"benchsuite {__version__}")
    _add_common(parser, False)
    parser.add_argument("--plugins-dir", help=plugins_help)
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    def add_command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A sub-command that also takes --debug, -q/-v and --plugins-dir after its name, with
        its examples (``EXAMPLES``) at the end of its help."""
        kwargs.setdefault("parents", [common, plugins])
        if name in EXAMPLES:
            kwargs.setdefault("epilog", examples(name))
        return commands.add_parser(name, formatter_class=FORMATTER, **kwargs)

    run = add_command(
        "run", parents=[common], help="run mixers x tracks, paired by seed, every seed tuned alike"
    )
    run.add_argument("--config", help="TOML file with run settings (flags override it; default: "
                     f"./{run_settings.CONFIG_FILE}, else [tool.benchsuite] in "
                     f"./{run_settings.PYPROJECT})")  # fmt: skip
    run.add_argument("--no-config", action="store_true",
                     help="ignore the config file of the working folder")  # fmt: skip
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
    plugins_command = add_command("plugins", help="list loaded plugins and plugin failures")
    plugins_command.add_argument("--json", action="store_true", help="print JSON instead of tables")
    from benchsuite.commands.scale import add_scale_flags

    add_scale_flags(add_command("scale", help="step time, memory and FLOPs against tokens"))
    report = add_command("report", help="re-render tables and files from a run's store")
    report.add_argument("out", nargs="?", default=DEFAULT_OUT)
    data = add_command("data", help="manage real datasets")
    data_commands = data.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = data_commands.add_parser(
        "fetch", help="download a dataset (needs a network)", epilog=examples("data"),
        formatter_class=FORMATTER,
    )  # fmt: skip
    fetch.add_argument("dataset", help="a dataset a track can fetch (e.g. cifar10)")
    fetch.add_argument("--data-dir", help="where to put it (default: the data folder)")
    export = add_command("export", help="write every training run as one row")
    export.add_argument("out", nargs="?", default=DEFAULT_OUT)
    export.add_argument("--format", choices=("csv", "parquet", "json"), default="csv")
    export.add_argument("--output", help="file to write, - for standard output "
                        "(default: OUT/results.FORMAT)")  # fmt: skip
    export.add_argument("--failures", action="store_true", help="add failed runs (status=failed)")
    compare = add_command("compare", help="compare two finished runs seed by seed")
    compare.add_argument("a", help="output folder (or store file) of run A, the reference")
    compare.add_argument("b", help="output folder (or store file) of run B")
    compare.add_argument("--mixers", type=split_names, help="only these mixers")
    compare.add_argument("--json", action="store_true", help="print JSON instead of a table")
    contract = add_command("test", help="check mixers against the plugin contract kit")
    contract.add_argument("mixers", nargs="+", metavar="MIXER", help="registered mixer names")
    contract.add_argument("--tokens", type=split_names, default="8,16",
                          help="token counts to build the mixer with (default 8,16)")  # fmt: skip
    contract.add_argument("--dims", type=split_names, default="16,32",
                          help="model widths to build the mixer with (default 16,32)")  # fmt: skip
    contract.add_argument("--mixer-option", action="append", default=[], metavar="MIXER.KEY=VALUE",
                          help="a mixer option to build with (as for run)")  # fmt: skip
    completion = add_command("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")
    return parser


def _console(*, quiet: bool = False, stderr: bool = False):
    """A rich console on standard output (data) or standard error (progress, warnings, notes)."""
    from benchsuite.output.progress import console

    return console(quiet=quiet, stderr=stderr)


def _status(args: argparse.Namespace):
    """The console for progress, warnings and notes: standard error, silent under ``--quiet``."""
    return _console(quiet=getattr(args, "quiet", False), stderr=True)


def config_file(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The config file a run reads, and the design's line saying which and why."""
    if getattr(args, "config", None):
        return Path(args.config), f"{args.config} (--config; flags override it)"
    found = None if getattr(args, "no_config", False) else run_settings.find_config(Path())
    if found is None:
        return None, "none (defaults and flags)"
    return found, f"{found} (found in the working folder; flags override it)"


def settings_from(args: argparse.Namespace, path: Path | None) -> RunSettings:
    """The run settings: flags over the config file ``path`` (see :func:`config_file`) over the
    defaults."""
    from_file = run_settings.load_config(path) if path else {}
    flags = run_settings.from_flags(args)
    return run_settings.merge(from_file, flags)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from benchsuite import api
    from benchsuite.output.progress import progress_events
    from benchsuite.output.tables import print_report

    path, config_line = config_file(args)
    settings = settings_from(args, path)
    args.out = settings.out
    console, status = _console(quiet=args.quiet), _status(args)
    verbose = args.verbose and not args.quiet
    with progress_events(console, status, config=config_line, verbose=verbose) as events:
        summary = api.run(settings, events=events)
    print_report(summary.report, console)
    if summary.interrupted:
        _console(stderr=True).print("[yellow]interrupted:[/] the tables above hold what finished; "
                                    "run the same command again to resume")  # fmt: skip
        return summary.exit_code
    for warning in summary.warnings:
        status.print(f"[yellow]warning:[/] {escape(warning)}")
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
        print_listing(registry, _console(), _status(args))
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    import json

    from benchsuite.output.listing import plugins_data, print_plugins
    from benchsuite.registry import load_registry

    registry = load_registry(args.plugins_dir)
    if args.json:
        print(json.dumps(plugins_data(registry), indent=2))
    else:
        print_plugins(registry, _console())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from benchsuite import api
    from benchsuite.output.tables import print_report

    print_report(api.report(args.out), _console(quiet=args.quiet))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from benchsuite.commands.compare import compare_runs, load_run
    from benchsuite.output.tables import compare_table

    result = compare_runs(load_run(args.a), load_run(args.b), mixers=args.mixers)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        _console().print(compare_table(result))
    return 0


def cmd_scale(args: argparse.Namespace) -> int:
    import json

    from benchsuite.commands.scale import scale, settings_from
    from benchsuite.output.scaling import point_line, print_scaling, write_scaling
    from benchsuite.registry import load_registry

    status = _status(args)

    def on_point(mixer: str, point: dict[str, Any]) -> None:
        status.print(point_line(mixer, point), markup=False, highlight=False)

    result = scale(load_registry(args.plugins_dir), settings_from(args), on_point=on_point)
    written = write_scaling(result, args.out)
    page = written[0].with_name("scaling.html")  # written beside it; report.html links it
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print_scaling(result, _console())
    updated = f"; updated {page}" if page else ""
    status.print(f"wrote {written[0]} and {len(written) - 1} plots in plots/{updated}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from benchsuite.commands.export import export

    if args.output != "-":
        path, rows = export(args.out, args.format, args.output, include_failures=args.failures)
        _status(args).print(f"{rows} rows -> {path}", highlight=False)
        return 0
    import tempfile

    with tempfile.TemporaryDirectory() as folder:  # the writers take a path; copy it out whole
        path, rows = export(args.out, args.format, Path(folder) / f"results.{args.format}",
                            include_failures=args.failures)  # fmt: skip
        sys.stdout.buffer.write(path.read_bytes())
    _status(args).print(f"{rows} rows -> standard output", highlight=False)
    return 0


def cmd_new_mixer(args: argparse.Namespace) -> int:
    from benchsuite.registry.scaffold import new_mixer

    folder = new_mixer(args.name, args.path)
    _status(args).print(f"wrote {folder}; next: pip install -e {folder}, then see "
                        f"{folder / 'README.md'}", highlight=False)  # fmt: skip
    return 0


# Arguments that name files or folders, completed as such by the shell.
PATH_ARGUMENTS = {"out": "dir", "plugins_dir": "dir", "data_dir": "dir", "path": "dir",
                  "config": "file", "output": "file", "a": "file", "b": "file"}  # fmt: skip


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser below it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    parser = _parser()
    kinds = {"dir": shtab.DIRECTORY, "file": shtab.FILE}
    for sub in _parsers(parser):
        for action in sub._actions:
            if action.dest in PATH_ARGUMENTS:
                action.complete = kinds[PATH_ARGUMENTS[action.dest]]  # type: ignore[attr-defined]
    print(shtab.complete(parser, args.shell))
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


def cmd_test(args: argparse.Namespace) -> int:
    from benchsuite.registry import load_registry, variants

    sizes = {"--tokens": args.tokens, "--dims": args.dims}
    for flag, values in sizes.items():
        if not values or not all(v.isdigit() and int(v) > 0 for v in values):
            raise UsageError(f"{flag} takes whole numbers > 0, e.g. 8,16; got {','.join(values)!r}")
    registry = load_registry(args.plugins_dir)
    for failure in registry.failures:
        print(f"warning: plugin {failure.name!r} not loaded: {failure.reason}", file=sys.stderr)
    registry.check_loaded("mixer", args.mixers)
    chosen = variants.select(args.mixers, registry.mixers, registry.unavailable)
    options = parse_assignments(args.mixer_option, "--mixer-option")
    if unknown := sorted(set(options) - {v.base for v in chosen}):
        raise UsageError(f"--mixer-option {unknown[0]}: not among the mixers tested")
    # every mistake before the first check runs; a variant's own options win
    resolved = variants.variant_options(chosen, registry.mixers, options)
    from benchsuite.testing import run_contract  # torch: only once the names are known

    tokens, dims = ([int(v) for v in values] for values in sizes.values())
    failed = 0
    for variant in chosen:
        name, mixer = variant.name, variants.lookup(registry.mixers, variant.name)
        for outcome in run_contract(mixer, tokens=tokens, dims=dims, options=resolved[name]):
            failed += outcome.ran and not outcome.passed
            verdict = "passed" if outcome.passed else f"FAILED: {outcome.reason}"
            if not outcome.ran:
                verdict = f"not run: {outcome.reason}"
            print(f"{name} {outcome.check}: {verdict}")
    return 1 if failed else 0


COMMANDS = {
    "data": cmd_data,
    "new-mixer": cmd_new_mixer,
    "export": cmd_export,
    "run": cmd_run,
    "list": cmd_list,
    "plugins": cmd_plugins,
    "report": cmd_report,
    "compare": cmd_compare,
    "completion": cmd_completion,
    "scale": cmd_scale,
    "test": cmd_test,
}


def _log_traceback(args: Any) -> Path | None:
    """Save the traceback of an unexpected error in the run's own output folder: only a folder
    that already holds a run's store (nothing is created, no other folder is written)."""
    from benchsuite.results.store import FILENAME

    out = getattr(args, "out", None)
    if not out or not (Path(out) / FILENAME).is_file():
        return None
    path = Path(out) / "benchsuite-error.log"
    try:
        path.write_text(traceback.format_exc())
    except OSError:
        return None
    return path


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        raise
    except (UsageError, PluginError, RunError) as error:
        if args.debug:
            traceback.print_exc()
        print(f"error: {error}", file=sys.stderr)
        return 1 if isinstance(error, RunError) else 2
    except KeyboardInterrupt:
        resumable = args.command == "run"
        print("interrupted" + (": finished jobs are saved; run the same command again to resume"
                               if resumable else ""), file=sys.stderr)  # fmt: skip
        return 130
    except Exception as error:
        if args.debug:
            traceback.print_exc()
        log = _log_traceback(args)
        where = f"traceback in {log}" if log else "--debug shows the traceback"
        print(f"error: {one_line(error)} ({where})", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``benchsuite`` console script; returns the exit code.

    A pipe closed early (``benchsuite list --json | head -1``) ends quietly with status 0.
    """
    try:
        code = _dispatch(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python's advice: point standard output at devnull so the flush at exit cannot fail
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())

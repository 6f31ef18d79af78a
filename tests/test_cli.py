"""The command line as a user meets it, through the real ``benchsuite`` entry point, in this
process (``invoke``) or in a subprocess where the process is the subject (closed pipes, a terminal,
Ctrl-C, what a fresh interpreter imports): help and version, data on stdout and the rest on stderr,
quiet and verbose, where the error log goes, JSON of plugins and listings, export to stdout,
executor checks before anything is printed, compare naming what differs, shell completion, config
discovery, dependencies."""

from __future__ import annotations

import ast
import contextlib
import csv
import dataclasses
import io
import json
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from helpers import TINY, interruptible, invoke, run_cli

from benchsuite import __version__
from benchsuite import settings as run_settings
from benchsuite.cli import _parser
from benchsuite.cli.completion import parsers as _parsers
from benchsuite.contract_settings import ContractSettings

ROOT = Path(__file__).parent.parent
RUN = [
    "run",
    "--tracks",
    "sequence",
    "--mixers",
    "dense,identity",
    "--seeds",
    "2",
    "--executor",
    "local",
    "--no-config",
    *TINY,
]

GOOD_PLUGIN = """
from benchsuite import Mixer, Option, hookimpl


def build(tokens, dim, gain=1.0):
    from torch import nn

    return nn.Identity()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="same", build=build, description="identity again",
                   options=(Option("gain", float, 1.0, "a scale nobody reads"),)))
"""
BROKEN_PLUGINS = {
    "broken_import": "import not_a_module_anywhere\n",
    "raising_hook": (
        "from benchsuite import hookimpl\n\n@hookimpl\n"
        "def benchsuite_register_mixers(register):\n    raise RuntimeError('hook exploded')\n"
    ),
}


def verbs() -> list[str]:
    """Every sub-command's path, e.g. ``run`` or ``data fetch``, read from the parser."""
    found = []
    for parser in _parsers(_parser())[1:]:
        found.append(parser.prog.removeprefix("benchsuite "))
    return found


def one_line_error(result: subprocess.CompletedProcess, code: int, needle: str) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert needle in result.stderr, result.stderr


# ----------------------------------------------------------------------------- 1: the basics


def test_version_and_bare_command_prints_help_with_one_line_per_command(tmp_path):
    version = invoke("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout == f"benchsuite {__version__}\n"
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert project["project"]["version"] == __version__
    bare = invoke(cwd=tmp_path)
    assert bare.returncode == 0 and bare.stderr == "", bare.stderr
    listed = re.findall(r"^    (\S+) +\S.*$", bare.stdout, re.MULTILINE)
    assert listed == [v for v in verbs() if " " not in v]  # each with its help on one line
    assert "examples:" in bare.stdout
    assert not any(tmp_path.iterdir())


def test_every_command_help_ends_with_two_examples():
    for verb in verbs():
        shown = invoke(*verb.split(), "--help")
        assert shown.returncode == 0, shown.stderr
        epilog = shown.stdout.partition("\nexamples:\n")[2]
        examples = [line for line in epilog.splitlines() if line.startswith("  benchsuite ")]
        assert len(examples) == 2, f"`benchsuite {verb} --help` has no two examples"


def test_a_closed_pipe_ends_quietly_and_creates_nothing(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head -1` that has already exited
    try:
        for args in (["list", "--json"], ["list"], ["plugins"], [], ["completion", "bash"]):
            done = subprocess.run(
                [sys.executable, "-m", "benchsuite.cli", *args],
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
                timeout=120,
            )
            assert (done.returncode, done.stderr) == (0, ""), args
    finally:
        os.close(write_end)
    assert not any(tmp_path.iterdir())  # no benchsuite-results/, no error log


def run_in_terminal(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``benchsuite ARGS`` with standard error on a terminal (a pseudo-terminal) and standard
    output in a file, as in ``benchsuite run > tables.txt``; the terminal's text has no colours."""
    main, terminal = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm", "NO_COLOR": "1"}
    command = [sys.executable, "-m", "benchsuite.cli", *args]
    with tempfile.TemporaryFile("w+") as stdout:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=terminal)
        os.close(terminal)
        shown = b""
        with contextlib.suppress(OSError):  # EIO once the process has closed the terminal
            while chunk := os.read(main, 65536):
                shown += chunk
        os.close(main)
        process.wait(timeout=600)
        stdout.seek(0)
        text = stdout.read()
    stderr = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode(errors="replace"))
    return subprocess.CompletedProcess(args, process.returncode, text, stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished tiny runs that differ in their budget (steps) and one track option."""
    root = tmp_path_factory.mktemp("cli")
    first = run_in_terminal(*RUN, "--out", str(root / "a"), cwd=root)
    assert first.returncode == 0, first.stderr
    second = invoke(
        *RUN,
        "--out",
        str(root / "b"),
        "--budget",
        "steps=31",
        "--track-option",
        "sequence.noise=0.2",
        "--verbose",
        cwd=root,
    )
    assert second.returncode == 0, second.stderr
    return root, first, second


def test_data_goes_to_stdout_and_progress_to_stderr(runs):
    _, first, second = runs
    assert "sequence —" in first.stdout and "jobs: 4 trained, 0 reused, 0 failed" in first.stdout
    assert "design: per-track claims, 2 paired seeds" in first.stdout
    assert re.search(r"train .* 4/4", first.stderr)  # the progress bar, on the terminal
    assert "sequence —" not in first.stderr and "jobs:" not in first.stderr
    assert not re.search(r"train .* 4/4", second.stderr)  # not in a pipe: one line per job


def test_quiet_prints_errors_and_the_summary_line_and_verbose_one_line_per_job(runs):
    root, _, second = runs
    jobs = [line for line in second.stderr.splitlines() if line.startswith("trained sequence/")]
    assert len(jobs) == 4 and all(re.search(r"seed \d+ in [\d.]+ s$", line) for line in jobs)
    again = invoke(*RUN, "--out", str(root / "a"), "-q", cwd=root)
    assert (again.returncode, again.stderr) == (0, "")
    (last,) = again.stdout.splitlines()  # the run's summary line, and nothing else
    assert last.startswith("jobs: 0 trained, 4 reused, 0 failed; report: ")
    mistake = invoke(*RUN, "--out", str(root / "a"), "-q", "--seeds", "1", cwd=root)
    one_line_error(mistake, 2, "--seeds must be at least 2")


def test_interrupted_is_said_on_stderr(tmp_path):
    command = [sys.executable, "-m", "benchsuite.cli", *RUN, "--out", str(tmp_path / "out")]
    env = {**os.environ, "COLUMNS": "200"}
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=interruptible,
    ) as process:
        head = process.stdout.readline()  # the design: the run has started
        process.send_signal(signal.SIGINT)  # Ctrl-C
        stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert head.startswith("design:") and "interrupted" not in head + stdout
    assert "interrupted" in stderr and "run the same command again to resume" in stderr


# ----------------------------------------------------------------------------- 2: the error log


def test_usage_errors_write_no_log_and_create_nothing(tmp_path):
    real_log = tmp_path / "benchsuite-results" / "benchsuite-error.log"
    real_log.parent.mkdir()
    real_log.write_text("the traceback of a real run")
    mistake = invoke("list", "--costs", "--tracks", "sequense", cwd=tmp_path)
    one_line_error(mistake, 2, "unknown track 'sequense'")
    assert real_log.read_text() == "the traceback of a real run"
    one_line_error(invoke("report", "no-such-run", cwd=tmp_path), 2, "no-such-run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchsuite-results"]


def test_an_unexpected_error_logs_its_traceback_in_the_runs_folder(runs, tmp_path):
    root, _, _ = runs
    blocked = tmp_path / "a-folder"
    blocked.mkdir()
    failed = invoke("export", str(root / "a"), "--output", str(blocked), cwd=tmp_path)
    log = root / "a" / "benchsuite-error.log"
    one_line_error(failed, 1, f"IsADirectoryError: [Errno 21] Is a directory: '{blocked}'")
    assert f"(traceback in {log})" in failed.stderr
    assert "Traceback (most recent call last)" in log.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["a-folder"]
    log.unlink()


# ----------------------------------------------------------------------------- 3: data out


def test_plugins_json_says_what_each_plugin_registered_and_why_one_failed(tmp_path):
    (tmp_path / "good.py").write_text(GOOD_PLUGIN)
    for name, text in BROKEN_PLUGINS.items():
        (tmp_path / f"{name}.py").write_text(text)
    shown = invoke("--plugins-dir", str(tmp_path), "plugins", "--json")
    assert shown.returncode == 0, shown.stderr
    plugins = {p["name"]: p for p in json.loads(shown.stdout)}
    keys = {"name", "distribution", "version", "source", "mixers", "tracks", "failure"}
    assert all(keys <= set(p) for p in plugins.values())
    good = plugins["good"]
    assert (good["mixers"], good["tracks"], good["failure"]) == (["same"], [], None)
    assert (good["distribution"], good["source"]) == ("plugins-dir", str(tmp_path / "good.py"))
    assert plugins["sequence"]["tracks"] == ["sequence", "sequence_long"]
    assert plugins["dense"]["distribution"] == "benchsuite"
    assert plugins["dense"]["version"] == __version__
    assert "ModuleNotFoundError" in plugins["broken_import"]["failure"]
    assert not plugins["broken_import"]["loaded"]
    assert "hook exploded" in plugins["raising_hook"]["failure"]
    table = invoke("--plugins-dir", str(tmp_path), "plugins")
    assert "mixer same" in table.stdout and "track sequence_long" in table.stdout


def test_list_json_has_option_types_and_help_and_the_failures(tmp_path):
    (tmp_path / "good.py").write_text(GOOD_PLUGIN)
    (tmp_path / "broken_import.py").write_text(BROKEN_PLUGINS["broken_import"])
    listed = invoke("--plugins-dir", str(tmp_path), "list", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["mixers"]["same"]["options"] == {
        "gain": {"type": "float", "default": 1.0, "help": "a scale nobody reads", "choices": []}
    }
    lookback = data["tracks"]["sequence"]["options"]["lookback"]
    assert lookback["type"] == "int" and lookback["help"]
    (failure,) = data["failures"]
    assert failure["name"] == "broken_import" and "ModuleNotFoundError" in failure["reason"]
    table = invoke("--plugins-dir", str(tmp_path), "list")
    assert "1 plugin(s) failed to load" in table.stderr
    assert "failed to load" not in table.stdout


def test_export_to_stdout_writes_no_file(runs, tmp_path):
    root, _, _ = runs
    exported = invoke("export", str(root / "a"), "--output", "-", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(rows) == 8 and {row["mixer"] for row in rows} == {"dense", "identity"}
    assert exported.stderr.strip() == "8 rows -> standard output"
    as_json = invoke("export", str(root / "a"), "--output", "-", "--format", "json", "-q")
    assert len(json.loads(as_json.stdout)) == 8 and as_json.stderr == ""
    assert not any(tmp_path.iterdir()) and not (root / "a" / "results.csv").exists()


# ----------------------------------------------------------------------------- 4: executors


def test_ray_missing_is_refused_before_anything_is_printed_or_written(tmp_path):
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    env = {"PYTHONPATH": os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    # a subprocess: only a fresh interpreter sees the shadowing PYTHONPATH
    refused = run_cli(*RUN, "--executor", "ray", "--out", str(out), env=env, cwd=tmp_path)
    one_line_error(refused, 2, "--executor ray needs Ray: pip install 'benchsuite[ray]'")
    assert refused.stdout == "" and not out.exists()


def test_an_unreachable_ray_address_is_refused_before_anything_is_printed(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed")
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "out"
    refused = invoke(
        *RUN, "--executor", "ray", "--address", f"127.0.0.1:{port}", "--out", str(out), cwd=tmp_path
    )
    one_line_error(refused, 2, f"cannot reach the Ray cluster at 127.0.0.1:{port}")
    assert refused.stdout == "" and not out.exists()
    malformed = invoke(*RUN, "--executor", "ray", "--address", "headnode", cwd=tmp_path)
    one_line_error(malformed, 2, "--address 'headnode': expected HOST:PORT")


# ----------------------------------------------------------------------------- 5: compare


def test_compare_names_the_settings_that_differ(runs):
    root, _, _ = runs
    refused = invoke("compare", str(root / "a"), str(root / "b"))
    one_line_error(refused, 2, "track 'sequence': budget signatures differ in steps (30 vs 31)")
    assert "track_options" in refused.stderr and "'noise': 0.2" in refused.stderr
    assert "dim (" not in refused.stderr  # what agrees is not named


# ----------------------------------------------------------------------- 9: completion, config


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (with the script loaded)."""
    line = " ".join(("benchsuite", *words))
    probe = (
        f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words)}; "
        f"COMP_LINE='{line}'; COMP_POINT={len(line)}; _shtab_benchsuite; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion_completes_commands_flags_and_choices(tmp_path):
    script = tmp_path / "benchsuite.bash"
    made = invoke("completion", "bash")
    assert made.returncode == 0, made.stderr
    script.write_text(made.stdout)
    assert _complete(script, "ru") == ["run"]
    assert _complete(script, "export", "--for") == ["--format"]
    assert _complete(script, "export", "--format", "") == ["csv", "parquet", "json"]
    assert "--costs" in _complete(script, "list", "--")
    assert _complete(script, "data", "") == ["fetch"]


@pytest.mark.parametrize(("shell", "first"), [("zsh", "#compdef benchsuite"), ("fish", "#")])
def test_zsh_and_fish_completion_cover_every_command(shell, first, tmp_path):
    made = invoke("completion", shell)
    assert made.returncode == 0 and made.stdout.startswith(first), made.stderr
    for verb in verbs():
        assert verb.split()[-1] in made.stdout
    if shell == "fish":
        assert "complete -c benchsuite -n '_shtab_benchsuite_using export' -l format" in made.stdout
    if shutil.which(shell):  # a syntax check where the shell is installed
        script = tmp_path / f"benchsuite.{shell}"
        script.write_text(made.stdout)
        check = [shell, "-n", str(script)] if shell == "zsh" else [shell, "--no-execute", script]
        assert subprocess.run(check, capture_output=True, timeout=60).returncode == 0


# A design too small for Holm: --strict refuses it after printing the design, before training.
STRICT = """
[run]
tracks = ["sequence"]
mixers = ["dense", "identity"]
seeds = 3
strict = true
executor = "local"
"""


def test_a_config_is_found_in_the_working_folder_and_flags_override_it(tmp_path):
    (tmp_path / "benchsuite.toml").write_text(STRICT)
    found = invoke("run", cwd=tmp_path)
    assert found.returncode == 2 and "(--strict)" in found.stderr
    assert "design: per-track claims, 3 paired seeds (as given)" in found.stdout
    assert "config: benchsuite.toml (found in the working folder" in found.stdout
    flagged = invoke("run", "--seeds", "4", cwd=tmp_path)
    assert "design: per-track claims, 4 paired seeds (as given)" in flagged.stdout
    (tmp_path / "benchsuite.toml").unlink()
    pyproject = "[project]\nname = 'mine'\n\n" + STRICT.replace("[run]", "[tool.benchsuite.run]")
    (tmp_path / "pyproject.toml").write_text(pyproject.replace("seeds = 3", "seeds = 5"))
    from_pyproject = invoke("run", cwd=tmp_path)
    assert "design: per-track claims, 5 paired seeds (as given)" in from_pyproject.stdout
    assert "config: pyproject.toml (found in the working folder" in from_pyproject.stdout
    ignored = invoke(
        "run",
        "--no-config",
        "--tracks",
        "sequence",
        "--mixers",
        "dense,identity",
        "--seeds",
        "3",
        "--strict",
        cwd=tmp_path,
    )
    assert "config: none" in ignored.stdout and ignored.returncode == 2
    (tmp_path / "pyproject.toml").write_text("[tool.benchsuite.run]\nseedz = 3\n")
    one_line_error(
        invoke("run", cwd=tmp_path), 2, "pyproject.toml [tool.benchsuite]: unknown key run.seedz"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml"]


def test_every_on_off_setting_can_be_undone_from_the_command_line(tmp_path):
    """A config file's ``strict = true`` (or any switch) is undone by ``--no-strict``."""
    from benchsuite.cli.run import settings_from

    switches = [f for f in run_settings.fields() if f.metadata["kind"] == run_settings.SWITCH]
    assert {f.name for f in switches} >= {"strict", "allow_failures", "batch_seeds"}
    config = tmp_path / "bench.toml"
    config.write_text("[run]\n" + "".join(f"{f.name} = true\n" for f in switches))
    flags = [f"--no-{run_settings.flag_of(f)[2:]}" for f in switches]
    undone = settings_from(_parser().parse_args(["run", "--config", str(config), *flags]), config)
    kept = settings_from(_parser().parse_args(["run", "--config", str(config)]), config)
    none = settings_from(_parser().parse_args(["run", *flags]), None)
    on = settings_from(
        _parser().parse_args(["run", *(run_settings.flag_of(f) for f in switches)]), None
    )
    for spec in switches:
        assert getattr(undone, spec.name) is False, spec.name
        assert getattr(kept, spec.name) is True and getattr(on, spec.name) is True, spec.name
        assert getattr(none, spec.name) is False, spec.name
    assert run_settings.RunSettings().batch_seeds is None  # unset: on with cuda, decided later


def _verb(name: str):
    return next(p for p in _parsers(_parser()) if p.prog == f"benchsuite {name}")


def test_each_verb_s_flags_are_the_fields_of_its_settings_schema():
    """``list --costs`` takes the run's own flags (same help), ``scale`` one flag per field of
    ``ScaleSettings``, ``test`` of ``ContractSettings``; nothing given reads back the defaults, and
    the contract kit's sizes are the ``test`` verb's."""
    import inspect

    from benchsuite import testing
    from benchsuite.cli import arguments, listing
    from benchsuite.commands.scale import ScaleSettings

    helps = {a.dest: a.help for a in _verb("list")._actions}
    for spec in run_settings.fields():
        if spec.name in listing.COSTS:
            assert helps[spec.name].startswith(spec.metadata["help"]), spec.name
    for verb, settings in (("scale", ScaleSettings), ("test", ContractSettings)):
        dests = {a.dest for a in _verb(verb)._actions}
        flagged = {f.name for f in dataclasses.fields(settings) if f.metadata}
        assert flagged <= dests and len(flagged) >= 3, verb
    assert arguments.read(ScaleSettings, _parser().parse_args(["scale"])) == ScaleSettings()
    given = arguments.read(
        ScaleSettings,
        _parser().parse_args(
            ["scale", "--tokens", "128,64,64", "--max-memory", "512M", "--mixer-option", "fnet.x=1"]
        ),
    )
    assert given.tokens == (64, 128) and given.max_memory == 2**29
    assert given.mixer_options == {"fnet": {"x": "1"}} and given.width == ScaleSettings.width
    tested = arguments.read(ContractSettings, _parser().parse_args(["test", "dense"]))
    assert (tested.mixers, tested.tokens, tested.dims) == (["dense"], (8, 16), (16, 32))
    kit = inspect.signature(testing.run_contract).parameters
    assert (kit["tokens"].default, kit["dims"].default) == (tested.tokens, tested.dims)


TYPES = {
    run_settings.NAMES: "list of names",
    run_settings.TEXT: "text",
    run_settings.WHOLE: "whole number",
    run_settings.NUMBER: "number",
    run_settings.SWITCH: "true or false",
    run_settings.OPTIONS: "table of option values",
    run_settings.PAIRS: "table",
    run_settings.GRID: "table of number lists",
    run_settings.AXES: "table of value lists",
}


def reference_row(spec: dataclasses.Field) -> str:
    """The row of docs/configuration.md for one run setting."""
    kind, section = spec.metadata["kind"], spec.metadata["section"]
    key = {
        run_settings.OPTIONS: f"[{section}.NAME] KEY = VALUE",
        run_settings.PAIRS: f"[{section}] KEY = VALUE",
        run_settings.GRID: "[tracks.NAME.grid] AXIS = [V1, V2]",
        run_settings.AXES: "[axes] KEY = [V1, V2]",
    }.get(kind, f"run.{spec.name}")
    default = spec.default
    shown = "—" if default in (dataclasses.MISSING, None) else f"`{json.dumps(default)}`"
    flag = run_settings.flag_of(spec)
    if kind == run_settings.SWITCH:
        flag += f"` / `--no-{flag[2:]}"
    return f"| `{key}` | `{flag}` | {TYPES[kind]} | {shown} | {spec.metadata['help']} |"


def test_configuration_docs_list_every_setting_and_their_examples_load(tmp_path):
    doc = (ROOT / "docs" / "configuration.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    expected = [reference_row(spec) for spec in run_settings.fields()]
    assert [r for r in rows if r.split("|")[2].strip().startswith("`--")] == expected
    for name, text in re.findall(r"```toml\n# (\S+)\n(.*?)```", doc, re.DOTALL):
        (tmp_path / name).write_text(text)
        assert run_settings.load_config(tmp_path / name)


# ----------------------------------------------------------------------------- 10: dependencies


def _imported_modules() -> set[str]:
    found = set()
    for folder in ("benchsuite", "plugins", "tracks"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found.update(alias.name.partition(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.partition(".")[0])
    return found


def test_every_dependency_is_imported_and_pip_check_is_clean():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[; ]", dep)[0].lower() for dep in project["dependencies"]}
    distributions = packages_distributions()
    used = {
        dist.lower() for module in _imported_modules() for dist in distributions.get(module, [])
    }
    assert declared - used == set(), "declared but never imported"
    checked = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

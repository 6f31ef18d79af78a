"""The docs against the code: every ``benchsuite`` command line in README.md, docs/*.md, the
``--help`` examples and the README that ``benchsuite new-mixer`` writes parses with the real
parser (a removed or renamed flag fails here), the cheap ones run, the tutorial's smoke run exits
0, the presets table of docs/tracks.md is each track's ``budgets``, and its table of what each
track measures has the format ``benchmarks/track_table.py`` writes."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
from helpers import default_tracks, invoke

from benchsuite import cli
from benchsuite.cli import arguments
from benchsuite.registry import load_registry
from benchsuite.registry.scaffold import new_mixer
from benchsuite.settings import RunSettings

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors

ROOT = Path(__file__).parent.parent
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`(benchsuite\s[^`]+)`")
SHELL = {"", "sh", "bash", "shell", "console"}
PLACEHOLDERS = {"...", "…"}
# Commands that need nothing but the registry: run in-process when their names are all known.
CHEAP = {"list", "plugins", "completion", "test"}


def _command(line: str) -> str | None:
    """The ``benchsuite ...`` part of a shell line, without environment assignments, comments,
    pipes and redirections; None when the line is not a benchsuite command."""
    line = re.sub(r"^\$\s+", "", line.strip())
    line = re.sub(r"^(\w+=\S*\s+)+", "", line)
    if not line.startswith("benchsuite ") and line != "benchsuite":
        return None
    return re.split(r"\s#|\s*[|>]", line, maxsplit=1)[0].strip()


def _shell_lines(text: str) -> list[str]:
    """The lines of the shell code in markdown ``text``: fenced shell blocks and indented blocks,
    with ``\\`` continuations joined, and inline code spans that start with ``benchsuite``."""
    lines = []
    for lang, body in FENCE.findall(text):
        if lang in SHELL:
            lines += body.replace("\\\n", " ").splitlines()
    outside = FENCE.sub("", text)
    lines += [line for line in outside.replace("\\\n", " ").splitlines() if line.startswith("    ")]
    lines += [" ".join(span.split()) for span in INLINE.findall(outside)]
    return lines


def _documents(tmp: Path) -> dict[str, str]:
    """Every markdown text with command lines: README.md, docs/*.md, the scaffold's README (as
    ``benchsuite new-mixer mymix`` writes it), and the ``--help`` examples."""
    texts = {"README.md": (ROOT / "README.md").read_text()}
    texts |= {f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
    texts["new-mixer README.md"] = (new_mixer("mymix", tmp) / "README.md").read_text()
    examples = [command for pairs in cli.EXAMPLES.values() for command, _ in pairs]
    texts["cli.EXAMPLES"] = "```sh\n" + "\n".join(examples) + "\n```\n"
    return texts


def doc_commands(tmp: Path) -> list[tuple[str, list[str]]]:
    """(document, argv after ``benchsuite``) of every command line in the docs."""
    found = []
    for name, text in _documents(tmp).items():
        for line in _shell_lines(text):
            command = _command(line)
            if command is not None:
                argv = [a for a in shlex.split(command)[1:] if a not in PLACEHOLDERS]
                found.append((name, argv))
    return found


@pytest.fixture(scope="module")
def commands(tmp_path_factory) -> list[tuple[str, list[str]]]:
    return doc_commands(tmp_path_factory.mktemp("docs"))


def test_the_docs_have_command_lines_of_every_command(commands):
    used = {argv[0] for _, argv in commands if argv and not argv[0].startswith("-")}
    assert used >= set(cli.COMMANDS) - {"data"} | {"run"}
    assert len(commands) > 60


def test_every_command_line_in_the_docs_parses(commands, capsys):
    parser = cli._parser()
    wrong = []
    for document, argv in commands:
        try:
            args = parser.parse_args(argv)
            if args.command == "run":  # the flags' own formats: NAME.KEY=VALUE, KEY=VALUE, ...
                arguments.given(RunSettings, args)
        except SystemExit as stop:
            if stop.code:
                wrong.append(
                    f"{document}: benchsuite {shlex.join(argv)}: {capsys.readouterr().err}"
                )
        except Exception as error:
            wrong.append(f"{document}: benchsuite {shlex.join(argv)}: {error}")
    assert wrong == []


def test_a_removed_flag_fails_the_check():
    text = "```sh\nbenchsuite run --tracks sequence --sweep-seeds 1\n```\n"
    [line] = _shell_lines(text)
    with pytest.raises(SystemExit):
        cli._parser().parse_args(shlex.split(_command(line))[1:])


def test_the_cheap_command_lines_run(commands, capsys):
    registry = load_registry()
    known = set(registry.mixers) | set(registry.tracks)
    ran, failed = set(), []
    for document, argv in commands:
        if "--help" in argv:  # parsed above; printing help is not a run
            continue
        args = cli._parser().parse_args(argv)
        names = [*(getattr(args, "mixers", None) or ()), *(getattr(args, "tracks", None) or ())]
        cheap = args.command in CHEAP and not getattr(args, "costs", False)
        if not cheap or args.plugins_dir or not set(names) <= known or tuple(argv) in ran:
            continue
        ran.add(tuple(argv))
        code = cli.main(argv)
        output = capsys.readouterr()
        if code != 0:
            failed.append(f"{document}: benchsuite {shlex.join(argv)} -> {code}: {output.err}")
    assert failed == [] and len(ran) >= 5, ran


@pytest.mark.slow
def test_the_tutorial_smoke_run_exits_0(tmp_path):
    tutorial = (ROOT / "docs" / "writing-a-mixer.md").read_text()
    section = tutorial.split("## 5. A smoke run", 1)[1].split("\n## ", 1)[0]
    [argv] = [shlex.split(c)[1:] for c in map(_command, _shell_lines(section)) if c]
    assert argv[0] == "run" and "dense,gated" in argv
    folder = new_mixer("gated", tmp_path)
    done = invoke("--plugins-dir", str(folder), *argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "smoke" / "sequence" / "gated.json").is_file()


def _grid_text(values: list[float]) -> str:
    return f"{values[0]:g} … {values[-1]:g}"


def test_the_presets_table_is_the_tracks_budgets():
    doc = (ROOT / "docs" / "tracks.md").read_text()
    table = doc.split("## Presets of the built-in tracks", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("| ") and not line.startswith("| track")
    ]
    tracks = load_registry().tracks
    mad = {name for name, t in tracks.items() if t.module.endswith(".mad")}
    covered = set()
    for names, preset, steps, stopping, batch, dim, depth, grid in rows:
        group = sorted(mad) if names == "MAD tracks" else names.split(", ")
        for name in group:
            budget = tracks[name].budget(preset)
            rule = (
                f"every {budget.eval_every}, patience {budget.patience}, {budget.checkpoint}"
                if budget.eval_every
                else "—"
            )
            if budget.min_steps:
                rule += f", at least {budget.min_steps}"
            if budget.halve_at:
                rule += f"; grid halved at {', '.join(map(str, budget.halve_at))}"
            if budget.schedule == "plateau":
                rule += (
                    f"; plateau schedule: warm-up {budget.warmup}, {budget.cuts} cut of "
                    f"×{budget.cut_factor:g}"
                )
            assert stopping == rule, name
            lrs = [float(point["lr"]) for point in budget.grid]
            decay = {float(point.get("weight_decay", 0.0)) for point in budget.grid}
            assert (int(steps), int(batch), int(dim)) == (
                budget.steps,
                budget.batch_size,
                budget.dim,
            ), name
            assert int(depth.split()[0]) == budget.depth, name
            if " × weight decay " in grid:  # a product grid: every lr with every decay
                lr_text, decay_text = grid.split(" (")[0].split(" × weight decay ")
                listed = (
                    {float(v) for v in lr_text.split(", ")},
                    {float(v) for v in decay_text.split(", ")},
                )
                assert listed == (set(lrs), decay), name
                assert len(budget.grid) == len(listed[0]) * len(listed[1]), name
                covered.add((name, preset))
                continue
            lr_text, decay_text = grid.split("; ")
            low, high = (float(v) for v in lr_text.split(" … "))
            assert (low, high, decay) == (lrs[0], lrs[-1], {float(decay_text)}), name
            covered.add((name, preset))
    assert covered == {(n, p) for n, t in tracks.items() for p in t.budgets}
    rest = doc.replace(table, "")
    assert not re.search(r"\blr [0-9.e-]+ … ", rest), "an lr grid outside the presets table"


def _track_table_script():
    """benchmarks/track_table.py, loaded as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "track_table", ROOT / "benchmarks" / "track_table.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_track_table_has_the_scripts_format(finished_run):
    """The table of docs/tracks.md "What each track measures" has the header and column count
    the script writes from a real report, and a row per default track: the format, not the
    numbers (they are those of the run its first sentence names)."""
    script = _track_table_script()
    report, block = script.generate(finished_run)
    written = [line for line in block.splitlines() if line.startswith("|")]
    doc = (ROOT / "docs" / "tracks.md").read_text()
    section = doc.split("## What each track measures, on the default run", 1)[1].split("\n## ")[0]
    documented = [line for line in script.block_of(section).splitlines() if line.startswith("|")]
    assert documented[0] == written[0] == script.HEADER
    assert {len(script.cells_of(line)) for line in written + documented} == {len(script.COLUMNS)}
    assert len(written) == 2 + len(report["tracks"])
    own = f"{script.BEGIN}\n{block}\n{script.END}"
    assert script.format_problem(own, list(report["tracks"])) is None
    assert script.format_problem(doc, default_tracks()) is None
    assert "lists tracks" in script.format_problem(doc, [*default_tracks(), "extra"])
    narrower = doc.replace(script.HEADER, script.HEADER.rsplit(" | ", 1)[0] + " |")
    assert "header" in script.format_problem(narrower, default_tracks())


def test_the_troubleshooting_budget_row_names_every_key_the_budget_takes():
    """The row of a bad ``--budget`` lists the keys ``--budget`` accepts, every one, in the
    budget's order (it listed 4 of 15)."""
    from benchsuite.budget import given_keys

    text = (ROOT / "docs" / "troubleshooting.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `unknown budget key"))
    assert f"valid keys: {', '.join(given_keys())} (" in row


def test_the_exit_codes_documented_are_those_the_cli_returns_on_signals():
    """Both exit-code tables name 130 (SIGINT) and 143 (SIGTERM), the codes a run returns."""
    from benchsuite.execute.interrupts import exit_code

    for page in ("troubleshooting.md", "running.md"):
        text = (ROOT / "docs" / page).read_text()
        for name in ("SIGINT", "SIGTERM"):
            assert f"| {exit_code(name)}" in text or f", {exit_code(name)} |" in text, (page, name)
            assert name in text


PLACE = re.compile(r"`([\w/]+\.py):(\d+)` \(`([\w.]+)")


def test_the_records_path_in_the_architecture_points_at_its_code():
    """Each ``file:line`` of docs/architecture.md's path of a job's result names the line that
    defines or calls what it says (it moves when the code does)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    places = PLACE.findall(text[text.index("from the trainer to the page") :])
    assert len(places) >= 7
    for path, line, name in places:
        source = (ROOT / "benchsuite" / path).read_text().splitlines()
        assert name.rpartition(".")[2] in source[int(line) - 1], (path, line, name)

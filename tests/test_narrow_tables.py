"""``COLUMNS=80 benchsuite report OUT`` splits no verdict, word or number across lines.

The real CLI prints the report of the tiny run of test_html.py at 80 columns; the same report
printed 250 columns wide is the reference. Every number of the wide print must appear whole in
the narrow one and the narrow one may hold no other (a number folded across lines leaves
fragments such as ``0.0`` and ``3``); every verdict appears whole; no line is wider than 80. The
check is shown to catch rich's own folding of the wide table at 80 columns.
"""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from helpers import invoke
from rich.cells import cell_len
from rich.console import Console

from benchsuite.output import tables, track_tables
from benchsuite.output.palette import verdict
from benchsuite.results.schema import Analysis

NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?(?:e[+-]\d+)?[kMGT%]?")
BOX = re.compile(r"[│┃┆┊║|]")


def numbers_in(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def words_in(text: str) -> set[str]:
    return {word for line in text.splitlines() for word in BOX.sub(" ", line).split()}


def printed(renderable, width: int) -> str:
    console = Console(file=io.StringIO(), width=width)
    console.print(renderable)
    return console.file.getvalue()


@pytest.fixture(scope="module")
def narrow(tmp_path_factory, finished_run) -> tuple[str, Analysis]:
    """``benchsuite report`` at COLUMNS=80 on a copy of the run's store, and its report.json."""
    out = tmp_path_factory.mktemp("narrow")
    shutil.copy(finished_run / "benchsuite.sqlite", out)
    done = invoke("report", str(out), env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, Analysis.from_dict(json.loads((out / "report.json").read_text()))


def test_no_line_is_wider_than_80(narrow):
    text, _ = narrow
    assert text.count("\n") > 20
    assert max(cell_len(line) for line in text.splitlines()) <= 80


def test_every_number_appears_whole(narrow):
    text, report = narrow
    buffer = Console(file=io.StringIO(), width=250)
    tables.print_report(report, buffer)
    wide = buffer.file.getvalue()
    assert "significant_" in wide or "inconclusive" in wide  # the wide layout, full names
    assert numbers_in(text) == numbers_in(wide)


def test_every_verdict_appears_whole(narrow):
    text, report = narrow
    rows = [[cell.strip() for cell in BOX.split(line)] for line in text.splitlines()]
    for track, entry in report.tracks.items():
        for mixer, cell in entry.comparisons.items():
            look = verdict(cell.comparison.verdict)
            shown = f"{look.symbol} {cell.comparison.verdict}"  # one label in every layout
            assert any(row[0] == mixer and any(c.startswith(shown) for c in row) for row in rows), (
                track,
                mixer,
            )
    labels = {
        w
        for v in ("significant_win", "significant_loss", "equivalent_within_margin", "inconclusive")
        for w in verdict(v).short.split()
    }
    fragments = {
        w
        for w in words_in(text)
        if any(label.startswith(w) and w != label for label in labels) and len(w) > 2
    }
    assert not fragments


def test_the_check_catches_folding(narrow):
    """rich's own sizing of the wide track table at 80 columns folds numbers: caught."""
    _, report = narrow
    for name, entry in report.tracks.items():
        folded = printed(track_tables.track_table(name, entry), 80)
        whole = printed(track_tables.track_table(name, entry), 250)
        assert numbers_in(folded) != numbers_in(whole)


def test_captions_leave_out_empty_clauses(finished_run):
    """A track whose scale has no note and which has no comparison yet (its baseline alone, as
    early in a run) gets captions without an empty clause: no "; ;"."""
    report = Analysis.from_dict(json.loads((finished_run / "report.json").read_text()))
    name, entry = next(iter(report.tracks.items()))
    entry.facts.scale, entry.comparisons = "unknown scale", {}
    wide = track_tables.track_table(name, entry, report.design)
    narrow = track_tables.track_tables_narrow(name, entry, report.design)
    captions = [str(wide.caption), *(str(table.caption) for table in narrow)]
    assert all("; ;" not in caption and not caption.endswith("; ") for caption in captions)
    assert "budget" in captions[0]  # the clauses that are there stay


def test_every_track_has_the_same_layout_at_any_width(narrow):
    """The tracks' tables switch layout together: at every width either every track is shown
    in the wide table or every track in the narrow pair (whose second table is 'against')."""
    _, report = narrow
    seen = set()
    for width in range(80, 260, 6):
        text = printed(track_tables.track_views(report.tracks, report.design), width)
        narrow_ones = sum(f"{name}: against" in text for name in report.tracks)
        assert narrow_ones in (0, len(report.tracks)), width
        seen.add(narrow_ones)
    assert seen == {0, len(report.tracks)}  # both layouts occur over these widths

"""report.html and plots/*.png, rendered from a real small run (two tracks, a failing mixer and a
skipped one, from a plugins folder).

``finished_run`` is shared with test_export.py and test_browser.py: the run happens once per
session, in the session's temporary folder.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchsuite import api
from benchsuite.output import numbers
from benchsuite.output.html import write_html
from benchsuite.output.palette import verdict
from benchsuite.output.plots import _cliques, make_plots
from benchsuite.results.schema import Analysis
from benchsuite.results.tradeoffs import quality_vs_cost

PLUGIN = """
from benchsuite import Mixer, hookimpl
from benchsuite.tracks.sequence import SequenceTrack


class OtherSequence(SequenceTrack):
    name = "sequence_b"
    description = "the sequence track under a second name"


def broken(tokens, dim):
    import torch

    class FailsInTraining(torch.nn.Module):
        def forward(self, x):
            if torch.is_grad_enabled():  # passes the no-grad preflight, fails every training job
                raise RuntimeError("this mixer fails to train on purpose")
            return x

    return FailsInTraining()


def unbuildable(tokens, dim):
    raise RuntimeError("never built: the mixer is unsupported everywhere")


@hookimpl
def benchsuite_register_tracks(register):
    register(OtherSequence())


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="broken", build=broken, description="always fails"))
    register(Mixer(name="picky", build=unbuildable, description="never supported",
                   supports=lambda tokens, dim: f"needs more than {tokens} tokens"))
"""
TRACKS = ("sequence", "sequence_b")
MIXERS = ("dense", "butterfly", "attention", "broken", "picky")
SHAPE = ("series=24", "length=64", "horizon=2")


def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUT of a real tiny run (made on first use): 2 tracks x 3 working mixers, 3 seeds."""
    base = tmp_path_factory.getbasetemp()
    out = base / "report-run"
    if (out / "report.json").exists():
        return out
    plugins = base / "report-plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "extra.py").write_text(PLUGIN)
    options = [f"--track-option={t}.{s}" for t in TRACKS for s in SHAPE]
    command = [
        sys.executable, "-m", "benchsuite.cli", "--plugins-dir", str(plugins), "run",
        "--tracks", ",".join(TRACKS), "--mixers", ",".join(MIXERS), "--seeds", "3",
        *[f"--grid={t}.lr=0.01,0.03" for t in TRACKS], "--budget", "steps=30", *options,
        "--executor", "local", "--match", "none",  # sizes as declared: param_mismatch can fire
        "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "BENCHSUITE_CACHE": str(base / "report-cache"), "COLUMNS": "200"}
    env.pop("BENCHSUITE_LOAD_PLUGINS", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert (out / "report.json").exists(), done.stdout[-3000:] + done.stderr[-3000:]
    (out / "html-written-by-run").write_text(str((out / "report.html").exists()))
    return out


class Page(HTMLParser):
    """The parts of a page the tests look at: tags, attributes, table cells, heading ids."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.headings: dict[str, str] = {}
        self.cells: list[str] = []
        self._heading: str | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, k, v or "") for k, v in attrs]
        if tag == "h2":
            self._heading = dict(attrs).get("id", "")
            self.headings[self._heading] = ""
        if tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "h2":
            self._heading = None
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._heading is not None:
            self.headings[self._heading] += data
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory)


@pytest.fixture(scope="module")
def report(out) -> Analysis:
    """The in-memory report (NaN and infinities as floats), re-derived from the store."""
    return api.report(out)


@pytest.fixture(scope="module")
def page(report, tmp_path_factory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("html")
    (folder / "plots").mkdir()
    (folder / "plots" / "stale.png").write_bytes(b"left from an earlier render")
    path = write_html(report, folder)
    return path, path.read_text(encoding="utf-8")


def test_run_writes_report_html(out):
    assert (out / "html-written-by-run").read_text() == "True"
    assert (out / "plots" / "across-heatmap.png").exists()


def test_every_section_is_there(page, report):
    path, text = page
    assert path.name == "report.html"
    parsed = Page(text)
    assert list(parsed.headings) == [
        "headline", "matrix", "summary", "track-sequence", "track-sequence_b", "across", "costs",
        "problems",
    ]  # the answer first  # fmt: skip
    for track, entry in report.tracks.items():
        assert entry.dataset in text
        for mixer, cell in entry.comparisons.items():
            comparison = cell.comparison
            # the verdict is written out with its symbol, not shown by colour alone
            shown = f"{verdict(comparison.verdict).symbol} {comparison.verdict}"
            assert shown in parsed.cells
            improvement = numbers.pct(comparison.improvement_rel_pct)
            assert any(c.startswith(improvement) for c in parsed.cells), (track, mixer)
            # and in the verdict matrix: its symbol and improvement, its name as the tooltip
            symbol = verdict(comparison.verdict).symbol
            assert f"{symbol} {improvement}" in parsed.cells
            assert ("td", "title", comparison.verdict) in parsed.attributes
    assert report.design.warning in text
    flagged = sum(any(c.comparison.flags for c in e.comparisons.values())
                  for e in report.tracks.values())  # fmt: skip
    # headline, verdict matrix, 2 summary, 3 per track and its flags table where a flag is
    # raised, across, costs, problems
    assert parsed.tags.count("table") == 13 + flagged
    assert parsed.tags.count("img") == 14  # 5 per track, 4 across tracks


def test_the_headline_gives_each_mixer_its_tracks_effect_and_cost(page, report):
    """Every compared mixer has a headline row: where it wins, loses, is equivalent, its suite
    effect with its CI, and its size and step time against the baseline's; rows and the
    comparison tables are ordered by effect (largest first)."""
    text = page[1]
    headline = text[text.index("id=headline") : text.index("id=matrix")]
    rows = [r for r in re.findall(r"<tr>(.*?)</tr>", headline) if "<td" in r]
    across = report.across_tracks
    names = [re.search(r"<td>(.*?)</td>", r).group(1) for r in rows]
    assert sorted(names) == sorted(across.mixers)
    effects = [across.mixers[n].suite_effect for n in names]
    assert effects == sorted(effects, reverse=True)
    for name, row in zip(names, rows, strict=True):
        mixer = across.mixers[name]
        lo, hi = mixer.suite_effect_ci95
        effect = numbers.num(mixer.suite_effect, 3)
        assert f"{effect} [{numbers.num(lo, 3)}, {numbers.num(hi, 3)}]" in row
        params = report.quality_vs_cost.across.points[name].params
        assert f"{numbers.num(params, 3)}×" in row
    entry = report.tracks["sequence"]  # its comparison table: the baseline, then by effect
    section = text[text.index('id="track-sequence"') :]
    table = section[: section.index("</table>")]
    order = re.findall(r"<tr><td>([a-z_]+)", table)
    assert sorted(order) == sorted(entry.mixers)
    compared = [m for m in order if m in entry.comparisons]
    gains = [entry.comparisons[m].comparison.improvement_rel_pct for m in compared]
    assert order[0] == entry.baseline and gains == sorted(gains, reverse=True)


def test_skipped_and_failed_are_listed(page, report):
    cells = Page(page[1]).cells
    assert [s.mixer for s in report.skipped] == ["picky", "picky"]
    assert len(report.failures) == 6  # 3 sweep configs x 1 sweep seed x 2 tracks
    assert cells.count("needs more than 16 tokens") == 2
    assert cells.count("RuntimeError: this mixer fails to train on purpose") == 6


def test_costs_table_has_each_cost(page, report):
    cells = Page(page[1]).cells
    costs = report.tracks["sequence"].mixers["attention"].costs
    # costs are written as `benchsuite list --costs` writes them (4.95k, 166k), never 1.009e+04
    assert re.fullmatch(r"\d+(\.\d+)?k", numbers.cost("params", costs["params"]))
    assert numbers.cost("params", costs["params"]) in cells
    assert numbers.cost("flops_per_example", costs["flops_per_example"]) in cells
    assert numbers.seconds(costs["seconds_per_step"]) in cells
    assert not [cell for cell in cells if re.fullmatch(r"[\d.]+e\+\d+", cell)]
    assert "seconds_per_step" in page[1]


def test_page_is_self_contained(page):
    parsed = Page(page[1])
    assert {"script", "link", "iframe"}.isdisjoint(parsed.tags)
    for tag, name, value in parsed.attributes:
        if name in {"src", "href"}:
            assert value.startswith(("data:image/png;base64,", "#")), (tag, value[:60])
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(|@import""", page[1])


def test_embedded_figures_are_the_png_files(page):
    path, text = page
    sources = [v for tag, name, v in Page(text).attributes if tag == "img" and name == "src"]
    embedded = {base64.b64decode(src.split(",", 1)[1]) for src in sources}
    files = sorted((path.parent / "plots").glob("*.png"))
    assert {f.read_bytes() for f in files} == embedded
    assert sorted(f.stem for f in files) == [
        "across-cost", "across-heatmap", "across-iqm", "across-ranks",
        *[f"{track}-{kind}" for track in TRACKS
          for kind in ("cost", "curves", "forest", "seeds", "sweep")],
    ]  # fmt: skip
    for data in embedded:
        assert data.startswith(b"\x89PNG\r\n\x1a\n")


def test_json_report_renders_the_same_page(out, page, tmp_path):
    """report.json (NaN written as null) read back gives the same sections and figures."""
    back = Analysis.from_dict(json.loads((out / "report.json").read_text()))
    path = write_html(back, tmp_path)
    from_json, from_dict = Page(path.read_text()), Page(page[1])
    assert from_json.headings == from_dict.headings
    assert from_json.tags == from_dict.tags
    names = sorted(p.name for p in (tmp_path / "plots").glob("*.png"))
    assert names == sorted(p.name for p in (page[0].parent / "plots").glob("*.png"))


def test_text_is_escaped(report, tmp_path):
    hostile = copy.deepcopy(report)
    hostile.tracks["sequence"].dataset = "<script>alert(1)</script>"
    hostile.failures[0].reason = '<img src="https://example.com/x.png">'
    text = write_html(hostile, tmp_path).read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert not any("example.com" in value for _, _, value in Page(text).attributes)
    assert "&lt;img src=&#34;https://example.com/x.png&#34;&gt;" in text


def test_degenerate_reports_still_render(report, tmp_path):
    """No comparisons on a track, no costs, no across-track figures, then no tracks at all."""
    partial = copy.deepcopy(report)
    partial.tracks["sequence_b"].comparisons = {}
    for arm in partial.tracks["sequence"].mixers.values():
        arm.costs, arm.costs_median = {}, {}
    partial.across_tracks = None
    partial.quality_vs_cost = quality_vs_cost(partial.tracks, None)
    text = write_html(partial, tmp_path / "partial").read_text()
    assert "no comparisons: the baseline has no results here" in text
    assert "no across-track figures" in text
    assert sorted(p.name for p in make_plots(partial)) == [
        "across-heatmap", "sequence-curves", "sequence-forest", "sequence-seeds", "sequence-sweep",
        "sequence_b-curves", "sequence_b-seeds", "sequence_b-sweep",
    ]  # fmt: skip

    empty = dataclasses.replace(copy.deepcopy(report), tracks={}, across_tracks=None, failures=[])
    text = write_html(empty, tmp_path / "empty").read_text()
    assert make_plots(empty) == []
    assert not list((tmp_path / "empty" / "plots").glob("*.png"))
    assert "needs more than 16 tokens" in text  # the skipped cells are still listed


def test_stale_plots_are_removed(page):
    assert not (page[0].parent / "plots" / "stale.png").exists()


def test_critical_difference_groups():
    ranked = [("a", 1.0), ("b", 1.5), ("c", 2.2), ("d", 4.0)]
    assert _cliques(ranked, 1.0) == [(1.0, 1.5), (1.5, 2.2)]
    assert _cliques(ranked, 0.4) == []
    assert _cliques(ranked, 5.0) == [(1.0, 4.0)]

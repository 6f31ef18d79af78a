"""report.html and plots/*.png, rendered from the session's real small run (conftest's
``finished_run``: two tracks, a failing mixer and a skipped one, from a plugins folder)."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest
from helpers import REPORT_TRACKS, Page

from benchsuite import api
from benchsuite.measures import Costs
from benchsuite.output import numbers
from benchsuite.output.html import write_html
from benchsuite.output.palette import verdict
from benchsuite.output.plots import _cliques, make_plots
from benchsuite.results.schema import Analysis
from benchsuite.results.tradeoffs import quality_vs_cost


@pytest.fixture(scope="module")
def out(finished_run) -> Path:
    return finished_run


@pytest.fixture(scope="module")
def report(out) -> Analysis:
    """The in-memory report (NaN and infinities as floats), re-derived from the store."""
    return api.report(out, write=False)


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
        "headline",
        "matrix",
        "summary",
        "track-sequence",
        "track-sequence_b",
        "across",
        "costs",
        "problems",
    ]  # the answer first
    for track, entry in report.tracks.items():
        assert entry.facts.dataset in text
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
    assert report.design.warning is None or report.design.warning in text
    flagged = sum(
        any(c.comparison.flags for c in e.comparisons.values()) for e in report.tracks.values()
    )
    # headline, verdict matrix, 2 summary, 3 per track and its flags table where a flag is
    # raised, across, without each track, costs, problems
    assert parsed.tags.count("table") == 14 + flagged
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
    assert re.fullmatch(r"\d+(\.\d+)?k", numbers.cost("params", costs.params))
    assert numbers.cost("params", costs.params) in cells
    assert numbers.cost("flops_per_example", costs.flops_per_example) in cells
    assert numbers.seconds(costs.seconds_per_step) in cells
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
        "across-cost",
        "across-heatmap",
        "across-iqm",
        "across-ranks",
        *[
            f"{track}-{kind}"
            for track in REPORT_TRACKS
            for kind in ("cost", "curves", "forest", "seeds", "sweep")
        ],
    ]
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
    hostile.tracks["sequence"].facts.dataset = "<script>alert(1)</script>"
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
        arm.costs, arm.costs_median = Costs(), Costs()
    partial.across_tracks = None
    partial.quality_vs_cost = quality_vs_cost(partial.tracks, None)
    text = write_html(partial, tmp_path / "partial").read_text()
    assert "no comparisons: the baseline has no results here" in text
    assert "no across-track figures" in text
    assert sorted(p.name for p in make_plots(partial)) == [
        "across-heatmap",
        "sequence-curves",
        "sequence-forest",
        "sequence-seeds",
        "sequence-sweep",
        "sequence_b-curves",
        "sequence_b-seeds",
        "sequence_b-sweep",
    ]

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

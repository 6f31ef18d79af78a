"""report.html in a real browser: headless Chromium renders it offline, with every host name
unresolvable, and records its network log; the page must show its tables and ask for nothing,
and its first screen (1400×900) must hold the headline and the whole verdict matrix.

Chromium is Debian's ``chromium`` package, installed by ``make browser`` (which ``.ci/run`` calls);
the test itself installs nothing and skips, saying how to install it, where it is absent.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import Page, stored_run

from benchsuite import api
from benchsuite.output.html import write_html
from benchsuite.output.palette import verdict
from benchsuite.results.schema import Analysis

pytestmark = pytest.mark.slow  # starts Chromium

BROWSERS = ("chromium", "chromium-browser")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--virtual-time-budget=5000",
)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of the Chromium binary (``make browser`` installs it; ``.ci/run`` does so first and
    sets ``BENCHSUITE_REQUIRE_BROWSER=1``, so that there a missing browser fails, not skips)."""
    found = next(filter(None, map(shutil.which, BROWSERS)), None)
    if found is None:
        missing = f"no Chromium on PATH ({', '.join(BROWSERS)}): `make browser` installs it"
        if os.environ.get("BENCHSUITE_REQUIRE_BROWSER") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    return found


def browse(chromium: str, page: Path, folder: Path, *mode: str) -> tuple[str, list[str]]:
    """Open ``page`` offline; returns (stdout, URLs the page itself requested)."""
    folder.mkdir(parents=True, exist_ok=True)
    netlog = folder / "netlog.json"
    command = [
        chromium,
        *FLAGS,
        f"--user-data-dir={folder / 'profile'}",
        f"--log-net-log={netlog}",
        *mode,
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    requested = [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start
        and "url" in event.get("params", {})
        # the browser's own background requests have no page origin; the page's have "null"
        and event["params"].get("initiator") != "not an origin"
    ]
    return done.stdout, requested


@pytest.fixture(scope="module")
def report(finished_run) -> Analysis:
    return api.report(finished_run, write=False)


@pytest.fixture(scope="module")
def report_html(report, tmp_path_factory) -> Path:
    return write_html(report, tmp_path_factory.mktemp("browser-report"))


def test_the_network_check_sees_requests(chromium, tmp_path):
    """The check below can fail: a page with external references is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<table><tr><td>x</td></tr></table><img src="http://example.invalid/a.png">'
        '<link rel=stylesheet href="https://cdn.example.invalid/a.css">'
    )
    _, requested = browse(chromium, bad, tmp_path / "bad", "--dump-dom")
    assert sorted(requested) == [
        "http://example.invalid/a.png",
        "https://cdn.example.invalid/a.css",
    ]


def test_report_renders_offline_with_its_tables(chromium, report, report_html, tmp_path):
    dom, requested = browse(chromium, report_html, tmp_path / "dom", "--dump-dom")
    assert requested == []
    rendered, source = Page(dom), Page(report_html.read_text())
    flagged = sum(
        any(c.comparison.flags for c in e.comparisons.values()) for e in report.tracks.values()
    )
    # as test_html: 14 tables, and a flags table under each track that raised a flag
    assert rendered.tags.count("table") == source.tags.count("table") == 14 + flagged
    assert rendered.tags.count("img") == source.tags.count("img") == 14
    assert set(rendered.headings) == set(source.headings)
    assert any(v in dom for v in ("equivalent_within_margin", "inconclusive", "needs_more_seeds"))


def test_screenshot(chromium, report_html, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    _, requested = browse(
        chromium,
        report_html,
        tmp_path / "shot",
        f"--screenshot={shot}",
        "--window-size=1280,2400",
        "--hide-scrollbars",
    )
    assert requested == []
    with Image.open(shot) as image:
        assert image.size == (1280, 2400)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 100  # text, tables and figures, not blank


# Run on a copy of the page only: the page itself holds no script (test_html checks it).
GEOMETRY = """<script>
const rect = element => { const r = element.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, right: r.right}; };
const after = id => rect(document.getElementById(id).nextElementSibling);
const found = {viewport: [innerWidth, innerHeight],
  headline: rect(document.getElementById("headline")), headline_table: after("headline"),
  matrix: rect(document.getElementById("matrix")), matrix_table: after("matrix")};
const out = document.createElement("pre"); out.id = "geometry";
out.textContent = JSON.stringify(found); document.body.appendChild(out);
</script>"""


def geometry(chromium: str, page: Path, script: str, folder: Path) -> dict:
    """What ``script`` (appended to a copy of ``page``) measured of the page laid out at
    1400×900, offline; the page may request nothing."""
    probe = folder / "probe.html"
    probe.write_text(page.read_text().replace("</body>", script + "</body>"))
    dom, requested = browse(
        chromium, probe, folder / "probe", "--dump-dom", "--window-size=1400,900"
    )
    assert requested == []
    start = dom.index('<pre id="geometry">') + len('<pre id="geometry">')
    return json.loads(html.unescape(dom[start : dom.index("</pre>", start)]))


def test_the_first_screen_holds_the_headline_and_the_verdict_matrix(
    chromium, report, report_html, tmp_path
):
    """At 1400×900 the headline table and the whole mixer × track matrix are on screen before
    any scrolling: their boxes (read from the laid-out page) end above 900 px, and the
    screenshot shows every verdict colour the matrix uses within that first screen."""
    from PIL import Image

    box = geometry(chromium, report_html, GEOMETRY, tmp_path)
    assert box["viewport"][0] == 1400  # the layout's width (its height is the window's less
    # the browser's frame here; the screenshot below is the 1400×900 viewport itself)
    headline, table = box["headline"], box["headline_table"]
    assert 0 <= headline["top"] < table["top"] < table["bottom"] < box["matrix"]["top"]
    assert box["matrix_table"]["bottom"] <= 900 and box["matrix_table"]["right"] <= 1400

    shot = tmp_path / "first-screen.png"
    _, requested = browse(
        chromium,
        report_html,
        tmp_path / "shot",
        f"--screenshot={shot}",
        "--window-size=1400,900",
        "--hide-scrollbars",
    )
    assert requested == []
    used = {c.comparison.verdict for e in report.tracks.values() for c in e.comparisons.values()}
    with Image.open(shot) as image:
        assert image.size == (1400, 900)
        colours = {rgb for _, rgb in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    for name in used:
        hex_ = verdict(name).colour.lstrip("#")
        assert tuple(int(hex_[i : i + 2], 16) for i in (0, 2, 4)) in colours, name


PARTIAL_GEOMETRY = """<script>
const box = document.getElementById("partial").getBoundingClientRect();
const head = document.getElementById("headline").getBoundingClientRect();
const out = document.createElement("pre"); out.id = "geometry";
out.textContent = JSON.stringify({partial: [box.top, box.bottom], headline: head.top});
document.body.appendChild(out);
</script>"""


def test_an_interrupted_runs_first_screen_says_partial(chromium, finished_run, tmp_path):
    """After an interruption (one cell's jobs missing) the page's first screen (1400×900) says
    so above the headline: ``partial: k of m comparisons, n of N jobs``."""
    from benchsuite.results.analysis import analyse

    plan, results = stored_run(finished_run)
    track = next(iter(plan.cells))
    mixer = next(m for m in plan.cells[track] if m != plan.settings.baseline)
    missing = set(plan.cells[track][mixer].jobs)
    partial = analyse(plan, {k: r for k, r in results.items() if k not in missing}, [])
    page = write_html(partial, tmp_path / "partial")
    box = geometry(chromium, page, PARTIAL_GEOMETRY, tmp_path)
    top, bottom = box["partial"]
    assert 0 <= top < bottom < box["headline"] < 900
    assert partial.design.banner() in html.unescape(page.read_text())


WIDTH_GEOMETRY = """<script>
const out = document.createElement("pre"); out.id = "geometry";
const boxes = [...document.querySelectorAll(".wide")].map(b => b.getBoundingClientRect().right);
out.textContent = JSON.stringify({page: document.documentElement.scrollWidth,
  viewport: innerWidth, widest_box: Math.max(0, ...boxes)});
document.body.appendChild(out);
</script>"""
WIDE_ROW = "<tr>" + "<td>a-cell-too-wide-for-any-window</td>" * 60 + "</tr>"


def test_the_page_fits_a_1400_pixel_window_wide_tables_scroll_in_their_box(
    chromium, report_html, tmp_path
):
    """At 1400 px the page never scrolls sideways: every table sits in a box that scrolls
    itself. A table far wider than the window, put in such a box, leaves the page as wide as
    the window; the same table outside one widens the page (the check can fail)."""
    box = geometry(chromium, report_html, WIDTH_GEOMETRY, tmp_path)
    assert box["viewport"] == 1400 and box["page"] <= 1400 and box["widest_box"] <= 1400
    text = report_html.read_text()
    boxed = tmp_path / "boxed.html"
    boxed.write_text(
        text.replace("</body>", f"<div class=wide><table>{WIDE_ROW}</table></div></body>")
    )
    assert geometry(chromium, boxed, WIDTH_GEOMETRY, tmp_path)["page"] <= 1400
    bare = tmp_path / "bare.html"
    bare.write_text(text.replace("</body>", f"<table>{WIDE_ROW}</table></body>"))
    assert geometry(chromium, bare, WIDTH_GEOMETRY, tmp_path)["page"] > 1400

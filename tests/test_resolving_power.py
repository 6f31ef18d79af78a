"""Each track's resolving power (docs/statistics.md, "Resolving power"): the spread of the
compared mixers' mean effects, the seeds' noise, their ratio and the MDEs on the same scale,
computed exactly on comparisons made by hand, and carried by report.json, the track tables'
captions, the HTML page and benchmarks/suite.py's track lines (the real tiny run of
test_html.py)."""

from __future__ import annotations

import html
import importlib.util
import json
import math
import statistics
from pathlib import Path

import pytest

from benchsuite import api
from benchsuite.output.html import render_html
from benchsuite.output.track_tables import resolution_text, track_table, track_tables_narrow
from benchsuite.protocol import stats
from benchsuite.protocol.power import dz_star
from benchsuite.results import resolving
from benchsuite.results.schema import Analysis
from benchsuite.vocabulary import Scale

BASE = [1.0, 1.0, 1.0]
# per-seed d of each mixer (higher is better, so d = mixer - baseline): means 2, 5, 2, sample
# variances 1, 3, 4; the controls' would dominate the spread if they counted
CONTROLS = ("identity", "random")  # the built-in mixers tagged "control"
EFFECTS = {
    "a": [1.0, 2.0, 3.0],
    "b": [4.0, 4.0, 7.0],
    "c": [0.0, 2.0, 4.0],
    "identity": [-30.0, -20.0, -40.0],
    "random": [-50.0, -10.0, -20.0],
}


def differences(effects: dict[str, list[float]], base: list[float] = BASE) -> dict:
    """A comparison per mixer whose per-seed d (difference scale) are ``effects``."""
    return {
        mixer: stats.compare_paired(
            base, [b + x for b, x in zip(base, d, strict=True)], higher_is_better=True
        )
        for mixer, d in effects.items()
    }


def test_the_controls_are_the_mixers_that_declare_the_tag():
    from benchsuite.registry import load_registry

    mixers = load_registry().mixers
    assert {n for n, m in mixers.items() if resolving.CONTROL in m.tags} == {"identity", "random"}


def test_spread_noise_and_power_of_known_differences():
    found = resolving.resolution(differences(EFFECTS), Scale.DIFFERENCE, controls=CONTROLS)
    assert found.mixers == ["a", "b", "c"] and found.seeds == 3  # the controls left out
    assert found.scale == Scale.DIFFERENCE
    assert found.spread == pytest.approx(math.sqrt(3))  # sd of 2, 5, 2 (ddof 1)
    assert found.noise == pytest.approx(math.sqrt(8 / 3))  # sqrt of the mean of 1, 3, 4
    assert found.resolving_power == pytest.approx(3 / math.sqrt(8))
    two = resolving.resolution(differences({m: EFFECTS[m] for m in ("a", "b")}), Scale.DIFFERENCE)
    assert two.spread == pytest.approx(3 / math.sqrt(2)) and two.noise == pytest.approx(
        math.sqrt(2)
    )
    assert two.resolving_power == pytest.approx(1.5)  # exactly the threshold the docs name


def test_too_few_mixers_or_seeds_give_none():
    one = resolving.resolution(
        differences({"a": EFFECTS["a"], "identity": [1, 2, 3]}), Scale.DIFFERENCE, controls=CONTROLS
    )
    assert one.mixers == ["a"] and one.spread is None and one.resolving_power is None
    assert one.noise == pytest.approx(1.0)
    single = differences({"a": [1.0], "b": [3.0]}, base=[1.0])
    none = resolving.resolution(single, Scale.DIFFERENCE)
    assert none.mixers == [] and none.seeds == 0
    assert (none.spread, none.noise, none.resolving_power, none.mde_measured) == (None,) * 4
    still = resolving.resolution(differences({"a": [1.0] * 3, "b": [2.0] * 3}), Scale.DIFFERENCE)
    assert still.spread == pytest.approx(math.sqrt(0.5)) and still.noise == 0
    assert still.resolving_power is None  # no seed noise to measure the spread by


def test_log_ratios_are_the_scale_and_a_fallback_to_differences_is_left_out():
    """For a positive lower-is-better metric d = log(baseline / mixer): the figures are of the
    log-ratios; a comparison that fell back to differences (a value not positive) is not on
    that scale and is left out."""
    base = [2.0, 2.0, 2.0]
    logs = {"a": [0.1, 0.2, 0.3], "b": [0.4, 0.4, 0.7]}
    comparisons = {
        mixer: stats.compare_paired(
            base, [b / math.exp(x) for b, x in zip(base, d, strict=True)], scale=Scale.LOG
        )
        for mixer, d in logs.items()
    }
    comparisons["fallback"] = stats.compare_paired(base, [0.0, 1.0, 1.0], scale=Scale.LOG)
    assert comparisons["fallback"].scale == Scale.DIFFERENCE
    found = resolving.resolution(comparisons, Scale.LOG)
    assert found.mixers == ["a", "b"] and found.scale == Scale.LOG
    assert found.spread == pytest.approx(0.3 / math.sqrt(2))  # sd of 0.2 and 0.5
    assert found.noise == pytest.approx(math.sqrt((0.01 + 0.03) / 2))
    assert found.resolving_power == pytest.approx(1.5)


def test_the_mdes_on_the_comparisons_scale():
    """The measured MDE is the median of the compared comparisons' own (dz* · sd of d at
    Holm's first step); the planned one, a % of the design, is put on the same scale."""
    six = {m: d + d for m, d in EFFECTS.items()}  # 6 seeds: 2/2**6 < 0.05, so detectable
    comparisons = differences(six, BASE * 2)  # each at alpha 0.05 (a family of one)
    found = resolving.resolution(
        comparisons, Scale.DIFFERENCE, planned_pct=10.0, baseline_mean=-4, controls=CONTROLS
    )
    sds = [statistics.stdev(six[m]) for m in ("a", "b", "c")]
    assert found.mde_alpha == 0.05
    assert found.mde_measured == pytest.approx(dz_star(6, 0.05) * statistics.median(sds))
    assert found.mde_planned == pytest.approx(0.4)  # 10% of |-4|
    assert resolving.on_scale(100 * (1 - math.exp(-0.2)), Scale.LOG, None) == pytest.approx(0.2)
    assert resolving.on_scale(None, Scale.LOG, 1.0) is None
    assert resolving.on_scale(5.0, Scale.DIFFERENCE, None) is None
    undetectable = resolving.resolution(
        dict(zip(EFFECTS, stats.holm_adjusted(list(differences(EFFECTS).values())), strict=True)),
        Scale.DIFFERENCE,
    )
    assert undetectable.mde_measured is None  # 3 seeds cannot reach alpha / 5


@pytest.fixture(scope="module")
def report(finished_run) -> Analysis:
    return api.report(finished_run, write=False)


def test_report_json_carries_each_tracks_resolution(finished_run, report):
    raw = json.loads((finished_run / "report.json").read_text())
    assert raw["report_version"] == 12
    for track, entry in report.tracks.items():
        written = raw["tracks"][track]["resolution"]
        assert set(written) == {
            "scale",
            "mixers",
            "seeds",
            "spread",
            "noise",
            "resolving_power",
            "mde_alpha",
            "mde_planned",
            "mde_measured",
        }
        again = resolving.of_track(entry, report.design.planned_mde.get(track), CONTROLS)
        assert entry.resolution == again  # what the analysis stored is the figures of its cells
        assert written["mixers"] == [m for m in entry.comparisons if m not in CONTROLS]
        effects = [entry.comparisons[m].comparison.improvement for m in written["mixers"]]
        assert written["spread"] == pytest.approx(statistics.stdev(effects))
        assert written["resolving_power"] == pytest.approx(written["spread"] / written["noise"])


def test_the_captions_and_the_page_show_it(report):
    page = html.unescape(render_html(report, []))
    for name, entry in report.tracks.items():
        text = resolution_text(entry)
        power = f"{entry.resolution.resolving_power:.3g}"
        assert text.startswith(f"resolving power {power} = spread ")
        assert text in str(track_table(name, entry, report.design).caption)
        assert text in str(track_tables_narrow(name, entry, report.design)[1].caption)
        assert f"{text[:1].upper()}{text[1:]}." in page
        assert power in page


def test_the_suite_benchmark_prints_it(finished_run):
    path = Path(__file__).parent.parent / "benchmarks" / "suite.py"
    spec = importlib.util.spec_from_file_location("suite_benchmark", path)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    raw = json.loads((finished_run / "report.json").read_text())
    lines = suite.track_lines(raw, {})
    for line, entry in zip(lines, raw["tracks"].values(), strict=True):
        assert f"resolving power {entry['resolution']['resolving_power']:.3g} = spread " in line
    assert suite.resolution_words({}) == "resolving power n/a"  # a report before version 10

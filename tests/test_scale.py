"""``benchsuite scale``: the real CLI on short ladders of real models, one process per point."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from helpers import invoke

from benchsuite.commands.scale import exponents
from benchsuite.output.html import write_html
from benchsuite.results.schema import Analysis

PNG = b"\x89PNG\r\n\x1a\n"
BROKEN_PLUGIN = """
from benchsuite import Mixer, hookimpl


def broken(tokens, dim, how):
    import os
    import signal
    import time

    from torch import nn

    class Broken(nn.Module):
        def forward(self, x):
            if tokens >= 128 and how == "hang":
                time.sleep(600)
            if tokens >= 128 and how == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            return x

    return Broken()


@hookimpl
def benchsuite_register_mixers(register):
    for how in ("hang", "crash"):
        build = lambda tokens, dim, how=how: broken(tokens, dim, how)
        register(Mixer(name=how, build=build, description=f"{how}s from 128 tokens"))
"""


@pytest.fixture(scope="module")
def ladder(tmp_path_factory) -> tuple[dict, Path]:
    """attention, longconv and the baseline dense at 256, 512 and 1024 tokens (width 16, where
    attention's quadratic part dominates from 256 tokens on)."""
    out = tmp_path_factory.mktemp("scale")
    done = invoke(
        "scale",
        "--mixers",
        "attention,longconv",
        "--tokens",
        "256,512,1024",
        "--width",
        "16",
        "--out",
        str(out),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out


def test_attention_grows_faster_than_the_long_convolution(ladder):
    result, out = ladder
    assert list(result["mixers"]) == ["dense", "attention", "longconv"]  # the baseline first
    assert result["settings"]["threads"] == 1 and result["input"].startswith("synthetic")
    for entry in result["mixers"].values():
        assert [p["status"] for p in entry["points"]] == ["ok"] * 3
    attention, longconv = (result["mixers"][m]["exponents"] for m in ("attention", "longconv"))
    # Counted arithmetic is deterministic; wall time on a shared machine is not, so the seconds
    # are checked to be measured (positive, growing with the tokens), not compared between
    # mixers: speed claims live in benchmarks/.
    for entry in result["mixers"].values():
        seconds = [p["seconds_per_step"] for p in entry["points"]]
        assert all(s > 0 for s in seconds) and seconds[-1] > seconds[0]
        # fitted over the upper half (512 and 1024 tokens): two timings, whose order a busy
        # machine can swap (-0.045 for one mixer with the other xdist worker training)
        assert entry["exponents"]["seconds_per_step"] is not None
    assert attention["flops_per_example"] > 1.6
    assert longconv["flops_per_example"] < 1.2
    assert json.loads((out / "scaling.json").read_text()) == result


EMPTY = {  # a report of a run that finished nothing: enough for a page
    "report_version": 9,
    "warnings": [],
    "settings": {},
    "environment": {},
    "mixers": {},
    "tracks": {},
    "skipped": [],
    "scale": {"preset": "quick", "tracks": {}, "note": ""},
    "design": {
        "comparisons": 0,
        "finished": 0,
        "partial": False,
        "alpha": 0.05,
        "verdict_alpha": 0.05,
        "both_converged_comparisons": 0,
        "seeds": 2,
        "min_seeds_for_significance": 6,
        "warning": None,
    },
    "selection": {
        "cells": 0,
        "at_chance": 0,
        "edge_of_grid": 0,
        "edge_share": None,
        "median_agreement": None,
        "indecisive": 0,
    },
    "across_tracks": None,
    "learning_curves": {
        "rule": "",
        "tail_fraction": 0.2,
        "min_drop": 0.05,
        "min_share": 0.05,
        "undertrained": [],
    },
    "quality_vs_cost": {"costs": [], "tracks": {}, "across": None},
    "failures": [],
}


def test_plots_are_written_on_the_scaling_page_which_the_report_links(ladder):
    _, out = ladder
    for stem in ("time", "memory", "flops"):
        assert (out / "plots" / f"scaling-{stem}.png").read_bytes().startswith(PNG)
    page = (out / "scaling.html").read_text()
    assert 'id="scaling"' in page and "Cost against sequence length" in page
    assert page.count("data:image/png") == 3 and page.count("<table>") == 3
    assert 'href="report.html"' in page
    report = write_html(Analysis.from_dict(EMPTY), out).read_text()  # a report in the folder
    assert 'href="scaling.html"' in report and 'id="scaling"' not in report
    assert (out / "plots" / "scaling-time.png").exists()  # kept by the report's plot writer


def test_no_scaling_results_no_link(tmp_path):
    page = write_html(Analysis.from_dict(EMPTY), tmp_path).read_text()
    assert 'href="scaling.html"' not in page and "benchsuite scale --out" in page


def test_tables_are_relative_to_the_baseline_and_unsupported_lengths_say_why(tmp_path):
    done = invoke(
        "scale", "--mixers", "fnet,butterfly", "--tokens", "48,64", "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert "against sequence length" in done.stdout and "exponent" in done.stdout
    fnet_row = next(line for line in done.stdout.splitlines() if " fnet " in line)
    assert re.search(r"\d\.?\d*x", fnet_row)  # ratios to the baseline
    assert "fnet at 64 tokens:" in done.stderr  # one progress line per point
    result = json.loads((tmp_path / "scaling.json").read_text())
    unsupported, measured = result["mixers"]["butterfly"]["points"]
    assert unsupported["status"] == "unsupported" and measured["status"] == "ok"  # goes on
    assert "power of two" in unsupported["reason"]
    assert "butterfly at 48 tokens: unsupported: tokens must be a power of two" in done.stdout
    assert 'id="scaling"' in (tmp_path / "scaling.html").read_text()  # its own page
    assert not (tmp_path / "report.html").exists()  # scale renders no report


@pytest.mark.parametrize("limit", [["--max-seconds", "1e-6"], ["--max-memory", "1K"]])
def test_an_over_budget_point_ends_the_ladder_and_is_not_fatal(tmp_path, limit):
    done = invoke(
        "scale",
        "--mixers",
        "fnet",
        "--baseline",
        "fnet",
        "--tokens",
        "64,128",
        "--out",
        str(tmp_path),
        "--json",
        *limit,
    )
    assert done.returncode == 0, done.stderr
    [point] = json.loads(done.stdout)["mixers"]["fnet"]["points"]  # 128 never tried
    assert point["status"] == "over budget" and "--max-" in point["reason"]


def test_a_hung_or_crashed_point_is_recorded_and_the_command_goes_on(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "broken.py").write_text(BROKEN_PLUGIN)
    start = time.perf_counter()
    done = invoke(
        "scale",
        "--plugins-dir",
        str(plugins),
        "--mixers",
        "hang,crash",
        "--baseline",
        "hang",
        "--tokens",
        "64,128,256",
        "--max-seconds",
        "0.1",
        "--warmup",
        "1",
        "--steps",
        "1",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.returncode == 0, done.stderr
    assert time.perf_counter() - start < 60
    mixers = json.loads((tmp_path / "out" / "scaling.json").read_text())["mixers"]
    hung, crashed = (mixers[name]["points"] for name in ("hang", "crash"))
    assert [p["status"] for p in hung] == ["ok", "over budget"]  # 256 never tried
    assert hung[1]["reason"].startswith("killed after 5.5 s")
    assert [p["status"] for p in crashed] == ["ok", "failed"]  # measured in a fresh process
    assert crashed[1]["reason"] == "the measuring process died: killed by signal 9 (SIGKILL)"
    assert "over budget" in done.stdout and "failed" in done.stdout


def test_bad_input_is_one_line_naming_the_culprit(tmp_path):
    for flag, value in (("--tokens", "64,lots"), ("--max-memory", "plenty")):
        done = invoke("scale", flag, value, "--out", str(tmp_path))
        assert done.returncode == 2 and done.stderr.count("\n") == 1
        assert f"{flag} {value.split(',')[-1]!r}" in done.stderr


def test_exponents_are_slopes_over_the_upper_half():
    points = [
        {
            "tokens": t,
            "status": "ok",
            "seconds_per_step": (1 if t < 256 else t) * t**2,
            "activation_bytes": 3.0 * t,
            "flops_per_example": 0.0,
        }
        for t in (64, 128, 256, 512)
    ]
    slopes = exponents([*points, {"tokens": 1024, "status": "over budget"}])
    assert slopes["seconds_per_step"] == pytest.approx(3.0)  # 256 and 512 only
    assert slopes["activation_bytes"] == pytest.approx(1.0)
    assert slopes["flops_per_example"] is None  # nothing measured to fit
    assert exponents(points[:1])["activation_bytes"] is None

"""The design line's family is corrected once the data is probed, and the analysis uses that one."""

from __future__ import annotations

import json

from helpers import invoke


def test_a_cell_the_data_rules_out_shrinks_the_stated_family(tmp_path):
    out = tmp_path / "out"
    done = invoke(
        "run",
        "--tracks",
        "tabular",
        "--mixers",
        "dense,butterfly,identity",
        "--seeds",
        "3",
        "--budget",
        "steps=5",
        "--grid",
        "tabular.lr=0.01",
        "--executor",
        "local",
        "--out",
        str(out),
        "--allow-failures",
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    assert "2 comparisons" in printed  # the design before probing
    assert (
        "design after probing the data: a family of 1 comparisons, not 2 "
        "(tabular/butterfly ruled out by the data); the analysis uses 1: verdicts at alpha 0.05"
    ) in " ".join(printed.split())
    report = json.loads((out / "report.json").read_text())
    assert report["design"]["comparisons"] == 1
    assert report["tracks"]["tabular"]["comparisons"]["identity"]["comparison"]["family"] == 1

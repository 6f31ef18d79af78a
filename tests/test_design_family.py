"""The design line's family is corrected once the data is probed, and the analysis uses that one;
the design block is on standard output, every line of it."""

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
    # the design block is on one stream, standard output (docs/troubleshooting.md, "What goes
    # where"), every line of it: the design, its warning, the folder and config, the jobs, and
    # the family once the data is probed; standard error has none of it
    printed = " ".join(done.stdout.split())
    assert printed.startswith("design: per-track claims, 3 paired seeds (as given), 2 comparisons")
    assert "warning: with 3 seeds no per-track verdict can reach significance" in printed
    assert "out: " in printed and "jobs: " in printed
    assert (
        "design after probing the data: a family of 1 comparisons, not 2 "
        "(tabular/butterfly ruled out by the data); the analysis uses 1: verdicts at alpha 0.05"
    ) in printed
    assert printed.index("design after probing") < printed.index("tabular —")  # before tables
    for line in done.stderr.splitlines():
        assert not line.startswith(("design", "warning: with", "  out:", "  jobs:")), line
    # one track has no suite claim: no across-tracks table and no headline, its table says all
    assert "across tracks" not in printed and "headline" not in printed
    assert done.stdout.rstrip().splitlines()[-1].startswith("jobs: ")
    report = json.loads((out / "report.json").read_text())
    assert report["design"]["comparisons"] == 1
    assert report["tracks"]["tabular"]["comparisons"]["identity"]["comparison"]["family"] == 1

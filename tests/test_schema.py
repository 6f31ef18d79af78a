"""The typed results: report.json is their serialisation and reads back into the same objects;
derived keys are written and ignored on reading; compare's per-seed values are the report's.

The round trips use the real tiny run of test_html.py (made once per session)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import ClassVar

import pytest
from helpers import stored_run

from benchsuite import serial
from benchsuite.commands.compare import load_run
from benchsuite.results.analysis import analyse_store
from benchsuite.results.schema import Analysis
from benchsuite.serial import OMIT_NONE


@dataclass
class Inner:
    value: float
    bounds: tuple[float, float]


@dataclass
class Outer:
    DERIVED: ClassVar[tuple[str, ...]] = ("twice",)
    name: str
    inner: Inner
    by_name: dict[str, Inner]
    maybe: Inner | None = None
    hidden: str | None = field(default=None, metadata=OMIT_NONE)

    @property
    def twice(self) -> float:
        return 2 * self.inner.value

    def extra_keys(self) -> dict[str, float]:
        return {f"{self.name}_value": self.inner.value}


def test_plain_data_round_trip_with_nan_derived_and_omitted_keys():
    outer = Outer("x", Inner(math.nan, (1.0, math.inf)), {"a": Inner(2.0, (0.0, 1.0))})
    plain = serial.strict(serial.to_plain(outer))
    assert plain == {
        "name": "x",
        "inner": {"value": None, "bounds": [1.0, None]},
        "by_name": {"a": {"value": 2.0, "bounds": [0.0, 1.0]}},
        "maybe": None,
        "twice": None,
        "x_value": None,
    }
    back = serial.build(Outer, json.loads(json.dumps(plain)))
    assert math.isnan(back.inner.value) and back.inner.bounds[0] == 1.0
    assert back.by_name["a"] == Inner(2.0, (0.0, 1.0)) and back.maybe is None
    assert serial.to_plain(Outer("y", Inner(1.0, (0, 1)), {}, hidden="h"))["hidden"] == "h"


@pytest.fixture(scope="module")
def out(finished_run):
    return finished_run


def test_report_json_is_the_analysis_and_reads_back_into_it(out):
    raw = json.loads((out / "report.json").read_text())
    report = Analysis.from_dict(raw)
    assert report.to_dict() == raw
    fresh = analyse_store(out / "benchsuite.sqlite")
    assert fresh.to_dict() == raw  # the store and its file give the same report
    assert raw["report_version"] == 12
    assert set(raw["design"]["planned_mde"]) == set(raw["tracks"])  # the design's, per track
    for entry in raw["tracks"].values():
        for arm in entry["mixers"].values():
            assert arm["best_index"] == arm["selection"]["modal"]  # one choice, written twice
            assert arm["best_cfg"] == entry["grid"][arm["best_index"]]
        for cell in entry["comparisons"].values():
            assert "param_ratio" not in cell and cell["size"]["params_ratio"] > 0


def test_compare_reads_the_per_seed_values_the_report_holds(out):
    report = analyse_store(out / "benchsuite.sqlite")
    stored = load_run(out)
    for track, entry in report.tracks.items():
        for mixer, arm in entry.mixers.items():
            values = stored.tracks[track].values[mixer]
            assert list(values.values()) == pytest.approx(arm.full.per_seed, nan_ok=True)
            if mixer in entry.comparisons:
                seeds = entry.comparisons[mixer].seeds
                paired = [values[s] for s in seeds]
                assert paired == pytest.approx(entry.comparisons[mixer].mixer_values)


def test_a_plan_read_back_keeps_the_runs_order(out):
    """The store keeps a plan's mappings sorted; read back, its tracks and mixers are in the
    order the run listed them (dense, butterfly, attention: not sorted), so ``report`` prints its
    tables as the run did."""
    from benchsuite.plan.plan import Plan
    from benchsuite.store.store import Store

    store = Store(out / "benchsuite.sqlite")
    raw = store.last_plan()
    store.close()
    plan = Plan.from_dict(raw)
    asked = raw["settings"]["mixers"]
    assert asked != sorted(asked)
    for cells in plan.cells.values():
        assert list(cells) == [m for m in asked if m in cells]
    assert list(plan.tracks) == [t for t in raw["settings"]["tracks"] if t in plan.tracks]
    assert list(plan.mixers) == [m for m in asked if m in plan.mixers]


def test_the_report_speaks_the_vocabulary_and_its_values_are_the_old_strings(out):
    """Verdicts, suite verdicts, flags, scales and statuses are defined once
    (benchsuite.vocabulary, string enums) with the very strings report.json and the store have
    always held; a real run's report and records use no other, and no module but the vocabulary
    compares with or returns a word of it spelled out (nor does a template)."""
    from pathlib import Path

    import benchsuite
    from benchsuite.vocabulary import Flag, Scale, Status, SuiteVerdict, Verdict

    assert [v.value for v in Verdict] == [
        "significant_win",
        "significant_win_below_margin",
        "equivalent_within_margin",
        "inconclusive",
        "needs_more_seeds",  # since report version 5
        "significant_loss_below_margin",
        "significant_loss",
    ]  # the JSON values: readers of report.json depend on them
    assert {v.value for v in SuiteVerdict} == {
        "better",
        "worse",
        "not_robust",  # since report version 8 (before: "mixed")
        "mixed",
        "inconclusive",
        "one_track",
    }
    assert [s.value for s in Scale] == ["log", "difference"]
    assert [s.value for s in Status] == ["ok", "failed"]
    raw = json.loads((out / "report.json").read_text())
    for entry in raw["tracks"].values():
        for cell in entry["comparisons"].values():
            assert cell["comparison"]["verdict"] in set(Verdict)
            assert set(cell["comparison"]["flags"]) <= set(Flag)
            assert cell["comparison"]["scale"] in set(Scale)
    _, records = stored_run(out)
    assert {record.status for record in records.values()} <= set(Status)
    for row in raw["across_tracks"]["mixers"].values():
        assert row["verdict"] in set(SuiteVerdict)
    package = Path(benchsuite.__file__).parent
    words = vocabulary_words()
    spelled = [
        f"{path.name}:{line}: {word}"
        for path in package.rglob("*.py")
        if path.name != "vocabulary.py"
        for line, word in compared_or_returned(path)
        if word in words
    ]
    # the page's templates spell out no word of the vocabulary at all
    spelled += [
        f"{path.name}: {word}"
        for path in package.rglob("*.j2")
        for word in words
        if f'"{word}"' in (text := path.read_text()) or f"'{word}'" in text
    ]
    assert spelled == []


# Words of the vocabulary that are also plain English in other roles (a status, a default)
GENERIC = {"", "none", "error", "failed", "ok", "log", "val", "test", "suite", "difference"}


def vocabulary_words() -> set[str]:
    """Every value of every string enum of benchsuite.vocabulary, but the generic ones."""
    import enum

    from benchsuite import vocabulary

    kinds = [k for k in vars(vocabulary).values() if isinstance(k, enum.EnumType)]
    return {str(w) for kind in kinds if issubclass(kind, enum.StrEnum) for w in kind} - GENERIC


def compared_or_returned(path) -> list[tuple[int, str]]:
    """(line, text) of every string constant a module compares with or returns."""
    import ast

    def strings(node: ast.AST) -> list[ast.Constant]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [c for element in node.elts for c in strings(element)]
        return []

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            found += [c for side in (node.left, *node.comparators) for c in strings(side)]
        elif isinstance(node, ast.Return) and node.value is not None:
            found += strings(node.value)
    return [(c.lineno, c.value) for c in found]


def test_every_cost_a_run_records_is_declared_once_with_its_unit(out):
    """The costs in a real run's records are all declared in benchsuite.measures (their unit
    and label come from there); the trade-off axes of report.json are its trade-off costs."""
    from benchsuite.measures import COSTS, TRADEOFFS

    report = json.loads((out / "report.json").read_text())
    recorded = {
        key
        for entry in report["tracks"].values()
        for arm in entry["mixers"].values()
        for key in arm["costs"]
    }
    assert recorded and recorded <= set(COSTS), recorded - set(COSTS)
    assert report["quality_vs_cost"]["costs"] == list(TRADEOFFS)

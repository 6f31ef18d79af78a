"""What a job measures is declared once (benchsuite/measures.py): no other module spells a cost's
or a score's name, the stored forms read back as they were written, and every declaration says
how it is shown."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import benchsuite
from benchsuite import serial
from benchsuite.measures import COSTS, FIGURED, TRADEOFFS, Costs, Scores, Unit
from benchsuite.vocabulary import Split

PACKAGE = Path(benchsuite.__file__).parent
DECLARING = PACKAGE / "measures.py"
NAMES = frozenset(COSTS) | {"train_loss"}
SCORE_PREFIXES = tuple(f"{split}." for split in Split)
# The same word in another vocabulary: (module, word) and why it is not a measurement's name.
OTHER_VOCABULARIES = {
    ("budget.py", "steps"): "the kind of a budget knob read as a list of steps",
    ("commands/scale_settings.py", "steps"): "a setting of benchsuite scale",
    ("output/scaling.py", "steps"): "that setting, read from scaling.json",
    ("train/optimizers.py", "params"): "a key of the optimiser's saved state",
    ("train/optimizers.py", "steps"): "a key of the optimiser's saved state",
    ("train/probes.py", "mixer_params"): "a mechanism probe's name",
    ("train/stopping.py", "steps"): "a sweep point's field (the steps a config trained)",
    ("vocabulary.py", "params"): "the equal-size rule's name (--match params)",
}


def spelled(source: str) -> list[tuple[int, str]]:
    """Where ``source`` writes a cost's or a score's name as a string literal: a name on its
    own, or an f-string that starts a score's key (``f"test.{metric}"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in NAMES:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and str(head.value).endswith(SCORE_PREFIXES):
                found.append((node.lineno, f"{head.value}…"))
    return found


def test_no_module_but_the_declaring_one_spells_a_measurement_name():
    wrong = [
        f"{path.relative_to(PACKAGE)}:{line}: {word!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != DECLARING
        for line, word in spelled(path.read_text())
        if (path.relative_to(PACKAGE).as_posix(), word) not in OTHER_VOCABULARIES
    ]
    assert not wrong, wrong


def test_the_guard_finds_a_planted_name():
    planted = (
        "def step_time(record):\n"
        "    return record.costs['seconds_per_step']\n"
        "def score(record, metric):\n"
        "    return record.metrics[f'test.{metric}'], record.metrics['train_loss']\n"
    )
    assert spelled(planted) == [(2, "seconds_per_step"), (4, "test.…"), (4, "train_loss")]


def test_every_cost_says_how_it_is_shown():
    assert set(TRADEOFFS) <= set(COSTS) and TRADEOFFS
    for name, cost in COSTS.items():
        assert cost.label and cost.unit in Unit, name
    columns = [c.column for c in COSTS.values() if c.column]
    assert len(columns) == len(set(columns))  # one heading per column of list --costs
    assert {COSTS[name].unit for name in FIGURED} <= {Unit.SECONDS, Unit.BYTES, Unit.FLOPS}


def test_costs_are_stored_as_the_measured_ones_and_read_back():
    costs = Costs(params=1200.0, seconds_per_step=0.002)
    stored = serial.to_plain(costs)
    assert stored == {"params": 1200.0, "seconds_per_step": 0.002}  # nothing unmeasured
    assert serial.build(Costs, {**stored, "retired_cost": 3.0}) == costs  # unknown names left out
    median = Costs.median([costs, Costs(params=1000.0), Costs(params=1100.0, steps=40.0)])
    assert median == Costs(params=1100.0, seconds_per_step=0.002, steps=40.0)


def test_scores_read_and_write_the_flat_stored_form():
    stored = {
        "train_loss": 0.5,
        "val.mse": 0.5,
        "val.mse@rung0": 0.25,
        "val.mse@rung1": 0.75,
        "test.mse": 0.25,
        "test.mse@rung0": 0.125,
        "test.mse@rung1": 0.375,
    }
    scores = Scores.from_dict(stored)
    assert scores.of(Split.TEST, "mse") == 0.25 and scores.rungs[1].val == {"mse": 0.75}
    assert math.isnan(scores.of(Split.VAL, "accuracy"))
    assert scores.to_plain() == stored
    validated = Scores.over_rungs([Scores(val={"mse": 0.25}), Scores(val={"mse": 0.75})], 0.5)
    tested = Scores.over_rungs([Scores(test={"mse": 0.125}), Scores(test={"mse": 0.375})])
    assert validated.with_test(tested).to_plain() == stored  # as the trainer builds a record's

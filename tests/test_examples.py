"""Every config in examples/ loads through the real settings loader and resolves against the real
registry (no training): its track variants are the grid it says, and its seeds can reach a
significant verdict after Holm over the comparisons it asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchsuite.plan.resolve import resolve
from benchsuite.protocol.power import min_seeds_for_significance
from benchsuite.registry import load_registry
from benchsuite.settings import load_config, merge

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.toml"))


@pytest.fixture(scope="module")
def registry():
    return load_registry()


def test_there_are_examples():
    assert {path.name for path in EXAMPLES} >= {"mqar-cpu.toml", "mqar-gpu.toml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_an_example_loads_and_resolves(registry, path):
    settings = merge(load_config(path))
    widths = len(settings.axes.get("dim", ())) or 1
    done = resolve(settings.replace(device="cpu"), registry)  # no GPU needed to check it
    assert len(done.tracks) == len(settings.tracks) * widths
    family = len(done.tracks) * (len(done.mixers) - 1)
    assert done.seeds >= min_seeds_for_significance(family)
    for name in done.tracks:
        options = done.track_options[name]
        assert options["num_pairs"] <= options["num_keys"]
        assert 2 * options["num_pairs"] <= options["seq_len"] - options["num_queries"]


def test_the_cpu_reproduction_runs_attention_against_the_zoology_mixers(registry):
    settings = merge(load_config(EXAMPLES[0].parent / "mqar-cpu.toml"))
    done = resolve(settings, registry)
    assert done.baseline == "attention" and done.device == "cpu"
    assert set(done.mixers) == {"attention", "longconv", "mamba", "gla", "based"}
    lengths = {done.track_options[name]["seq_len"] for name in done.tracks}
    assert min(lengths) == 64 and max(lengths) >= 128

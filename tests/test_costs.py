"""Costs of a mixer on a track: counts checked against hand-computed values on real models."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
from helpers import invoke
from rich.console import Console
from torch import nn

from benchsuite import Mixer, Option, UsageError
from benchsuite.commands.costs import costs_table, measure_costs
from benchsuite.mixers import dense, fnet
from benchsuite.output.listing import print_costs
from benchsuite.registry import Registry, load_registry
from benchsuite.seeds import Streams
from benchsuite.specs import resolve_options
from benchsuite.tracks.sequence import SequenceTrack
from benchsuite.train.measures import activation_bytes, forward_flops

OPTIONS = {"series": 24, "lookback": 12}


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def track() -> SequenceTrack:
    return SequenceTrack()


@pytest.fixture(scope="module")
def data(track):
    options = resolve_options(track.options, OPTIONS, track.name)
    return track.load(Streams("test", track.name, 0), options, "quick", None)


def dense_mixer(**changes) -> Mixer:
    fields = {"name": "dense", "build": dense.build, "options": (Option("init_scale", float, 1.0),)}
    return Mixer(**{**fields, **changes})


def test_forward_flops_count_two_per_multiply_add():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    assert forward_flops(model, torch.randn(5, 8)) == 2 * 5 * (8 * 16 + 16 * 4)


def test_forward_flops_count_ffts():
    tokens, dim = 16, 32
    expected = 5 * tokens * dim * math.log2(tokens * dim)  # one complex 2-D FFT
    assert forward_flops(fnet.build(tokens, dim), torch.randn(1, tokens, dim)) == expected


def test_forward_flops_count_fused_attention_on_cpu():
    class Attention(nn.Module):
        def forward(self, x):
            return nn.functional.scaled_dot_product_attention(x, x, x)

    batch, heads, tokens, width = 2, 4, 16, 8
    expected = 2 * (2 * batch * heads * tokens * tokens * width)  # scores, then weights @ values
    assert forward_flops(Attention(), torch.randn(batch, heads, tokens, width)) == expected


def test_activation_bytes_count_saved_tensors_once_and_skip_parameters():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    # the input (kept for the first weight's gradient) and the ReLU output (kept by ReLU and by
    # the second Linear: one storage); weights are parameters
    assert activation_bytes(model, torch.randn(5, 8)) == 4 * 5 * (8 + 16)


def test_measure_costs_on_the_real_model(track, data):
    budget = track.budget("quick")
    costs = measure_costs(track, dense_mixer(), data, budget, track_options=OPTIONS)
    tokens = data.tokens
    assert costs.mixer_params == budget.depth * (tokens * tokens + tokens)
    assert costs.params > costs.mixer_params
    assert 0 < costs.seconds_per_step < 1
    assert costs.activation_bytes > 0
    assert costs.peak_memory_bytes is None  # CPU
    smaller = dataclasses.replace(budget, batch_size=budget.batch_size // 2)
    again = measure_costs(track, dense_mixer(), data, smaller, track_options=OPTIONS)
    assert again.flops_per_example == costs.flops_per_example
    assert again.activation_bytes < costs.activation_bytes


def _broken(tokens: int, dim: int) -> nn.Module:
    raise RuntimeError("this mixer is broken\nsecond line")


def test_costs_table_gives_reasons_and_parameter_ratios(track):
    registry = Registry(
        mixers={
            "dense": dense_mixer(),
            "wide": Mixer(name="wide", build=lambda tokens, dim: nn.Linear(dim, dim)),
            "only16": dense_mixer(
                name="only16",
                supports=lambda tokens, dim: None if tokens == 16 else f"needs 16 (got {tokens})",
            ),
            "broken": Mixer(name="broken", build=_broken),
        },
        tracks={"sequence": track},
    )
    rows = costs_table(
        registry, "quick", mixers=["wide", "only16", "broken"], track_options={"sequence": OPTIONS}
    )
    by_mixer = {row["mixer"]: row for row in rows}
    assert [row["mixer"] for row in rows] == ["dense", "wide", "only16", "broken"]
    assert by_mixer["only16"]["reason"] == "needs 16 (got 12)"
    assert by_mixer["broken"]["reason"] == "failed: RuntimeError: this mixer is broken"
    dense_row, wide = by_mixer["dense"], by_mixer["wide"]
    assert dense_row["reason"] is None and dense_row["params_vs_baseline"] == 1.0
    assert wide["params_vs_baseline"] == wide["params"] / dense_row["params"]
    assert wide["param_mismatch"] == (abs(wide["params_vs_baseline"] - 1) > 0.1)
    console = Console(record=True, width=200)
    print_costs(rows, console)
    text = console.export_text()
    assert "needs 16 (got 12)" in text and "broken" in text


def test_costs_are_of_the_model_the_run_trains_sized_by_the_same_rule(track):
    """A mixer without parameters is a fraction of the baseline's size as declared; the run
    widens its channel MLPs to within 10% (the equal-size rule), and so does the listing, which
    says how (``sized_by``); with ``match="none"`` both keep the declared size."""

    def big(tokens, dim):  # a baseline whose mixer holds most of the model's parameters
        return nn.Sequential(nn.Linear(dim, 8 * dim), nn.Linear(8 * dim, dim))

    empty = Mixer(name="empty", build=lambda tokens, dim: nn.Identity())
    registry = Registry(
        mixers={"big": Mixer(name="big", build=big), "empty": empty}, tracks={"sequence": track}
    )
    given = {"mixers": ["empty"], "baseline": "big", "track_options": {"sequence": OPTIONS}}
    sized = {r["mixer"]: r for r in costs_table(registry, "quick", **given)}
    declared = {r["mixer"]: r for r in costs_table(registry, "quick", **given, match="none")}
    assert declared["empty"]["param_mismatch"] and declared["empty"]["params_vs_baseline"] < 0.9
    assert declared["empty"]["sized_by"] == "as declared"
    assert not sized["empty"]["param_mismatch"] and sized["empty"]["sized_by"] == "mlp_hidden"
    assert abs(sized["empty"]["params_vs_baseline"] - 1) <= 0.1
    assert sized["big"]["params"] == declared["big"]["params"]  # the baseline is the target


def test_costs_take_a_track_variant_sized_as_the_run_sizes_it():
    """``list --costs --tracks 'sequence[dim=24,depth=1]'`` measures the variant's model (its
    width and depth, the run's equal-size rule) under its canonical name, as ``run`` takes it."""
    registry = load_registry()
    asked = "sequence[lookback=12,dim=24,depth=1]"
    rows = costs_table(
        registry, "quick", [asked], ["attention"], track_options={"sequence": OPTIONS}
    )
    assert [(r["track"], r["mixer"]) for r in rows] == [
        ("sequence[depth=1,dim=24,lookback=12]", "dense"),
        ("sequence[depth=1,dim=24,lookback=12]", "attention"),
    ]
    dense_row, attention = rows
    assert (dense_row["dim"], dense_row["depth"], dense_row["tokens"]) == (24, 1, 12)
    assert attention["sized_by"] == "mlp_hidden" and not attention["param_mismatch"]
    console = Console(record=True, width=200)
    print_costs(rows, console)
    assert "costs on sequence[depth=1,dim=24,lookback=12] (12 tokens, dim 24, depth 1)" in (
        console.export_text()
    )
    with pytest.raises(UsageError, match="unknown key 'width'"):
        costs_table(registry, "quick", ["sequence[width=24]"], ["attention"])


def test_costs_table_refuses_unknown_names(track):
    registry = Registry(mixers={"dense": dense_mixer()}, tracks={"sequence": track})
    with pytest.raises(UsageError, match="unknown mixer 'nope'"):
        costs_table(registry, "quick", mixers=["nope"])


def test_a_track_without_the_preset_is_listed_only_when_named_with_its_reason(track):
    """By default the tracks of the preset asked for (each announced as its measuring starts);
    a track named without that preset gets its reason."""
    from benchsuite.tracks.mad import MadTrack

    only_full = next(t for t in load_registry().tracks.values() if set(t.budgets) == {"full"})
    assert isinstance(only_full, MadTrack)
    registry = Registry(
        mixers={"dense": dense_mixer()}, tracks={"sequence": track, only_full.name: only_full}
    )
    heard: list[str] = []
    default = costs_table(registry, "quick", track_options={"sequence": OPTIONS}, say=heard.append)
    assert {row["track"] for row in default} == {"sequence"}
    assert heard == ["measuring 1 mixers on sequence (1/1)…"]
    named = ["sequence", only_full.name]
    rows = costs_table(registry, "quick", named, track_options={"sequence": OPTIONS})
    skipped = [row for row in rows if row["track"] == only_full.name]
    assert skipped == [
        {
            "track": only_full.name,
            "mixer": "dense",
            "dim": None,
            "depth": None,
            "tokens": None,
            "reason": "no 'quick' preset (has full; --preset picks one)",
        }
    ]
    assert next(row for row in rows if row["track"] == "sequence")["reason"] is None
    console = Console(record=True, width=200)
    print_costs(rows, console)
    assert f"{only_full.name} / dense: no 'quick' preset (has full" in console.export_text()


@pytest.mark.slow
def test_list_costs_lists_the_quick_tracks_with_full_only_tracks_installed():
    done = invoke("list", "--costs", "--mixers", "dense,identity", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    tracks = {row["track"] for row in rows}
    assert not tracks & {"compression", "memorization"}  # full-only: not in a quick listing
    assert {row["track"] for row in rows if row["reason"] is None} >= {"sequence", "tabular"}
    assert done.stderr.count("measuring 2 mixers on ") == len(tracks)

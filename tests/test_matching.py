"""The equal-size rule (docs/protocol.md, "Equal size"): an oversized mixer written here is brought
within ±10% of the baseline's parameters by its size option or the channel-MLP width (from half to
four times its declared width), the shared parts keep their initial weights, a mixer that cannot be
matched is reported with its ratio, and report.json gives both counts of every comparison."""

from __future__ import annotations

import json
import re

import pytest
import torch
from torch import nn

from benchsuite import Mixer, Option, UsageError, api
from benchsuite.plan import matching
from benchsuite.plan.plan import plan_run
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.registry.variants import lookup
from benchsuite.settings import RunSettings
from benchsuite.train.job import build_model, load_data
from benchsuite.train.size import parameter_count

BUDGET = {"steps": 8, "dim": 16}
TRACK = {"sequence": {"series": 16, "length": 48}}


def wide(tokens: int, dim: int, width: int = 2) -> nn.Module:
    """A per-token MLP of ``width * dim`` hidden units: more parameters than dense's."""
    return nn.Sequential(nn.Linear(dim, width * dim), nn.GELU(), nn.Linear(width * dim, dim))


def units(tokens: int, dim: int, width: int = 256) -> nn.Module:
    """A per-token MLP of ``width`` hidden units (a size option at the finest grain)."""
    return nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, dim))


def huge(tokens: int, dim: int) -> nn.Module:
    """A mixer whose own parameters alone exceed the whole baseline model's."""
    return nn.Sequential(nn.Linear(dim, 20 * dim), nn.Linear(20 * dim, dim))


@pytest.fixture(scope="module")
def registry():
    registry = load_registry()
    registry.add(Mixer(name="wide", build=units, options=(Option("width", int, 24),)))
    registry.add(Mixer(name="wider", build=wide, options=(Option("width", int, 6),)))
    registry.add(
        Mixer(name="sized", build=units, options=(Option("width", int, 256),), size_option="width")
    )
    registry.add(Mixer(name="huge", build=huge))
    return registry


def planned(registry, mixers, **settings):
    settings = RunSettings(
        tracks=("sequence",), mixers=mixers, seeds=2, budget=BUDGET, track_options=TRACK, **settings
    )
    done = resolve(settings, registry)
    return plan_run(done, registry.tracks, registry.mixers, parameter_count)


def real_params(registry, plan, mixer: str) -> int:
    """Parameters of the model a cell's first job really trains (built on the CPU)."""
    job = plan.jobs[plan.cells["sequence"][mixer].jobs[0]]
    model = build_model(
        registry.tracks["sequence"],
        lookup(registry.mixers, mixer),
        load_data(registry.tracks["sequence"], job),
        job,
    )
    return sum(p.numel() for p in model.parameters())


def test_bisection_finds_the_closest_whole_number():
    assert matching.closest(lambda v: 10 * v + 3, 160, 1, 1000) == (16, 163)
    assert matching.closest(lambda v: 10 * v, 5, 1, 50) == (1, 10)  # the band may be out of reach
    assert matching.closest(lambda v: v * v, 50, 1, 100) == (7, 49)


def test_an_oversized_mixer_is_brought_within_ten_percent_by_the_mlp_width(registry):
    before = planned(registry, ("wide",), match="none").cells["sequence"]
    assert before["wide"].size is None
    off = real_params(registry, planned(registry, ("wide",), match="none"), "wide")
    plan = planned(registry, ("wide",))
    base, cell = plan.cells["sequence"]["dense"].size, plan.cells["sequence"]["wide"].size
    target = real_params(registry, plan, "dense")
    assert off / target > 1.1  # deliberately oversized as declared
    assert base.by == "baseline" and base.params == target
    assert cell.by == "mlp_hidden" and cell.within
    assert abs(real_params(registry, plan, "wide") / target - 1) <= 0.10
    assert cell.params == real_params(registry, plan, "wide")  # meta count = the real model
    job = plan.jobs[plan.cells["sequence"]["wide"].jobs[0]]
    declared = job.budget.mlp_ratio * BUDGET["dim"]
    assert declared / 2 <= job.mlp_hidden == cell.set["mlp_hidden"] < declared  # narrower
    assert job.key not in set(planned(registry, ("wide",), match="none").jobs)


def test_a_declared_size_option_is_searched_first_unless_the_run_gives_it(registry):
    plan = planned(registry, ("sized", "sized[width=24]"))
    searched, given = (
        plan.cells["sequence"]["sized"].size,
        plan.cells["sequence"]["sized[width=24]"],
    )
    assert searched.by == "option width" and searched.within
    job = plan.jobs[plan.cells["sequence"]["sized"].jobs[0]]
    assert job.mixer_options["width"] == searched.set["width"] < 256 and job.mlp_hidden is None
    assert given.size.by == "mlp_hidden" and given.size.within
    assert plan.jobs[given.jobs[0]].mixer_options["width"] == 24


def test_shared_parts_start_from_the_baselines_weights(registry):
    plan = planned(registry, ("wide",))
    models = {}
    for mixer in ("dense", "wide"):
        job = plan.jobs[plan.cells["sequence"][mixer].jobs[0]]
        data = load_data(registry.tracks["sequence"], job)
        models[mixer] = build_model(
            registry.tracks["sequence"], lookup(registry.mixers, mixer), data, job
        ).state_dict()
    shared = [k for k in models["dense"] if ".mixer." not in k and ".mlp." not in k]
    assert len(shared) > 6  # tokenizer, norms, head
    assert all(torch.equal(models["dense"][k], models["wide"][k]) for k in shared)
    assert (
        models["dense"]["blocks.0.mlp.0.weight"].shape
        != models["wide"]["blocks.0.mlp.0.weight"].shape
    )


@pytest.mark.parametrize("mixer", ["huge", "wider"])
def test_a_mixer_that_cannot_be_matched_says_so_with_its_ratio(registry, mixer):
    """``huge`` holds more than the whole baseline; ``wider`` would need channel MLPs narrower
    than half their declared width."""
    plan = planned(registry, (mixer,))
    size = plan.cells["sequence"][mixer].size
    assert not size.within and size.ratio > 1.1
    assert size.by == "unmatched" and size.set == {}  # trained as declared
    found = re.fullmatch(
        r"no size within ±10% of the baseline's parameters \(closest \d+\.\d\dx "
        rf"at mlp_hidden=(\d+)\): trained as declared, {size.ratio:.2f}x",
        size.reason,
    )
    budget = plan.jobs[plan.cells["sequence"][mixer].jobs[0]].budget
    assert found and int(found[1]) == budget.mlp_ratio * BUDGET["dim"] / 2  # the narrowest


def test_an_unknown_match_is_a_one_line_error_and_a_bad_size_option_skips_its_mixer(registry):
    with pytest.raises(UsageError, match=r"^unknown --match 'flop'; valid: params, none$"):
        planned(registry, ("wide",), match="flop")
    registry.add(Mixer(name="badsize", build=wide, size_option="depth"))
    plan = planned(registry, ("badsize", "wide"))
    [skip] = plan.skipped
    assert (skip.mixer, skip.kind) == ("badsize", "error")
    assert skip.reason == (
        "mixer 'badsize': size_option 'depth' is not one of its whole-number options (none)"
    )
    assert set(plan.cells["sequence"]) == {"dense", "wide"}


def test_report_json_gives_both_counts_and_flags_the_unmatched(registry, tmp_path):
    settings = RunSettings(
        tracks=("sequence",),
        mixers=("wide", "huge"),
        seeds=2,
        budget=BUDGET,
        track_options=TRACK,
        executor="local",
        jobs=1,
        grids={"sequence": {"lr": (0.01,)}},
        out=str(tmp_path),
    )
    summary = api.run(settings, registry=registry)
    assert summary.failed == 0
    report = json.loads((tmp_path / "report.json").read_text())
    comparisons = report["tracks"]["sequence"]["comparisons"]
    matched, unmatched = comparisons["wide"], comparisons["huge"]
    for cell in (matched, unmatched):
        size = cell["size"]
        assert size["params_ratio"] == size["mixer_params"] / size["baseline_params"]
        assert size["baseline_params"] > 0 and size["mixer_params"] > 0
        assert size["flops_ratio"] == size["mixer_flops"] / size["baseline_flops"] > 0
    assert abs(matched["size"]["params_ratio"] - 1) <= 0.10 and matched["size"]["within"]
    assert "param_mismatch" not in matched["comparison"]["flags"]
    assert "param_mismatch" in unmatched["comparison"]["flags"]
    assert unmatched["size"]["reason"].startswith("no size within ±10%")


def test_an_option_whose_default_is_zero_is_searched_up_to_the_declared_size():
    """A size the mixer derives from the shape (``mlp``'s ``hidden``, default 0) is searched from
    1 to the least power of two at which the model is as large as declared; another option to 8
    times its default."""
    assert matching.option_range(lambda v: 100 * v, 0, 1000) == 16  # 1600 >= 1000 > 800
    assert matching.option_range(lambda v: 100 * v, 0, 50) == 1
    assert matching.option_range(lambda v: 100 * v, 3, 1000) == 24


def test_every_built_in_mixer_is_matched_on_every_default_track():
    """Issue 49's rule on the quick preset: each built-in mixer within ±10% of the baseline's
    parameters on each default track, its channel MLPs between half and four times their
    declared width (docs/protocol.md, "Equal size")."""
    registry = load_registry()
    mixers = tuple(
        sorted(m for m in registry.mixers if registry.mixers[m].module.startswith("benchsuite."))
    )
    settings = RunSettings(mixers=mixers, seeds=2)
    plan = plan_run(resolve(settings, registry), registry.tracks, registry.mixers, parameter_count)
    assert len(plan.tracks) == 6 and not [s for s in plan.skipped if s.mixer != "butterfly"]
    for track, cells in plan.cells.items():
        declared = plan.tracks[track].budget.mlp_ratio * plan.tracks[track].budget.dim
        for mixer, cell in cells.items():
            assert cell.size.within, (track, mixer, cell.size)
            hidden = plan.jobs[cell.jobs[0]].mlp_hidden or declared
            assert declared / 2 <= hidden <= 4 * declared, (track, mixer, hidden)

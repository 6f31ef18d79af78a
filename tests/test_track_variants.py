"""Track variants (``recall[dim=64,seq_len=256]``) and axes (``--axis dim=32,64``, ``[axes]``):
canonical names, what a variant changes (options, budget), how it merges with --track-option,
--budget and --grid, its one-line errors, and a real run where each variant is a track of its
own in the store and the report lays them side by side."""

from __future__ import annotations

import argparse
import json
import sqlite3

import pytest

from benchsuite import UsageError, api
from benchsuite.cli.arguments import add_settings, given
from benchsuite.output.track_tables import axes_section
from benchsuite.plan.jobs import effective_budget
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.results.axes import axis_groups
from benchsuite.settings import RunSettings, load_config, merge


@pytest.fixture(scope="module")
def registry():
    return load_registry()


def resolved(registry, tracks, **settings):
    return resolve(
        RunSettings(
            tracks=tracks,
            mixers=("attention", "identity"),
            baseline="attention",
            seeds=2,
            **settings,
        ),
        registry,
    )


def test_a_variant_is_named_canonically_and_sets_options_and_budget(registry):
    done = resolved(registry, ("recall[ seq_len = 0256, dim=64,num_queries=128]", "recall"))
    name = "recall[dim=64,num_queries=128,seq_len=256]"
    assert done.tracks == (name, "recall")
    assert done.track_options[name]["seq_len"] == 256
    assert done.track_options[name]["num_queries"] == 128
    assert done.track_options["recall"]["seq_len"] == 128  # the base track is unchanged
    variant = registry.tracks[name]  # rebuilt from its name, as a worker process does
    assert variant.name == name
    assert effective_budget(variant, done).dim == 64
    assert effective_budget(registry.tracks["recall"], done).dim == 32
    assert name in registry.tracks and name not in list(registry.tracks)


def test_axes_expand_every_track_and_their_options_merge(registry):
    done = resolved(
        registry,
        ("recall[seq_len=64,num_queries=32]",),
        axes={"dim": (16, 32), "steps": ("5",)},
        track_options={"recall": {"num_keys": "16", "seq_len": "999"}},
        grids={"recall": {"lr": (0.01,)}},
    )
    names = [
        "recall[dim=16,num_queries=32,seq_len=64,steps=5]",
        "recall[dim=32,num_queries=32,seq_len=64,steps=5]",
    ]
    assert list(done.tracks) == names and done.axes == {}
    for name in names:  # the base's option applies, except what the brackets set
        assert done.track_options[name]["num_keys"] == 16
        assert done.track_options[name]["seq_len"] == 64
        assert done.grids[name] == {"lr": (0.01,)}


@pytest.mark.parametrize(
    ("tracks", "extra", "message"),
    [
        (("recall[dim=64",), {}, "malformed brackets"),
        (("recall[dim]",), {}, "is not KEY=VALUE"),
        (("recall[widht=64]",), {}, "unknown key 'widht'"),
        (("recall[dim=0]",), {}, "must be at least 1"),
        (("recall[seq_len=many]",), {}, "recall.seq_len"),
        (("recal[dim=64]",), {}, "unknown track"),
        (("recall[dim=64]", "recall[ dim=64 ]"), {}, "named twice"),
        (("recall[dim=64]",), {"axes": {"dim": (32,)}}, "which an axis also varies"),
        (("recall[dim=64]",), {"budget": {"dim": 16}}, "both by --budget and by the track"),
        (("recall",), {"track_options": {"recall[dim=64]": {"seq_len": 64}}}, "inside its"),
    ],
)
def test_mistakes_are_one_line_usage_errors(registry, tracks, extra, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[")):
        resolved(registry, tracks, **extra)


def test_the_config_file_gives_axes_and_the_flag_too(tmp_path):
    config = tmp_path / "bench.toml"
    config.write_text('[run]\ntracks = ["recall[seq_len=64]"]\n[axes]\ndim = [32, 64]\n')
    assert merge(load_config(config)).axes == {"dim": (32, 64)}
    config.write_text("[axes]\ndim = 32\n")
    with pytest.raises(UsageError, match=r"axes\.dim must be a list of values"):
        load_config(config)
    parser = argparse.ArgumentParser()
    add_settings(parser, RunSettings)
    args = parser.parse_args(["--axis", "dim=32,64", "--axis", "seq_len=64"])
    assert given(RunSettings, args)["axes"] == {"dim": ("32", "64"), "seq_len": ("64",)}
    with pytest.raises(UsageError, match="expected KEY=V1,V2"):
        given(RunSettings, parser.parse_args(["--axis", "dim"]))


TINY = """
[run]
tracks = ["recall[seq_len=32,num_queries=16]"]
mixers = ["attention", "identity"]
baseline = "attention"
seeds = 2
executor = "process"
jobs = 1
out = "{out}"
[axes]
dim = [8, 16]
[budget]
steps = 6
[tracks.recall.grid]
lr = [0.01]
"""


@pytest.mark.slow
def test_each_variant_is_a_track_of_its_own_in_a_real_run(tmp_path):
    out, config = tmp_path / "out", tmp_path / "bench.toml"
    config.write_text(TINY.format(out=out))
    summary = api.run(merge(load_config(config)))  # worker processes rebuild the variants
    assert (summary.trained, summary.failed) == (8, 0)  # 2 variants x 2 mixers x 2 seeds
    names = ["recall[dim=8,num_queries=16,seq_len=32]", "recall[dim=16,num_queries=16,seq_len=32]"]
    assert list(summary.report.tracks) == names
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        jobs = [json.loads(text)["job"] for (text,) in db.execute("SELECT record FROM results")]
    assert {(j["track"], j["budget"]["dim"], j["track_options"]["seq_len"]) for j in jobs} == {
        (names[0], 8, 32),
        (names[1], 16, 32),
    }
    (group,) = axis_groups(summary.report)
    assert (group.track, group.column, group.values) == ("recall", "dim", ["8", "16"])
    assert [row.mixer for row in group.rows] == ["attention", "identity"]
    identity = group.rows[1].cells
    assert identity["8"].mean == summary.report.tracks[names[0]].mixers["identity"].full.mean
    assert identity["16"].verdict is not None and group.rows[0].cells["8"].verdict is None
    assert "recall: accuracy against dim" in axes_section(summary.report)
    assert "recall: accuracy against dim" in (out / "report.html").read_text()

"""Mixer variants (``attention[heads=2]``) and tag selections in ``--mixers`` and the config: their
canonical names, their one-line errors, how their options merge with ``--mixer-option``, and a
real run where two variants of one mixer are two comparisons and changing one retrains only it."""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers import invoke

from benchsuite import Mixer, UsageError, api
from benchsuite.output.listing import listing
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.settings import RunSettings, load_config, merge, split_names


@pytest.fixture(scope="module")
def registry():
    return load_registry()


def resolved(registry, **settings):
    return resolve(RunSettings(tracks=("sequence",), seeds=2, **settings), registry)


def test_commas_inside_brackets_do_not_split_names():
    text = "dense, attention[heads=2,x=1],attention[heads=8],"
    assert split_names(text) == ("dense", "attention[heads=2,x=1]", "attention[heads=8]")


def test_a_variant_is_named_canonically_with_its_options_parsed(registry):
    done = resolved(
        registry,
        mixers=(
            "attention[ heads = 02 ]",
            "dense[init_scale=0.5]",
            "longconv[filter=explicit,causal=false]",
        ),
    )
    assert done.mixers == (
        "dense",
        "attention[heads=2]",
        "dense[init_scale=0.5]",
        "longconv[causal=false,filter=explicit]",
    )
    assert done.mixer_options["attention[heads=2]"] == {"heads": 2}
    assert done.mixer_options["dense[init_scale=0.5]"] == {"init_scale": 0.5}
    assert done.mixer_options["longconv[causal=false,filter=explicit]"]["causal"] is False


def test_variant_options_win_over_mixer_option_which_every_variant_shares(registry):
    variant = "longconv[filter=explicit]"
    given = {"longconv": {"filter": "implicit", "causal": "false"}}
    done = resolved(registry, mixers=("longconv", variant), mixer_options=given)
    assert done.mixer_options["longconv"] | {"order": 0} == {
        "filter": "implicit",
        "causal": False,
        "order": 0,
    }
    assert (done.mixer_options[variant]["filter"], done.mixer_options[variant]["causal"]) == (
        "explicit",
        False,
    )


def test_the_baseline_may_be_a_variant(registry):
    done = resolved(registry, mixers=("attention",), baseline="attention[heads=1]")
    assert done.baseline == "attention[heads=1]"
    assert done.mixers == ("attention[heads=1]", "attention")


@pytest.mark.parametrize(
    ("mixers", "message"),
    [
        (
            ("attention[depth=2]",),
            "mixer 'attention[depth=2]': unknown option attention.depth; valid options of "
            "attention: heads",
        ),
        (("atention[heads=2]",), "unknown mixer 'atention' (did you mean 'attention'?)"),
        (
            ("attention[heads=2",),
            "mixer 'attention[heads=2': malformed brackets; expected NAME[KEY=VALUE,...]",
        ),
        (("attention]",), "mixer 'attention]': malformed brackets"),
        (("attention[heads]",), "mixer 'attention[heads]': 'heads' is not KEY=VALUE"),
        (
            ("attention[heads=two]",),
            "mixer 'attention[heads=two]': option attention.heads: expected int, got 'two'",
        ),
        (
            ("attention[heads=2]", "attention[heads=02]"),
            "mixer 'attention[heads=2]' is named twice",
        ),
        (("tag:nope",), "no mixer has the tag 'nope'; declared tags: control, local, recurrent"),
    ],
)
def test_a_bad_variant_is_a_one_line_error_naming_it(registry, mixers, message):
    with pytest.raises(UsageError) as error:
        resolved(registry, mixers=("dense", *mixers))
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_options_for_a_variant_go_inside_its_brackets(registry):
    with pytest.raises(UsageError, match=r"give a variant's options inside its brackets"):
        resolved(
            registry,
            mixers=("attention[heads=2]",),
            mixer_options={"attention[heads=2]": {"heads": "1"}},
        )


def test_a_tag_selects_every_mixer_that_declares_it():
    registry = load_registry()
    for name in ("recur_a", "recur_b"):
        registry.add(Mixer(name=name, build="torch.nn:Identity", tags=("test_tag",)))
    settings = RunSettings(tracks=("sequence",), seeds=2, mixers=("tag:test_tag", "attention"))
    done = resolve(settings, registry)
    assert done.mixers == ("dense", "recur_a", "recur_b", "attention")
    assert listing(registry)["mixers"]["recur_a"]["tags"] == ["test_tag"]
    built_in = resolve(
        RunSettings(tracks=("sequence",), seeds=2, mixers=("tag:recurrent",)), load_registry()
    )
    assert built_in.mixers == (
        "dense",
        "based",
        "deltanet",
        "gated_deltanet",
        "gla",
        "mamba",
        "retnet",
    )


def test_the_config_file_names_variants(tmp_path, registry):
    config = tmp_path / "bench.toml"
    config.write_text('[run]\nmixers = ["dense", "attention[heads=2]", "attention[heads=8]"]\n')
    settings = merge({"tracks": ("sequence",), "seeds": 2}, load_config(config))
    assert resolve(settings, registry).mixers == (
        "dense",
        "attention[heads=2]",
        "attention[heads=8]",
    )


def test_list_shows_the_variant_syntax():
    done = invoke("list")
    assert done.returncode == 0, done.stderr
    assert "--mixers 'dense,attention[heads=2],attention[heads=8]'" in " ".join(done.stdout.split())


def test_test_costs_and_scale_take_variant_names(tmp_path):
    """``benchsuite test``, ``list --costs`` and ``scale`` run a variant under its own name, with
    its options (a wrong one is the same one-line error as in a run)."""
    done = invoke("test", "attention[heads=2]", "--tokens", "8", "--dims", "16")
    assert done.returncode == 0, done.stderr
    assert "attention[heads=2] shapes: passed" in done.stdout
    assert "attention[heads=2] batch-independence: passed" in done.stdout
    wrong = invoke("test", "attention[heads=3]", "--tokens", "8", "--dims", "16")
    assert wrong.returncode == 1 and "not divisible by heads=3" in wrong.stdout  # options reach it
    costs = invoke(
        "list",
        "--costs",
        "--json",
        "--tracks",
        "sequence",
        "--mixers",
        "dense,attention[heads=2],attention[heads=8]",
    )
    assert costs.returncode == 0, costs.stderr
    rows = {row["mixer"]: row for row in json.loads(costs.stdout)}
    assert {"attention[heads=2]", "attention[heads=8]"} <= set(rows)
    heads2 = rows["attention[heads=2]"]
    assert heads2["sized_by"] == "mlp_hidden" and not heads2["param_mismatch"]  # sized as run
    scale = invoke(
        "scale",
        "--mixers",
        "attention[heads=2]",
        "--tokens",
        "16,32",
        "--steps",
        "1",
        "--warmup",
        "1",
        "--out",
        str(tmp_path / "scale"),
    )
    assert scale.returncode == 0, scale.stderr
    measured = json.loads((tmp_path / "scale" / "scaling.json").read_text())["mixers"]
    assert [p["status"] for p in measured["attention[heads=2]"]["points"]] == ["ok", "ok"]
    assert "attention[heads=2]" in scale.stdout


TINY_RUN = """[run]
tracks = ["sequence"]
mixers = ["dense", "attention[heads=2]", "attention[heads={heads}]"]
seeds = 2
executor = "{executor}"
jobs = 1
out = "{out}"
[budget]
steps = 8
dim = 16
[tracks.sequence]
series = 16
length = 48
[tracks.sequence.grid]
lr = [0.01]
"""


@pytest.mark.slow
def test_two_variants_are_two_comparisons_and_changing_one_retrains_only_it(tmp_path):
    out, config = tmp_path / "out", tmp_path / "bench.toml"
    config.write_text(TINY_RUN.format(heads=8, out=out, executor="local"))
    first = api.run(merge(load_config(config)))
    assert (first.trained, first.reused, first.failed) == (6, 0, 0)  # 3 mixers x 2 seeds
    comparisons = first.report.tracks["sequence"].comparisons
    assert set(comparisons) == {"attention[heads=2]", "attention[heads=8]"}
    assert (out / "sequence" / "attention[heads=8].json").is_file()
    config.write_text(TINY_RUN.format(heads=4, out=out, executor="process"))
    again = api.run(merge(load_config(config)))  # a fresh worker process runs the variant
    assert (again.trained, again.reused, again.failed) == (2, 4, 0)  # only attention[heads=4]
    assert set(again.report.tracks["sequence"].comparisons) == {
        "attention[heads=2]",
        "attention[heads=4]",
    }
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        jobs = [json.loads(text)["job"] for (text,) in db.execute("SELECT record FROM results")]
    options = {(job["mixer"], job["mixer_options"].get("heads")) for job in jobs}
    assert options == {
        ("dense", None),
        ("attention[heads=2]", 2),
        ("attention[heads=8]", 8),
        ("attention[heads=4]", 4),
    }

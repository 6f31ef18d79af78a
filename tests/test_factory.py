"""``benchsuite.create_mixer`` and ``benchsuite.list_mixers``: a mixer from Python in one call,
the registered ones listed by wildcard or tag, options checked as a run checks them."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import benchsuite
from benchsuite.errors import UsageError

pytestmark = pytest.mark.usefixtures("one_thread")


def test_list_mixers_by_wildcard_and_by_tag():
    assert benchsuite.list_mixers("*delta*") == ["deltanet", "gated_deltanet"]
    recurrent = benchsuite.list_mixers("tag:recurrent")
    assert {"mamba", "gla", "deltanet"} <= set(recurrent) and "dense" not in recurrent
    everything = benchsuite.list_mixers()
    assert everything == sorted(everything) and {"dense", "attention", "mamba"} <= set(everything)
    assert benchsuite.list_mixers("nothing-like-this*") == []


def test_listing_imports_no_torch():
    code = "import sys, benchsuite; benchsuite.list_mixers(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("name", "options"), [("mamba", {}), ("attention[heads=2]", {}), ("gla", {"conv": 4})]
)
def test_create_mixer_builds_a_module_that_keeps_the_shape(name, options):
    module = benchsuite.create_mixer(name, 64, 32, **options)
    x = torch.randn(2, 64, 32)
    assert isinstance(module, torch.nn.Module) and module(x).shape == x.shape


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("mambo", {}, "did you mean 'mamba'"),
        ("attention", {"hedas": 2}, "unknown option attention.hedas"),
        ("attention", {"heads": 3}, "dim 32 is not divisible by heads=3"),
    ],
)
def test_create_mixer_says_what_is_wrong_in_one_line(name, options, message):
    with pytest.raises(UsageError, match=message) as caught:
        benchsuite.create_mixer(name, 64, 32, **options)
    assert "\n" not in str(caught.value)

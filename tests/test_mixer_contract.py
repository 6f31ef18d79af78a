"""The mixer contract: every mixer the registry holds (the built-ins and any installed plugin's)
passes the contract kit at the sizes it supports, with and without options; registering one imports
no torch and docs/mixers.md describes each built-in; broken mixers (one that mixes across the batch
among them) fail the kit with a clear one-line message."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import built_in, built_in_mixers
from torch import nn

from benchsuite import Mixer, Signature, UsageError
from benchsuite.testing import check_mixer, mixer_contract_tests, run_contract

# also run at the lowest declared dependency versions (make test-min)
pytestmark = [pytest.mark.floors, pytest.mark.usefixtures("one_thread")]

# 40 tokens: off the chunk grid of the chunked recurrent forms (and unsupported by butterfly)
TOKENS = (8, 16, 40)


@pytest.mark.parametrize("name", built_in_mixers())
def test_registered_mixer_passes_the_contract(name, registry):
    mixer = registry.mixers[name]
    tokens = tuple(t for t in TOKENS if mixer.reason_unsupported(t, 16) is None)
    assert len(tokens) >= 2, f"{name} supports fewer than two of {TOKENS} tokens"
    check_mixer(mixer, tokens=tokens, dims=(16, 32))


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("attention", {"heads": 1}),
        ("mlp", {"expansion": 1}),
        ("monarch", {"init_scale": 0.5}),
        ("pooling", {"pool_size": 5}),
        ("longconv", {"filter": "explicit"}),
        ("longconv", {"causal": False}),
        ("ssm", {"state": 4}),
        ("mamba", {"state": 4, "expand": 1, "conv": 2}),
        ("gla", {"heads": 2, "expand_k": 1.0}),
        ("deltanet", {"heads": 1, "conv": 1}),
        ("gated_deltanet", {"heads": 8}),
        ("retnet", {"heads": 2, "expand": 1}),
        ("sliding_window", {"window": 3, "heads": 1}),
        ("based", {"feature_dim": 4, "heads": 4}),
    ],
)
def test_mixer_options_pass_the_contract(name, options):
    check_mixer(built_in(name), tokens=(12, 16), dims=(16,), options=options)


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("attention", {"heads": 3}, "not divisible by heads=3"),
        ("gla", {"heads": 3}, "key width 8 is not divisible by heads=3"),
        ("gla", {"expand_k": 0.3}, "not a whole number"),
        ("retnet", {"heads": 16}, "head width dim/heads = 1 must be even"),
        ("deltanet", {"heads": 5}, "dim 16 is not divisible by heads=5"),
        ("sliding_window", {"window": 0}, "window must be >= 1"),
        ("mamba", {"state": 0}, "state and expand must be >= 1"),
    ],
)
def test_bad_options_are_one_line_errors(name, options, message):
    with pytest.raises(UsageError, match=message):
        built_in(name).builder()(8, 16, **options)


def test_registering_the_built_in_mixers_does_not_import_torch():
    """A fresh interpreter (the subject: what importing and registering loads)."""
    names = built_in_mixers()
    modules = ", ".join(f"benchsuite.mixers.{name}" for name in names)
    hooks = "".join(f"benchsuite.mixers.{n}.benchsuite_register_mixers(print)\n" for n in names)
    code = f"import sys, {modules}\n{hooks}assert 'torch' not in sys.modules, 'torch imported'\n"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_docs_describe_every_built_in_mixer(registry):
    docs = (Path(__file__).parent.parent / "docs" / "mixers.md").read_text()
    names = built_in_mixers()
    assert len(names) >= 18
    assert {"mamba", "gla", "deltanet", "gated_deltanet", "retnet", "sliding_window"} <= set(names)
    for name in names:
        assert registry.mixers[name].module.startswith("benchsuite.")
        assert f"| `{name}` |" in docs, f"docs/mixers.md has no row for {name}"


def test_shapes_a_mixer_cannot_take_are_explained():
    assert "power of two" in built_in("butterfly").reason_unsupported(12, 16)
    assert built_in("butterfly").reason_unsupported(16, 16) is None
    assert "factor" in built_in("monarch").reason_unsupported(13, 16)
    assert built_in("monarch").reason_unsupported(12, 16) is None
    with pytest.raises(AssertionError, match="'butterfly' failed shapes: supports"):
        check_mixer(built_in("butterfly"), tokens=(12,))


# ----------------------------------------------------------------------------- broken mixers


def broken(name: str, forward, *, causal: bool = False, signature=None) -> Mixer:
    """A mixer whose module holds one linear token map and runs ``forward(module, x)``."""

    def build(tokens: int, dim: int) -> nn.Module:
        class Broken(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.weight = nn.Parameter(torch.randn(tokens, tokens) / tokens**0.5)
                self.unused = nn.Parameter(torch.ones(dim)) if name == "dead" else None

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return forward(self, x)

        return Broken()

    return Mixer(name=name, build=build, causal=causal, signature=signature)


def mix(module, x):
    return torch.einsum("st,btd->bsd", module.weight, x)


@pytest.mark.parametrize(
    ("mixer", "message"),
    [
        (broken("short", lambda m, x: mix(m, x)[:, :-1]), "'short' failed shapes: output shape"),
        (broken("double", lambda m, x: mix(m, x).double()), "'double' failed dtype: float32 input"),
        (broken("nan", lambda m, x: mix(m, x) / 0 * 0), "'nan' failed finite: output has NaN"),
        (broken("dead", mix), "'dead' failed gradients: parameter 'unused' gets no gradient"),
        (
            broken("noisy", lambda m, x: mix(m, x) + random.random()),
            "'noisy' failed determinism",
        ),
        (
            broken("batchmean", lambda m, x: mix(m, x - x.mean(dim=0, keepdim=True))),
            "'batchmean' failed batch-independence: output of example 0 changed by [0-9.]+ when "
            "the other examples of the batch changed, in train mode",
        ),
        (
            broken("evalmean", lambda m, x: mix(m, x if m.training else x - x.mean(dim=0))),
            "'evalmean' failed batch-independence: .* in eval mode",
        ),
        (broken("peeks", mix, causal=True), "'peeks' failed causality: output at token 0"),
        (
            broken("boast", mix, signature=Signature("isometric", {"norm_ratio": 1.0})),
            "'boast' failed signature: norm_ratio = ",
        ),
        (broken("crash", lambda m, x: x @ m.weight), "'crash' failed shapes: forward raised"),
    ],
    ids=lambda value: value.name if isinstance(value, Mixer) else "",
)
def test_broken_mixer_fails_with_a_clear_message(mixer, message):
    with pytest.raises(AssertionError, match=message) as caught:
        check_mixer(mixer, tokens=(8,), dims=(12,))
    text = str(caught.value)
    assert "\n" not in text and "(tokens=8, dim=12)" in text


def test_dropout_is_not_mistaken_for_mixing_across_the_batch():
    """Train mode draws dropout masks; the kit seeds torch alike before each forward."""
    dropout = broken("dropout", lambda m, x: nn.functional.dropout(mix(m, x), 0.5, m.training))
    check_mixer(dropout, tokens=(8,), dims=(12,))


def test_run_contract_reports_every_check_and_goes_on_after_a_failure():
    both = broken("both", lambda m, x: mix(m, x - x.mean(dim=0, keepdim=True)).double())
    outcomes = {o.check: o for o in run_contract(both, tokens=(8,), dims=(12,))}
    assert list(outcomes) == CHECKS
    assert [name for name, o in outcomes.items() if not o.passed] == ["dtype", "batch-independence"]
    assert outcomes["dtype"].reason == "float32 input gave torch.float64 (tokens=8, dim=12)"


CHECKS = ["shapes", "dtype", "finite", "gradients", "determinism", "batch-independence"]


def test_contract_tests_are_named_and_include_causality_only_when_declared():
    names = [name for name, _ in mixer_contract_tests(built_in("ssm"))]
    assert names == [*CHECKS, "causality"]
    names = [name for name, _ in mixer_contract_tests(built_in("longconv"), options={"causal": 0})]
    assert "causality" not in names
    assert "signature" in [name for name, _ in mixer_contract_tests(built_in("butterfly"))]


def test_check_mixer_accepts_a_registered_name_and_a_bare_factory():
    state = torch.get_rng_state()
    check_mixer("butterfly", tokens=(8,), dims=(16,))
    assert torch.equal(state, torch.get_rng_state())  # the kit leaves the global RNG alone
    with pytest.raises(AssertionError, match="no mixer named 'nope'"):
        check_mixer("nope")
    check_mixer(lambda tokens, dim: nn.Linear(dim, dim), tokens=(8,), dims=(16,))

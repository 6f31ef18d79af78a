"""A contract test kit for token mixers: run it on your own mixer before you publish it.

``check_mixer(mixer)`` builds the mixer on a few shapes and raises ``AssertionError`` with a
one-line message naming the mixer and the failed check. The checks (in order):

- ``shapes``: (B, T, D) -> (B, T, D) for every token count and dim (shapes the mixer's ``supports``
  rejects, given the options, are skipped; at least one must remain, else ``shapes`` fails with
  ``supports``' reasons and every other check is *not run*: :class:`NotRun`, a skip in pytest);
- ``dtype``: float32 in, float32 out;
- ``finite``: no NaN or infinity on random input;
- ``gradients``: a random loss gives every trainable parameter a non-zero gradient;
- ``determinism``: seeding torch, building and running twice gives the same output;
- ``batch-independence``: the output for example 0 does not change when the other examples of the
  batch do, in train mode and in eval mode (torch is seeded identically before each forward, so
  dropout draws the same mask for the same batch shape);
- ``causality`` (when the mixer, or its ``causal`` option, says so): the output at t does not
  change when the inputs after t do;
- ``signature`` (when the mixer declares one): the predicted probe values hold on the untrained
  module with random input.

In pytest, parametrise over ``mixer_contract_tests``::

    @pytest.mark.parametrize("check", mixer_contract_tests(my_mixer), ids=lambda c: c[0])
    def test_contract(check):
        check[1]()

A mixer is given as a registered name, a :class:`~benchsuite.Mixer`, or a bare build function.
The checks leave torch's global RNG state as they found it. ``run_contract`` runs every check and
returns one :class:`Outcome` per check instead of stopping at the first failure (``benchsuite
test`` prints them).
"""

from __future__ import annotations

import math
import unittest
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn

import torch
from torch import nn

from benchsuite.contract_settings import ContractSettings
from benchsuite.errors import one_line
from benchsuite.specs import Mixer, resolve_options
from benchsuite.train.probes import probes_for

Check = tuple[str, Callable[[], None]]
BATCH = 2
INDEPENDENCE_BATCH = 4  # example 0 and three others that change


class ContractFailure(AssertionError):
    """A failed check: ``str()`` is the whole one-line message; ``check`` names the check and
    ``reason`` is the message without the mixer and check names."""

    def __init__(self, mixer: str, check: str, reason: str) -> None:
        super().__init__(f"mixer {mixer!r} failed {check}: {reason}")
        self.check, self.reason = check, reason


class NotRun(unittest.SkipTest):
    """A check that could not run (no shape left to build it on); pytest reports it skipped."""


@dataclass(frozen=True)
class Outcome:
    """The result of one check of :func:`run_contract`: ``reason`` is empty when it passed;
    ``ran`` is False for a check that could not run (``passed`` is then False too)."""

    check: str
    passed: bool
    reason: str = ""
    ran: bool = True


def collect_mixers(module: ModuleType) -> list[Mixer]:
    """The mixers a plugin module registers through its ``benchsuite_register_mixers`` hook."""
    found: list[Mixer] = []
    module.benchsuite_register_mixers(register=found.append)
    return found


def as_mixer(name_or_factory: str | Mixer | Callable[..., nn.Module]) -> Mixer:
    """A Mixer from a registered name, a Mixer, or a build function ``(tokens, dim) -> module``."""
    if isinstance(name_or_factory, Mixer):
        return name_or_factory
    if callable(name_or_factory):
        return Mixer(name=getattr(name_or_factory, "__name__", "factory"), build=name_or_factory)
    from benchsuite.registry import load_registry

    mixers = load_registry().mixers
    if name_or_factory not in mixers:
        known = ", ".join(sorted(mixers)) or "(none)"
        raise AssertionError(f"no mixer named {name_or_factory!r}; registered: {known}")
    return mixers[name_or_factory]


def _isolated(check: Callable[[], None]) -> Callable[[], None]:
    """``check`` run without touching torch's global RNG state."""

    def run() -> None:
        with torch.random.fork_rng():
            check()

    return run


class _Contract:
    """The checks of one mixer with resolved options on a grid of shapes."""

    def __init__(self, mixer: Mixer, tokens: Sequence[int], dims: Sequence[int], options: dict):
        self.mixer, self.options = mixer, resolve_options(mixer.options, options, mixer.name)
        grid = [(t, d) for t in tokens for d in dims]
        reasons = {shape: mixer.reason_unsupported(*shape, self.options) for shape in grid}
        self.shapes = [shape for shape, reason in reasons.items() if reason is None]
        self.rejected = "; ".join(dict.fromkeys(r for r in reasons.values() if r is not None))
        self.causal = bool(self.options.get("causal", mixer.causal))

    def fail(self, check: str, detail: str, shape: tuple[int, int] | None = None) -> NoReturn:
        where = f" (tokens={shape[0]}, dim={shape[1]})" if shape else ""
        raise ContractFailure(self.mixer.name, check, f"{detail}{where}")

    def build(self, check: str, shape: tuple[int, int], seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)
        try:
            return self.mixer.builder()(*shape, **self.options)
        except Exception as error:
            self.fail(check, f"build raised {one_line(error)}", shape)

    def run(self, check: str, module: nn.Module, x: torch.Tensor) -> torch.Tensor:
        try:
            return module(x)
        except Exception as error:
            self.fail(check, f"forward raised {one_line(error)}", tuple(x.shape[1:]))

    def each(
        self, check: str, batch: int = BATCH
    ) -> list[tuple[tuple[int, int], nn.Module, torch.Tensor]]:
        """(shape, module, random input of ``batch`` examples) for every supported shape;
        :class:`NotRun` when there is none."""
        if not self.shapes:
            raise NotRun(f"supports() rejects every shape tried ({self.rejected})")
        out = []
        for index, shape in enumerate(self.shapes):
            generator = torch.Generator().manual_seed(1000 + index)
            x = torch.randn(batch, *shape, generator=generator)
            out.append((shape, self.build(check, shape), x))
        return out

    def check_shapes(self) -> None:
        if not self.shapes:
            self.fail("shapes", f"supports() rejects every shape tried ({self.rejected})")
        for shape, module, x in self.each("shapes"):
            y = self.run("shapes", module, x)
            if tuple(y.shape) != tuple(x.shape):
                self.fail("shapes", f"output shape {tuple(y.shape)} != {tuple(x.shape)}", shape)

    def check_dtype(self) -> None:
        for shape, module, x in self.each("dtype"):
            if (dtype := self.run("dtype", module, x).dtype) != torch.float32:
                self.fail("dtype", f"float32 input gave {dtype}", shape)

    def check_finite(self) -> None:
        for shape, module, x in self.each("finite"):
            if not torch.isfinite(self.run("finite", module, x)).all():
                self.fail("finite", "output has NaN or infinite values", shape)

    def check_gradients(self) -> None:
        for shape, module, x in self.each("gradients"):
            trainable = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
            y = self.run("gradients", module, x)
            if trainable and y.requires_grad:
                weights = torch.randn(y.shape, generator=torch.Generator().manual_seed(7))
                (y * weights).sum().backward()
            for name, parameter in trainable:
                if parameter.grad is None or not parameter.grad.abs().sum() > 0:
                    self.fail("gradients", f"parameter {name!r} gets no gradient", shape)

    def check_determinism(self) -> None:
        for shape, _, x in self.each("determinism"):
            outputs = []
            for _ in range(2):
                module = self.build("determinism", shape, seed=1)  # seeds torch, then builds
                outputs.append(self.run("determinism", module, x))
            if not torch.equal(*outputs):
                self.fail(
                    "determinism", "seed, build and forward twice gave different outputs", shape
                )

    def first_output(self, check: str, module: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """Example 0's output (NaN and infinities as numbers: ``finite`` reports them), torch
        seeded first so that random draws (dropout) repeat."""
        torch.manual_seed(17)
        return torch.nan_to_num(self.run(check, module, x)[0].detach())

    def check_batch_independence(self) -> None:
        check = "batch-independence"
        generator = torch.Generator().manual_seed(13)
        for shape, module, x in self.each(check, INDEPENDENCE_BATCH):
            others = x.clone()
            others[1:] = 3 * torch.randn(others[1:].shape, generator=generator)
            for mode in ("train", "eval"):
                module.train(mode == "train")
                before, after = (self.first_output(check, module, batch) for batch in (x, others))
                drift = (after - before).abs().max().item()
                if drift > 1e-5 * (1 + before.abs().max().item()):
                    self.fail(
                        check,
                        f"output of example 0 changed by {drift:.2g} when the other examples of "
                        f"the batch changed, in {mode} mode",
                        shape,
                    )

    def check_causality(self) -> None:
        generator = torch.Generator().manual_seed(11)
        for shape, module, x in self.each("causality"):
            y = self.run("causality", module, x).detach()
            for cut in sorted({c for c in (0, shape[0] // 2, shape[0] - 2) if c < shape[0] - 1}):
                changed = x.clone()
                changed[:, cut + 1 :] = 3 * torch.randn(
                    changed[:, cut + 1 :].shape, generator=generator
                )
                drift = self.run("causality", module, changed)[:, : cut + 1] - y[:, : cut + 1]
                if drift.abs().max().item() > 1e-5 * (1 + y.abs().max().item()):
                    self.fail("causality", f"output at token {cut} depends on later tokens", shape)

    def check_signature(self) -> None:
        signature = self.mixer.signature
        assert signature is not None
        probes, _ = probes_for(signature)
        for shape, module, x in self.each("signature"):
            for key, predicted in signature.predicted.items():
                if key not in probes:
                    self.fail("signature", f"no probe named {key!r}", shape)
                observed = float(probes[key](module, x))
                if not math.isfinite(observed) or abs(observed - predicted) > signature.tolerance:
                    expected = f"predicted {predicted:g} ± {signature.tolerance:g}"
                    self.fail("signature", f"{key} = {observed:.6g}, {expected}", shape)

    def checks(self) -> list[Check]:
        names = ["shapes", "dtype", "finite", "gradients", "determinism", "batch-independence"]
        names += ["causality"] * self.causal + ["signature"] * (self.mixer.signature is not None)
        return [(n, _isolated(getattr(self, "check_" + n.replace("-", "_")))) for n in names]


def mixer_contract_tests(
    name_or_factory: str | Mixer | Callable[..., nn.Module],
    *,
    tokens: Sequence[int] = ContractSettings.tokens,
    dims: Sequence[int] = ContractSettings.dims,
    options: Mapping[str, Any] | None = None,
) -> list[Check]:
    """The contract checks as ``(check_name, callable)`` pairs; each callable raises on failure."""
    mixer = as_mixer(name_or_factory)
    return _Contract(mixer, tokens, dims, dict(options or {})).checks()


def check_mixer(
    name_or_factory: str | Mixer | Callable[..., nn.Module],
    *,
    tokens: Sequence[int] = ContractSettings.tokens,
    dims: Sequence[int] = ContractSettings.dims,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Run every contract check; the first failure raises a one-line ``AssertionError``."""
    for _, check in mixer_contract_tests(
        name_or_factory, tokens=tokens, dims=dims, options=options
    ):
        check()


def run_contract(
    mixer: Mixer,
    *,
    tokens: Sequence[int] = ContractSettings.tokens,
    dims: Sequence[int] = ContractSettings.dims,
    options: Mapping[str, Any] | None = None,
) -> list[Outcome]:
    """Every contract check of ``mixer``, each run whatever the others gave: one outcome per check
    (a check that crashes outside the module's build and forward fails with its one-line error;
    one that could not run has ``ran`` False)."""
    outcomes = []
    for name, check in mixer_contract_tests(mixer, tokens=tokens, dims=dims, options=options):
        try:
            check()
        except ContractFailure as failure:
            outcomes.append(Outcome(name, False, failure.reason))
        except NotRun as skipped:
            outcomes.append(Outcome(name, False, str(skipped), ran=False))
        except Exception as error:
            outcomes.append(Outcome(name, False, one_line(error)))
        else:
            outcomes.append(Outcome(name, True))
    return outcomes

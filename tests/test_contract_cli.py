"""``benchsuite test MIXER``: the contract kit from the command line, one line per check, exit 0
when every check passes, 1 when one fails (a plugins-folder mixer that mixes across the batch), 2
for a mixer that is not registered."""

from __future__ import annotations

import re

from helpers import invoke

CHECKS = ["shapes", "dtype", "finite", "gradients", "determinism", "batch-independence"]
SMALL = ["--tokens", "8", "--dims", "16"]

BATCHMEAN = '''
from benchsuite import Mixer, hookimpl


def build(tokens: int, dim: int):
    import torch
    from torch import nn

    class BatchMean(nn.Module):
        """A learned token matrix applied after subtracting the batch mean: it uses the other
        examples of the batch."""

        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(tokens, tokens) / tokens**0.5)

        def forward(self, x):
            centred = x - x.mean(dim=0, keepdim=True)
            return torch.einsum("st,btd->bsd", self.weight, centred)

    return BatchMean()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="batchmean", build=build))
'''


def test_a_built_in_mixer_passes_every_check():
    done = invoke("test", "dense", *SMALL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"dense {check}: passed" for check in CHECKS]


def test_a_mixer_that_mixes_across_the_batch_fails_in_one_line(tmp_path):
    (tmp_path / "batchmean.py").write_text(BATCHMEAN)
    done = invoke("--plugins-dir", str(tmp_path), "test", "batchmean", *SMALL)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:-1] == [f"batchmean {check}: passed" for check in CHECKS[:-1]]
    assert re.fullmatch(
        r"batchmean batch-independence: FAILED: output of example 0 changed by [0-9.]+ when the "
        r"other examples of the batch changed, in train mode \(tokens=8, dim=16\)",
        lines[-1],
    )


def test_an_unknown_mixer_is_one_line_and_nothing_runs():
    done = invoke("test", "dense", "nope", *SMALL)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: unknown mixer 'nope'") and "dense" in line


def test_sizes_must_be_whole_numbers():
    done = invoke("test", "dense", "--tokens", "8,x")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --tokens takes whole numbers > 0, e.g. 8,16; got '8,x'"


HEADS = """
from benchsuite import Mixer, Option, hookimpl


def build(tokens: int, dim: int, heads: int = 4):
    from torch import nn

    return nn.Linear(dim, dim)


def supports(tokens: int, dim: int, heads: int = 4):
    return None if dim % heads == 0 else f"dim {dim} is not a multiple of heads={heads}"


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="heads", build=build, supports=supports,
                   options=(Option("heads", int, 4, "heads"),)))
"""


def test_checks_that_cannot_run_say_so_with_the_reason_supports_gave(tmp_path):
    (tmp_path / "heads.py").write_text(HEADS)
    refused = invoke(
        "--plugins-dir", str(tmp_path), "test", "heads", *SMALL, "--mixer-option", "heads.heads=3"
    )
    assert refused.returncode == 1, refused.stderr
    reason = "supports() rejects every shape tried (dim 16 is not a multiple of heads=3)"
    assert refused.stdout.splitlines() == [f"heads shapes: FAILED: {reason}"] + [
        f"heads {check}: not run: {reason}" for check in CHECKS[1:]
    ]
    fine = invoke(
        "--plugins-dir", str(tmp_path), "test", "heads", *SMALL, "--mixer-option", "heads.heads=2"
    )
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert fine.stdout.splitlines() == [f"heads {check}: passed" for check in CHECKS]


def test_a_mixer_option_must_name_a_tested_mixer_and_a_declared_option():
    other = invoke("test", "dense", *SMALL, "--mixer-option", "attention.heads=2")
    assert (other.returncode, other.stdout) == (2, "")
    assert other.stderr == "error: --mixer-option attention: not among the mixers tested\n"
    unknown = invoke("test", "attention", *SMALL, "--mixer-option", "attention.head=2")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "unknown option attention.head (did you mean 'heads'?)" in unknown.stderr

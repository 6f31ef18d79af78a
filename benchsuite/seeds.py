"""Named seed streams: every random choice of a run comes from one of these.

A stream is derived from ``numpy.random.SeedSequence`` over (suite salt, track, seed, stream name),
so the baseline and a mixer in the same evaluation block share data, minibatch order and the
initial weights of every module both models have, and adding a module or a mixer shifts no other
stream.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

DEFAULT_SALT = "benchsuite-v1"


def _words(text: str) -> list[int]:
    digest = hashlib.sha256(text.encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


@dataclass(frozen=True)
class Streams:
    """The seed streams of one evaluation (or sweep) block: one track, one seed."""

    salt: str
    track: str
    seed: int

    def sequence(self, name: str) -> np.random.SeedSequence:
        """The SeedSequence of stream ``name`` (e.g. ``"data"``, ``"split"``, ``"order"``)."""
        entropy = _words(self.salt) + _words(self.track) + [self.seed] + _words(name)
        return np.random.SeedSequence(entropy)

    def rng(self, name: str) -> np.random.Generator:
        """A numpy Generator for stream ``name``."""
        return np.random.default_rng(self.sequence(name))

    def int_seed(self, name: str) -> int:
        """A 63-bit integer seed for stream ``name`` (for torch.manual_seed)."""
        return int(self.sequence(name).generate_state(2, dtype=np.uint32).view(np.uint64)[0] >> 1)


def evaluation_seeds(n: int) -> list[int]:
    """The evaluation seeds: 0 .. n-1."""
    return list(range(n))


SWEEP_SEED_OFFSET = 1_000_000


def sweep_seeds(n: int) -> list[int]:
    """The sweep seeds, disjoint from every evaluation seed by construction."""
    return [SWEEP_SEED_OFFSET + i for i in range(n)]

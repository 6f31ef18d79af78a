"""Named seed streams: every random choice of a run comes from one of these.

A stream is derived from ``numpy.random.SeedSequence`` over (suite salt, track, seed, stream name),
so the baseline and a mixer in the same evaluation block share data, minibatch order and the
initial weights of every module both models have, and adding a module or a mixer shifts no other
stream. A *shared* stream (suite salt, track, stream name: no seed) is the same for every seed:
it fixes what must not vary with the seed, such as the test partition of a fixed dataset.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads on first use: `benchsuite --help` and `list` never need it
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
        import numpy as np

        entropy = _words(self.salt) + _words(self.track) + [self.seed] + _words(name)
        return np.random.SeedSequence(entropy)

    def rng(self, name: str) -> np.random.Generator:
        """A numpy Generator for stream ``name``."""
        import numpy as np

        return np.random.default_rng(self.sequence(name))

    def int_seed(self, name: str) -> int:
        """A 63-bit integer seed for stream ``name`` (for torch.manual_seed)."""
        import numpy as np

        return int(self.sequence(name).generate_state(2, dtype=np.uint32).view(np.uint64)[0]) >> 1

    def shared_rng(self, name: str) -> np.random.Generator:
        """A Generator for stream ``name`` that is the same for every seed of the track."""
        import numpy as np

        entropy = _words(self.salt) + _words(self.track) + _words(f"shared:{name}")
        return np.random.default_rng(np.random.SeedSequence(entropy))

    def partition(self, n: int, val: float, test: float) -> tuple[np.ndarray, ...]:
        """(train, val, test) row indices of a fixed pool of ``n`` examples, each in random order
        (so that their first rows are a random subset of them).

        The test rows (a ``test`` fraction) are drawn from a shared stream, so they are the same
        for every seed and no seed ever trains or tunes on them; the remaining rows are split into
        validation (a ``val`` fraction of ``n``) and training from the seed's ``"split"`` stream.
        """
        import numpy as np

        n_test, n_val = round(test * n), round(val * n)
        if n_test < 1 or n_val < 1 or n - n_test - n_val < 1:
            raise ValueError(f"cannot split {n} examples into train, {val:g} val, {test:g} test")
        test_rows = self.shared_rng("test").permutation(n)[:n_test]
        rest = np.setdiff1d(np.arange(n), test_rows)
        rest = rest[self.rng("split").permutation(len(rest))]
        return rest[n_val:], rest[:n_val], test_rows


def evaluation_seeds(n: int) -> list[int]:
    """The evaluation seeds: 0 .. n-1."""
    return list(range(n))

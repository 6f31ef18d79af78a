"""Small data files in the published formats, written by the tests: a CSV table and a CIFAR-10
folder (CIFAR-10 itself cannot be downloaded here)."""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import numpy as np

from benchsuite.tracks import cifar

COLOURS = ("red", "green", "blue")
TRAIN_PER_BATCH, TEST_IMAGES = 40, 100


def write_csv(path: Path, rows: int = 300, seed: int = 0, text_target: bool = False) -> Path:
    """Numeric a, b, a categorical colour; price = 2a - b + colour effect + noise (or its sign)."""
    rng = np.random.default_rng(seed)
    effect = {"red": 1.5, "green": 0.0, "blue": -1.5}
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "colour", "b", "price"])
        for _ in range(rows):
            a, b, colour = rng.normal(), rng.normal(), COLOURS[rng.integers(3)]
            price = 2 * a - b + effect[colour] + 0.1 * rng.normal()
            target = ("expensive" if price > 0 else "cheap") if text_target else f"{price:.4f}"
            writer.writerow([f"{a:.4f}", colour, f"{b:.4f}", target])
    return path


def write_cifar(root: Path, seed: int = 0) -> Path:
    """A small CIFAR-10 folder in the published pickle layout; brightness encodes the class."""
    rng = np.random.default_rng(seed)
    folder = root / cifar.FOLDER
    folder.mkdir(parents=True)

    def batch(n: int, label: str) -> dict:
        labels = rng.integers(0, 10, size=n)
        images = rng.integers(0, 60, size=(n, 3072)) + 18 * labels[:, None]
        data = images.astype(np.uint8)
        return {"batch_label": label, "labels": labels.tolist(), "data": data, "filenames": []}

    for name in cifar.TRAIN_FILES:
        (folder / name).write_bytes(pickle.dumps(batch(TRAIN_PER_BATCH, name), protocol=2))
    (folder / "test_batch").write_bytes(pickle.dumps(batch(TEST_IMAGES, "test"), protocol=2))
    names = ["airplane", "automobile", "bird", "cat", "deer"]
    names += ["dog", "frog", "horse", "ship", "truck"]
    meta = {"label_names": names, "num_cases_per_batch": TRAIN_PER_BATCH}
    (folder / cifar.META_FILE).write_bytes(pickle.dumps(meta, protocol=2))
    return folder

"""CIFAR-10 on disk: find the python-format folder, verify it, read it, fetch it.

Verified folders are read through ``torchvision.datasets.CIFAR10`` (which checks the published md5
checksums again). Only with the explicit ``verify=false`` opt-in are files that differ from the
published ones unpickled here, with the same layout. torchvision is imported only in functions
that need it.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchsuite import UsageError
from benchsuite.paths import data_dir

FOLDER = "cifar-10-batches-py"
TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILES = ("test_batch",)
META_FILE = "batches.meta"
FILES = (*TRAIN_FILES, *TEST_FILES, META_FILE)


@dataclass(frozen=True)
class Cifar:
    """CIFAR-10 images (N, 32, 32, 3) uint8 and labels (N,) int64, and how they were checked."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    verified: bool
    identity: str


def cifar_folder(data_dir_option: str | None) -> Path:
    """Where the ``cifar-10-batches-py`` folder is looked for."""
    return data_dir(data_dir_option) / FOLDER


def fingerprint(folder: Path) -> str:
    """Cheap identity of the folder's files (name, size, mtime), or ``"absent"``."""
    if not folder.is_dir():
        return "absent"
    parts = []
    for name in FILES:
        path = folder / name
        stat = path.stat() if path.is_file() else None
        parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}" if stat else f"{name}:missing")
    return ";".join(parts)


def published_md5() -> dict[str, str]:
    """The md5 checksum of every file, as published with ``torchvision.datasets.CIFAR10``."""
    from torchvision.datasets import CIFAR10

    listed = dict(CIFAR10.train_list + CIFAR10.test_list)
    listed[CIFAR10.meta["filename"]] = CIFAR10.meta["md5"]
    return listed


@lru_cache(maxsize=16)
def _md5(path: str, _stat_key: str) -> str:
    from torchvision.datasets.utils import calculate_md5

    return calculate_md5(path)


def checksums(folder: Path) -> dict[str, str]:
    """The md5 of every file of the folder (cached per file size and mtime)."""
    result = {}
    for name in FILES:
        path = folder / name
        if not path.is_file():
            raise UsageError(f"CIFAR-10 folder {folder} is incomplete: {name} is missing")
        stat = path.stat()
        result[name] = _md5(str(path), f"{stat.st_size}:{stat.st_mtime_ns}")
    return result


def check_folder(folder: Path, verify: bool) -> bool:
    """True when every file matches its published md5; raise UsageError naming a bad file.

    A missing file is always an error; a checksum mismatch is one only when ``verify`` is set.
    """
    actual = checksums(folder)
    for name, expected in published_md5().items():
        if actual[name] != expected:
            if verify:
                raise UsageError(
                    f"CIFAR-10 file {folder / name} fails its md5 check (expected {expected}, "
                    f"got {actual[name]}): re-fetch it, or set vision.verify=false to use it "
                    "unverified"
                )
            return False
    return True


def read_cifar10(folder: Path, verify: bool) -> Cifar:
    """Read the folder (checked first; see :func:`check_folder`), cached per file state."""
    return _read(str(folder), verify, fingerprint(folder))


@lru_cache(maxsize=2)
def _read(folder_text: str, verify: bool, _fingerprint: str) -> Cifar:
    folder = Path(folder_text)
    verified = check_folder(folder, verify)
    if verified:
        from torchvision.datasets import CIFAR10

        train, test = (CIFAR10(str(folder.parent), train=t, download=False) for t in (True, False))
        x_train, y_train, x_test, y_test = train.data, train.targets, test.data, test.targets
    else:
        x_train, y_train = _unpickle_batches(folder, TRAIN_FILES)
        x_test, y_test = _unpickle_batches(folder, TEST_FILES)
    listed = ";".join(f"{name}:{md5}" for name, md5 in checksums(folder).items())
    return Cifar(
        np.asarray(x_train, dtype=np.uint8),
        np.asarray(y_train, dtype=np.int64),
        np.asarray(x_test, dtype=np.uint8),
        np.asarray(y_test, dtype=np.int64),
        verified=verified,
        identity=f"cifar-10 md5s sha256:{hashlib.sha256(listed.encode()).hexdigest()[:16]}",
    )


def _unpickle_batches(folder: Path, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Images (N, 32, 32, 3) and labels from CIFAR-format batches (explicit opt-in only)."""
    images, labels = [], []
    for name in names:
        path = folder / name
        try:
            with path.open("rb") as handle:
                entry = pickle.load(handle, encoding="latin1")
            data = np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
            targets = np.asarray(entry["labels"], dtype=np.int64)
        except (OSError, pickle.UnpicklingError, KeyError, ValueError, TypeError, EOFError) as e:
            raise UsageError(f"CIFAR-format file {path} cannot be read: {e}") from None
        if len(targets) != len(data) or targets.min(initial=0) < 0 or targets.max(initial=0) > 9:
            raise UsageError(f"CIFAR-format file {path}: labels do not match its images")
        images.append(data.transpose(0, 2, 3, 1))
        labels.append(targets)
    return np.concatenate(images), np.concatenate(labels)


def fetch_cifar10(root: str | Path | None = None) -> str:
    """Download CIFAR-10 into ``root`` (default: the data folder) with torchvision; its folder path.

    Raises UsageError with one line when the download is impossible (no network, no space).
    """
    from torchvision.datasets import CIFAR10

    base = Path(root) if root is not None else data_dir(None)
    try:
        base.mkdir(parents=True, exist_ok=True)
        CIFAR10(str(base), train=True, download=True)
    except (OSError, RuntimeError) as error:  # URLError is an OSError
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UsageError(
            f"cannot download CIFAR-10 into {base}: {reason}; copy {FOLDER}/ there by hand"
        ) from None
    folder = base / FOLDER
    check_folder(folder, verify=True)
    return str(folder)

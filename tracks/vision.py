"""``vision``: image classification with patch tokens (ViT / MLP-Mixer style).

CIFAR-10 when its python-format folder is in the data folder (see :mod:`benchsuite.tracks.cifar`),
else scikit-learn's bundled 8×8 digits, announced in the data description. Images are normalised
per channel with training-split statistics and cut into non-overlapping patches at load time, so
``x`` is (N, tokens, patch·patch·channels) and the tokenizer is a linear patch embedding.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import version
from typing import TYPE_CHECKING

import numpy as np

from benchsuite import Budget, Metric, Option, Track, TrackData, UsageError, hookimpl, lr_grid
from benchsuite.tracks import cifar

if TYPE_CHECKING:
    from torch import Tensor, nn

    from benchsuite.seeds import Streams

QUICK_GRID = lr_grid(0.00464, 0.01, 0.0215, 0.0464, 0.1)
FULL_GRID = lr_grid(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, weight_decay=0.05)
# CIFAR-10 patch side and split sizes (train, val, test) per preset; digits use all 1797 images.
CIFAR_PATCH = {"quick": 4, "full": 2}  # 64 and 256 tokens
CIFAR_SIZES = {"quick": (2000, 500, 1000), "full": (45000, 5000, 10000)}
# 16 tokens of 2×2 patches (since 2026-12-04; 64 tokens of one pixel and its 3×3 neighbourhood
# before: 2.6x the track's wall time, and the baseline chose the lowest rate of the grid on 4 of 6
# seeds; 4×4 windows at 16 tokens let identity come within 1.4%; docs/tracks.md, vision)
DIGITS_PATCH, DIGITS_HALO = 2, 0
DIGITS_FRACTIONS = (0.6, 0.2)  # train, val; the rest is test
IMAGE_SIDE = {"cifar10": 32, "digits": 8}  # square images, in pixels


@lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)[..., None]  # (N, 8, 8, 1)
    return images, bunch.target.astype(np.int64)


def patchify(images: np.ndarray, patch: int, halo: int = 0) -> np.ndarray:
    """(N, H, W, C) -> (N, (H/patch)·(W/patch), side·side·C) tokens in row-major order, each the
    pixels of its patch and of a ``halo`` of pixels around it (zero beyond the border), so that
    side = patch + 2·halo: with ``halo`` 0 non-overlapping patches, with 1 overlapping windows."""
    n, height, width, _ = images.shape
    if height % patch or width % patch:
        raise UsageError(
            f"option vision.patch: {patch} does not divide the {height}×{width} images"
        )
    padded = np.pad(images, ((0, 0), (halo, halo), (halo, halo), (0, 0)))
    side = patch + 2 * halo
    tokens = [
        padded[:, row : row + side, col : col + side, :].reshape(n, -1)
        for row in range(0, height, patch)
        for col in range(0, width, patch)
    ]
    return np.ascontiguousarray(np.stack(tokens, axis=1))


def _normalise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Scale (N, H, W, C) images per channel with the training split's mean and std."""
    mean = train.mean(axis=(0, 1, 2), dtype=np.float64)
    std = train.std(axis=(0, 1, 2), dtype=np.float64) + 1e-6
    return [((a - mean) / std).astype(np.float32) for a in (train, *others)]


class VisionTrack(Track):
    """Image classification on patch tokens; accuracy (higher is better)."""

    name = "vision"
    description = "image classification on patch tokens: CIFAR-10, or scikit-learn digits offline"
    metric = Metric("accuracy", higher_is_better=True, ideal=1.0)
    # median sd of paired differences / baseline mean on the quick preset, offline digits:
    # 0.0169 over attention, mamba, mlp, longconv against dense, 6 seeds, the preset stopping by
    # the rule with its halvings (2026-12-04; 0.065 at 13 seeds under the old 110-150 steps,
    # when dense reached 0.89 instead of 0.96); CIFAR-10's has not been measured here
    planning_sd = 0.02
    fetchable = ("cifar10",)
    options = (
        Option(
            "dataset",
            str,
            "auto",
            "auto: CIFAR-10 when found in the data folder, else scikit-learn digits 8×8",
            choices=("auto", "cifar10", "digits"),
        ),
        Option(
            "verify",
            bool,
            True,
            "check CIFAR-10 files against the published md5s; false accepts other "
            "CIFAR-format files (results marked unverified)",
        ),
        Option(
            "patch",
            int,
            0,
            "patch side in pixels (0: CIFAR-10 4 in quick, 2 in full; digits 2)",
        ),
        Option(
            "halo",
            int,
            -1,
            "pixels around each patch a token also holds (-1: none, 0, for CIFAR-10 and the "
            "digits alike)",
        ),
    )
    budgets = {
        # stopping by the validation rule (docs/protocol.md, "Training length"): at a fixed 110
        # steps every mixer's loss was still falling, the baseline's too; each seed's grid halved
        # at steps 120 and 240 (docs/protocol.md, "Pruning the grid"); since issue 49 the plateau
        # schedule with 880 steps as a cap (under the cosine over 440, 5 of 17 cells still
        # improved at the end and were flagged undertrained: docs/protocol.md, "The learning-rate
        # schedule")
        "quick": Budget(
            steps=880,
            schedule="plateau",
            batch_size=16,
            dim=32,
            mlp_ratio=5,
            depth=2,
            grid=QUICK_GRID,
            clip=1.0,
            eval_batch_size=32,
            eval_every=20,
            patience=3,
            min_steps=120,
            checkpoint="best",
            halve_at=(120, 240),
        ),
        "full": Budget(
            steps=8000, batch_size=128, dim=192, depth=6, grid=FULL_GRID, mlp_ratio=4, clip=1.0
        ),
    }

    def fetch(self, dataset: str, data_dir: str | None) -> str:
        """Download CIFAR-10 (``benchsuite data fetch cifar10``); returns its folder."""
        if dataset not in self.fetchable:
            return super().fetch(dataset, data_dir)
        return cifar.fetch_cifar10(data_dir)

    def check_options(self, options: dict) -> None:
        """``patch`` and ``halo`` are in range and a patch tiles the images: the chosen dataset's,
        or with ``dataset=auto`` CIFAR-10's (a patch that tiles CIFAR-10 but not the digits is
        reported when ``auto`` falls back to the digits, at load)."""
        patch, halo, dataset = options["patch"], options["halo"], options["dataset"]
        if patch < 0:
            raise UsageError(f"track {self.name}: patch ({patch}) must be ≥ 0 (0: the default)")
        if halo < -1:
            raise UsageError(f"track {self.name}: halo ({halo}) must be ≥ -1 (-1: the default)")
        side = IMAGE_SIDE["digits" if dataset == "digits" else "cifar10"]
        if patch and side % patch:
            tiles = ", ".join(str(p) for p in range(1, side + 1) if side % p == 0)
            images = "digits" if dataset == "digits" else "CIFAR-10"
            raise UsageError(
                f"track {self.name}: patch ({patch}) must divide the {side}×{side} {images} "
                f"images ({tiles}) with dataset={dataset}"
            )

    def _source(self, options: dict, data_dir: str | None) -> str:
        """``"cifar10"`` or ``"digits"``: which data ``load`` will use."""
        folder = cifar.cifar_folder(data_dir)
        if options["dataset"] == "cifar10" and not folder.is_dir():
            raise UsageError(
                f"vision.dataset=cifar10 but CIFAR-10 is not in {folder}; fetch it with "
                "`benchsuite data fetch cifar10` or point --data-dir at its parent"
            )
        if options["dataset"] == "digits" or not folder.is_dir():
            return "digits"
        return "cifar10"

    def data_key(self, options: dict, preset: str, data_dir: str | None) -> str:
        if self._source(options, data_dir) == "digits":
            source = f"digits scikit-learn {version('scikit-learn')}"
        else:
            folder = cifar.cifar_folder(data_dir)
            source = f"cifar10 {folder.resolve()} {cifar.fingerprint(folder)}"
        return f"{super().data_key(options, preset, data_dir)} {source}"

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        self.budget(preset)  # an unknown preset is a usage error
        if self._source(options, data_dir) == "cifar10":
            return self._load_cifar(streams, options, preset, data_dir)
        return self._load_digits(streams, options, data_dir)

    def _load_cifar(
        self, streams: Streams, options: dict, preset: str, data_dir: str | None
    ) -> TrackData:
        folder = cifar.cifar_folder(data_dir)
        data = cifar.read_cifar10(folder, options["verify"])
        n_train, n_val, n_test = CIFAR_SIZES[preset]
        n_val = min(n_val, len(data.x_train) // 10)  # a smaller CIFAR-format folder still splits
        n_train = min(n_train, len(data.x_train) - n_val)
        order = streams.rng("split").permutation(len(data.x_train))
        train, val = order[:n_train], order[n_train : n_train + n_val]
        # the test batch is never trained or tuned on; its subset is the same for every seed
        test = np.sort(streams.shared_rng("test").permutation(len(data.x_test))[:n_test])
        x_train, x_val, x_test = _normalise(
            data.x_train[train] / np.float32(255),
            data.x_train[val] / np.float32(255),
            data.x_test[test] / np.float32(255),
        )
        patch = options["patch"] or CIFAR_PATCH[preset]
        status = "md5 verified" if data.verified else "UNVERIFIED: files differ from the published"
        return self._finish(
            (x_train, x_val, x_test),
            (data.y_train[train], data.y_train[val], data.y_test[test]),
            patch,
            max(options["halo"], 0),
            f"CIFAR-10 ({folder}, {status})",
            identity=data.identity,
            verified=data.verified,
            test_rows=test,
        )

    def _load_digits(self, streams: Streams, options: dict, data_dir: str | None) -> TrackData:
        images, labels = _digits()
        train, val, test = streams.partition(
            len(images), val=DIGITS_FRACTIONS[1], test=1 - sum(DIGITS_FRACTIONS)
        )
        if options["dataset"] == "digits":
            why = "chosen by vision.dataset=digits"
        else:
            why = f"CIFAR-10 not found in {cifar.cifar_folder(data_dir)}"
        return self._finish(
            _normalise(images[train], images[val], images[test]),
            (labels[train], labels[val], labels[test]),
            options["patch"] or DIGITS_PATCH,
            DIGITS_HALO if options["halo"] < 0 else options["halo"],
            f"digits 8×8 (scikit-learn) — {why}",
            identity=f"scikit-learn {version('scikit-learn')} load_digits",
            verified=True,
            test_rows=test,
        )

    def _finish(
        self,
        xs,
        ys,
        patch: int,
        halo: int,
        source: str,
        identity: str,
        verified: bool,
        test_rows: np.ndarray,
    ) -> TrackData:
        x_train, x_val, x_test = (patchify(x, patch, halo) for x in xs)
        y_train, y_val, y_test = ys
        classes = 10
        majority = np.bincount(y_train, minlength=classes).argmax()
        tokens = x_train.shape[1]
        return TrackData(
            x_train,
            y_train,
            x_val,
            y_val,
            x_test,
            y_test,
            tokens=tokens,
            description=(
                f"vision: {source}; {tokens} tokens of {patch}×{patch} patches"
                + (
                    f" with a {halo}-pixel neighbourhood ({patch + 2 * halo}×{patch + 2 * halo} "
                    "windows)"
                    if halo
                    else ""
                )
                + f", {len(y_train)}/{len(y_val)}/{len(y_test)} train/val/test"
            ),
            info={"patch_features": x_train.shape[2], "classes": classes, "patch": patch},
            cap=float(np.mean(y_test == majority)),
            val_cap=float(np.mean(y_val == majority)),
            identity=identity,
            verified=verified,
            test_rows=test_rows,
        )

    def tokenizer(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        from benchsuite import embed_tokens

        return embed_tokens(data.info["patch_features"], data.tokens, dim)

    def head(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        from torch import nn

        from benchsuite import MeanPool

        return nn.Sequential(MeanPool(), nn.Linear(dim, data.info["classes"]))

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        from torch.nn import functional

        return functional.cross_entropy(prediction, target)

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        from torch.nn import functional

        return {
            "accuracy": float((prediction.argmax(dim=1) == target).float().mean()),
            "cross_entropy": float(functional.cross_entropy(prediction.float(), target)),
        }


@hookimpl
def benchsuite_register_tracks(register) -> None:
    register(VisionTrack())

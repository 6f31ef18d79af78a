"""The vision track: the offline digits fallback, CIFAR-format folders written here, and a model."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from data_files import TEST_IMAGES, TRAIN_PER_BATCH, write_cifar
from torch import nn

from benchsuite import UsageError
from benchsuite.seeds import Streams
from benchsuite.specs import resolve_options
from benchsuite.tracks import cifar, vision

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHSUITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCHSUITE_DATA", raising=False)


def load(data_dir: Path | None, preset: str = "quick", seed: int = 0, **given):
    track = vision.VisionTrack()
    options = resolve_options(track.options, given, "vision")
    data_text = str(data_dir) if data_dir else None
    return track, options, track.load(Streams("test", "vision", seed), options, preset, data_text)


def test_offline_fallback_is_announced(tmp_path: Path) -> None:
    track, _, data = load(tmp_path)
    assert "digits 8×8 (scikit-learn)" in data.description
    assert f"CIFAR-10 not found in {tmp_path / cifar.FOLDER}" in data.description
    # 16 tokens: every 2×2 patch, its 4 pixels
    assert data.tokens == 16 and data.x_train.shape[1:] == (16, 4)
    assert "16 tokens of 2×2 patches" in data.description
    assert data.x_train.dtype == np.float32 and data.y_train.dtype == np.int64
    assert len(data.y_train) + len(data.y_val) + len(data.y_test) == 1797
    majority = np.bincount(data.y_train).argmax()
    assert data.cap == pytest.approx(np.mean(data.y_test == majority))
    assert track.metric.name == "accuracy" and track.metric.higher_is_better


def test_digits_test_set_is_fixed_and_the_training_split_depends_on_the_seed(tmp_path):
    _, _, first = load(tmp_path, seed=0)
    _, _, again = load(tmp_path, seed=0)
    _, _, other = load(tmp_path, seed=1)
    np.testing.assert_array_equal(first.x_test, again.x_test)
    np.testing.assert_array_equal(first.y_test, other.y_test)  # the same test images
    assert not np.array_equal(first.y_train, other.y_train)


def test_published_checksums_reject_other_files_naming_the_file(tmp_path: Path) -> None:
    folder = write_cifar(tmp_path)
    actual = hashlib.md5((folder / "data_batch_1").read_bytes()).hexdigest()
    with pytest.raises(UsageError) as error:
        load(tmp_path)
    message = str(error.value)
    assert "\n" not in message
    assert str(folder / "data_batch_1") in message and actual in message
    assert "vision.verify=false" in message


def test_unverified_folder_loads_only_on_opt_in(tmp_path: Path) -> None:
    write_cifar(tmp_path)
    _, _, data = load(tmp_path, verify="false")
    assert not data.verified and "UNVERIFIED" in data.description
    n_train = 5 * TRAIN_PER_BATCH
    assert len(data.y_val) == n_train // 10 and len(data.y_train) == n_train - n_train // 10
    assert len(data.y_test) == TEST_IMAGES
    assert data.tokens == 64 and data.x_train.shape[1:] == (64, 4 * 4 * 3)
    # the class sets the brightness: normalised pixel means must rank the labels
    brightness = data.x_train.mean(axis=(1, 2))
    assert np.corrcoef(brightness, data.y_train)[0, 1] > 0.9
    _, _, full = load(tmp_path, preset="full", verify="false")
    assert full.tokens == 256 and full.x_train.shape[1:] == (256, 2 * 2 * 3)


def test_missing_batch_file_is_named(tmp_path: Path) -> None:
    folder = write_cifar(tmp_path)
    (folder / "data_batch_3").unlink()
    for verify in ("true", "false"):
        with pytest.raises(UsageError, match="data_batch_3 is missing"):
            load(tmp_path, verify=verify)


def test_published_files_are_read_through_torchvision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the published list naming these files' md5s, torchvision reads them as verified."""
    from torchvision.datasets import CIFAR10

    folder = write_cifar(tmp_path)
    md5 = {name: hashlib.md5((folder / name).read_bytes()).hexdigest() for name in cifar.FILES}
    monkeypatch.setattr(CIFAR10, "train_list", [[n, md5[n]] for n in cifar.TRAIN_FILES])
    monkeypatch.setattr(CIFAR10, "test_list", [["test_batch", md5["test_batch"]]])
    monkeypatch.setattr(CIFAR10, "meta", {**CIFAR10.meta, "md5": md5[cifar.META_FILE]})
    _, _, verified = load(tmp_path)
    assert verified.verified and "md5 verified" in verified.description
    _, _, unverified = load(tmp_path, verify="false")  # same files: verified too
    assert unverified.verified
    read = cifar.read_cifar10(folder, verify=True)
    with (folder / "data_batch_2").open("rb") as handle:
        raw = pickle.load(handle, encoding="latin1")
    start = TRAIN_PER_BATCH
    np.testing.assert_array_equal(
        read.x_train[start : 2 * start], raw["data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    )
    np.testing.assert_array_equal(read.y_train[start : 2 * start], raw["labels"])


def test_data_key_follows_the_files(tmp_path: Path) -> None:
    track = vision.VisionTrack()
    options = resolve_options(track.options, {}, "vision")
    absent = track.data_key(options, "quick", str(tmp_path))
    folder = write_cifar(tmp_path)
    present = track.data_key(options, "quick", str(tmp_path))
    (folder / "test_batch").write_bytes(b"changed")
    changed = track.data_key(options, "quick", str(tmp_path))
    assert len({absent, present, changed}) == 3
    assert track.data_key(options, "quick", str(tmp_path)) == changed


def test_explicit_cifar_without_folder_and_bad_patch_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not in"):
        load(tmp_path, dataset="cifar10")
    with pytest.raises(UsageError, match="does not divide"):
        load(tmp_path, patch="3")


@pytest.mark.parametrize("source", ["digits", "cifar"])
def test_tokenizer_head_loss_and_evaluate(tmp_path: Path, source: str) -> None:
    if source == "cifar":
        write_cifar(tmp_path)
    track, options, data = load(tmp_path, verify="false")
    model = nn.Sequential(
        track.tokenizer(data, 8, options), nn.Identity(), track.head(data, 8, options)
    )
    x, y = torch.from_numpy(data.x_train[:16]), torch.from_numpy(data.y_train[:16])
    assert model[0](x).shape == (16, data.tokens, 8)
    loss = track.loss(model(x), y)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    metrics = track.evaluate(model(x).detach(), y, data)
    assert set(metrics) == {"accuracy", "cross_entropy"}
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["cross_entropy"] > 0


def test_patch_tokens_with_a_token_wise_mlp_learn_digits(tmp_path: Path) -> None:
    """Tokenizer -> per-token MLP (an encoder block without mixing) -> head: a real learner."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    track, options, data = load(tmp_path)
    block = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
    model = nn.Sequential(track.tokenizer(data, 32, options), block, track.head(data, 32, options))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    for step in range(150):
        index = torch.arange(step * 64, step * 64 + 64) % len(x)
        optimizer.zero_grad()
        track.loss(model(x[index]), y[index]).backward()
        optimizer.step()
    with torch.no_grad():
        prediction = model(torch.from_numpy(data.x_test))
    accuracy = track.evaluate(prediction, torch.from_numpy(data.y_test), data)["accuracy"]
    assert accuracy > 0.7 > data.cap


def test_fetch_without_a_reachable_server_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchvision.datasets import CIFAR10

    monkeypatch.setattr(CIFAR10, "url", "http://127.0.0.1:9/cifar-10-python.tar.gz")
    with pytest.raises(UsageError) as error:
        cifar.fetch_cifar10(tmp_path)
    assert "\n" not in str(error.value) and str(tmp_path) in str(error.value)


def test_registers_through_the_hook() -> None:
    registered: list = []
    vision.benchsuite_register_tracks(register=registered.append)
    assert [type(t) for t in registered] == [vision.VisionTrack]

"""The tabular track: every bundled table, CSV files written here, and a model."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from data_files import write_csv
from torch import nn

from benchsuite import UsageError
from benchsuite.seeds import Streams
from benchsuite.specs import resolve_options
from benchsuite.tracks import tabular

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHSUITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "scikit_learn_data"))  # no California


def load(seed: int = 0, data_dir: str | None = None, **given):
    track = tabular.TabularTrack()
    options = resolve_options(track.options, given, "tabular")
    return track, options, track.load(Streams("test", "tabular", seed), options, "quick", data_dir)


def test_offline_default_is_fair_scored_by_accuracy() -> None:
    track, _, data = load()
    assert "fair (statsmodels, bundled)" in data.description
    assert "6366 rows, 8 numeric features; classification, 9 tokens" in data.description
    assert data.tokens == 9 and data.x_train.shape[1] == 8
    assert data.x_train.dtype == np.float32 and data.y_train.dtype == np.int64
    # quick keeps at most 2000 / 1000 / 1000 rows; the test rows are one fixed partition
    assert (len(data.y_train), len(data.y_val), len(data.y_test)) == (2000, 1000, 1000)
    # scalers fitted on the training split only
    np.testing.assert_allclose(data.x_train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(data.x_train.std(axis=0), 1.0, atol=1e-4)
    majority = np.bincount(data.y_train).argmax()
    assert data.cap == pytest.approx(np.mean(data.y_test == majority))
    assert 0.6 < data.cap < 0.75  # about a third of the respondents had an affair
    assert track.metric.name == "accuracy" and data.metric.name == "accuracy"


# (dataset, task, rows, features): every table that ships with an installed package
BUNDLED = [
    ("fair", "classification", 6366, 8),
    ("randhie", "regression", 20190, 9),
    ("breast_cancer", "classification", 569, 30),
    ("wine", "classification", 178, 13),
    ("diabetes", "regression", 442, 10),
]


@pytest.mark.parametrize(("dataset", "task", "rows", "features"), BUNDLED)
def test_every_bundled_table_loads_offline(dataset, task, rows, features) -> None:
    _, _, data = load(dataset=dataset)
    assert data.info["task"] == task and data.x_train.shape[1] == features
    assert f"{rows} rows, {features} numeric features; {task}" in data.description
    assert data.tokens == features + 1
    assert all(np.isfinite(x).all() for x in (data.x_train, data.x_val, data.x_test))
    if task == "regression":
        assert data.metric.name == "relative_loss" and data.cap == 1.0
        assert data.y_train.dtype == np.float32 and abs(data.y_train.mean()) < 1e-5
    else:
        assert data.metric.name == "accuracy" and data.y_train.dtype == np.int64
    used = len(data.y_train) + len(data.y_val) + len(data.y_test)
    assert used == min(rows, used)  # every row once at most (quick caps the large tables)


def test_a_task_that_contradicts_the_table_is_a_usage_error() -> None:
    contradiction = r"task \(regression\) contradicts dataset \(fair\), a classification table"
    with pytest.raises(UsageError, match=contradiction):
        load(dataset="fair", task="regression")


def test_explicit_california_when_absent_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cal_housing"):
        load(dataset="california")


def test_csv_regression_with_a_categorical_column(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "houses.csv")
    _, _, data = load(csv=str(path), target="price")
    assert data.info["task"] == "regression" and data.info["numeric"] == 2
    assert data.info["cardinalities"] == [4]  # 3 colours + "unseen"
    assert data.tokens == 4 and f"CSV {path}" in data.description
    assert len(data.y_train) + len(data.y_val) + len(data.y_test) == 300
    codes = np.concatenate([data.x_train[:, 2], data.x_test[:, 2]])
    assert set(np.unique(codes)) <= {1.0, 2.0, 3.0}
    assert data.identity.startswith("csv sha256:")


def test_csv_text_target_is_classification_and_task_can_be_forced(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "labels.csv", text_target=True)
    _, _, data = load(csv=str(path))  # target defaults to the last column
    assert data.info["task"] == "classification" and data.info["classes"] == 2
    assert data.y_train.dtype == np.int64
    assert sum(data.info["prior"]) == pytest.approx(1.0)
    with pytest.raises(UsageError, match="not numeric"):
        load(csv=str(path), task="regression")


def test_csv_relative_to_data_dir_and_errors(tmp_path: Path) -> None:
    write_csv(tmp_path / "houses.csv")
    _, _, data = load(csv="houses.csv", data_dir=str(tmp_path))
    assert data.tokens == 4
    with pytest.raises(UsageError, match="no column 'cost'; columns: a, colour, b, price"):
        load(csv=str(tmp_path / "houses.csv"), target="cost")
    with pytest.raises(UsageError, match="no file"):
        load(csv="absent.csv", data_dir=str(tmp_path))


def test_data_key_follows_the_csv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "houses.csv")
    track = tabular.TabularTrack()
    options = resolve_options(track.options, {"csv": str(path)}, "tabular")
    before = track.data_key(options, "quick", None)
    write_csv(path, seed=1)
    os.utime(path, ns=(1, 1))
    assert track.data_key(options, "quick", None) != before


@pytest.mark.parametrize("text_target", [False, True])
def test_tokenizer_head_loss_and_evaluate(tmp_path: Path, text_target: bool) -> None:
    track, options, data = load(csv=str(write_csv(tmp_path / "t.csv", text_target=text_target)))
    model = nn.Sequential(
        track.tokenizer(data, 8, options), nn.Identity(), track.head(data, 8, options)
    )
    x, y = torch.from_numpy(data.x_train[:16]), torch.from_numpy(data.y_train[:16])
    assert model[0](x).shape == (16, data.tokens, 8)
    track.loss(model(x), y).backward()
    assert all(p.grad is not None for p in model.parameters())
    metrics = track.evaluate(model(x).detach(), y, data)
    expected = (
        {"relative_loss", "cross_entropy", "accuracy"}
        if text_target
        else {"relative_loss", "mse", "rmse", "r2"}
    )
    assert set(metrics) == expected and metrics["relative_loss"] > 0


class AddMean(nn.Module):
    """A minimal token mixer: every token receives the mean of all tokens."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x.mean(dim=1, keepdim=True)


def test_cls_head_learns_through_a_mixer_and_not_without(tmp_path: Path) -> None:
    """The CLS token sees the features only through token mixing."""
    torch.set_num_threads(1)
    track, options, data = load(csv=str(write_csv(tmp_path / "houses.csv")))
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    scores = {}
    for name, mixer in (("identity", nn.Identity()), ("mean", AddMean())):
        torch.manual_seed(0)
        model = nn.Sequential(
            track.tokenizer(data, 16, options), mixer, track.head(data, 16, options)
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        for step in range(150):
            index = torch.arange(step * 32, step * 32 + 32) % len(x)
            optimizer.zero_grad()
            track.loss(model(x[index]), y[index]).backward()
            optimizer.step()
        with torch.no_grad():
            prediction = model(torch.from_numpy(data.x_test))
        scores[name] = track.evaluate(prediction, torch.from_numpy(data.y_test), data)
    assert scores["identity"]["relative_loss"] > 0.9
    assert scores["mean"]["relative_loss"] < 0.2


def test_registers_through_the_hook() -> None:
    registered: list = []
    tabular.benchsuite_register_tracks(register=registered.append)
    assert [type(t) for t in registered] == [tabular.TabularTrack]

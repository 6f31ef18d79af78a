"""``tabular``: FT-Transformer-style learning on tables, one token per feature plus a CLS token.

A numeric feature j becomes the token ``x_j * w_j + b_j``; a categorical feature (a CSV column of
text) an embedding of its value; a learned CLS token is appended last (as in FT-Transformer) and the
head reads it, so every bit of information reaching the prediction passes through the token mixer,
and a causal mixer sees every feature from the CLS position.

Data (option ``dataset``): tables that ship with installed packages — statsmodels' ``fair``
(the default: 6366 survey answers, did the respondent have an affair) and ``randhie`` (20190
rows), scikit-learn's breast cancer, wine and diabetes — California housing once it is in the
scikit-learn data home, or a CSV file (options ``csv``, ``target``, ``task``). One test partition
per table, the same for every seed. A classification table is scored by ``accuracy`` (the trivial
predictor: the training majority class), a regression table by ``relative_loss``, the test MSE
over the trivial predictor's (the training mean's): lower is better, the trivial predictor is 1.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchsuite import Budget, Metric, Option, Track, TrackData, UsageError, hookimpl, lr_grid
from benchsuite.paths import data_dir

if TYPE_CHECKING:
    from torch import Tensor, nn

    from benchsuite.seeds import Streams

QUICK_GRID = lr_grid(0.001, 0.00215, 0.00464, 0.01, 0.0215)
FULL_GRID = lr_grid(3e-5, 1e-4, 3e-4, 1e-3, 3e-3, weight_decay=1e-5)
ACCURACY = Metric("accuracy", higher_is_better=True, ideal=1.0)
RELATIVE_LOSS = Metric("relative_loss", higher_is_better=False, ideal=0.0, positive=True)
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test
MAX_ROWS = {"quick": (2000, 1000, 1000), "full": None}  # per split, after splitting
MISSING = {"", "na", "n/a", "nan", "null", "none", "?"}
MAX_CLASSES_AUTO = 10


@dataclass
class Table:
    """A table before splitting: numeric (N, n) float64 with NaN, categorical (N, k) text."""

    numeric: np.ndarray
    categorical: np.ndarray
    target: np.ndarray  # float64 for regression, int64 class index for classification
    task: str
    classes: int
    source: str
    identity: str


def _parse_numeric(values: list[str]) -> np.ndarray | None:
    """The column as float64 (missing -> NaN), or None when some cell is not a number."""
    try:
        return np.array([np.nan if v.lower() in MISSING else float(v) for v in values])
    except ValueError:
        return None


def _target(values: list[str], task: str, where: str) -> tuple[np.ndarray, str, int]:
    """(y, task, classes): float64 values for regression, class indices for classification.

    ``task="auto"`` picks classification for text or at most 10 distinct integer values.
    """
    numbers = _parse_numeric(values)
    if task == "auto":
        few_integers = numbers is not None and (
            np.all(numbers == np.round(numbers)) and len(np.unique(numbers)) <= MAX_CLASSES_AUTO
        )
        task = "classification" if numbers is None or few_integers else "regression"
    if task == "regression":
        if numbers is None:
            raise UsageError(f"{where} is not numeric: cannot regress it")
        return numbers, task, 0
    labels = sorted(set(values), key=float) if numbers is not None else sorted(set(values))
    index = {label: i for i, label in enumerate(labels)}
    return np.array([index[v] for v in values], dtype=np.int64), task, len(labels)


def read_csv(path: Path, target: str, task: str) -> Table:
    """Read a CSV with a header row: numeric columns, text columns as categories, the target."""
    with path.open(newline="") as handle:
        rows = [[cell.strip() for cell in row] for row in csv.reader(handle) if row]
    if len(rows) < 2:
        raise UsageError(f"CSV file {path} needs a header row and at least one data row")
    header, body = rows[0], rows[1:]
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise UsageError(
                f"CSV file {path} line {line}: {len(row)} cells, header has {len(header)}"
            )
    name = target or header[-1]
    if name not in header:
        raise UsageError(f"CSV file {path} has no column {name!r}; columns: {', '.join(header)}")
    columns = {h: [row[i] for row in body] for i, h in enumerate(header)}
    raw_target = columns.pop(name)
    keep = np.array([v.lower() not in MISSING for v in raw_target])
    raw_target = [v for v, k in zip(raw_target, keep, strict=True) if k]
    y, task, classes = _target(raw_target, task, f"CSV column {name!r} of {path}")
    numeric, categorical = [], []
    for values in columns.values():
        kept = [v for v, k in zip(values, keep, strict=True) if k]
        parsed = _parse_numeric(kept)
        if parsed is None:
            categorical.append(np.array(kept, dtype=object))
        else:
            numeric.append(parsed)
    n = len(y)
    described = (
        f"CSV {path} ({n} rows, {len(numeric)} numeric + {len(categorical)} categorical "
        f"features, target {name!r})"
    )
    return Table(
        np.stack(numeric, axis=1) if numeric else np.zeros((n, 0)),
        np.stack(categorical, axis=1) if categorical else np.zeros((n, 0), dtype=object),
        y,
        task,
        classes,
        described,
        identity=f"csv sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}",
    )


def _california_file() -> Path:
    from sklearn.datasets import get_data_home

    return Path(get_data_home()) / "cal_housing.pkz"


def _statsmodels_frame(name: str) -> Any:
    import importlib

    return importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data


def _table(x: np.ndarray, y: np.ndarray, task: str, label: str, identity: str) -> Table:
    classes = int(y.max()) + 1 if task == "classification" else 0
    return Table(
        x.astype(np.float64),
        np.zeros((len(y), 0), dtype=object),
        y,
        task,
        classes,
        f"{label}, {len(y)} rows, {x.shape[1]} numeric features",
        identity,
    )


def _fair() -> Table:
    frame = _statsmodels_frame("fair")
    y = (frame["affairs"].to_numpy() > 0).astype(np.int64)
    return _table(
        frame.drop(columns=["affairs"]).to_numpy(),
        y,
        "classification",
        "fair (statsmodels, bundled): affairs > 0 from 8 survey answers",
        f"statsmodels {version('statsmodels')} fair",
    )


def _randhie() -> Table:
    frame = _statsmodels_frame("randhie")
    y = np.log1p(frame["mdvis"].to_numpy(np.float64))
    return _table(
        frame.drop(columns=["mdvis"]).to_numpy(),
        y,
        "regression",
        "randhie (statsmodels, bundled): log(1 + outpatient visits)",
        f"statsmodels {version('statsmodels')} randhie",
    )


def _sklearn(loader: str, task: str, label: str) -> Callable[[], Table]:
    def load() -> Table:
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, loader)()
        y = bunch.target.astype(np.int64 if task == "classification" else np.float64)
        return _table(
            bunch.data,
            y,
            task,
            f"{label} (scikit-learn, bundled)",
            f"scikit-learn {version('scikit-learn')} {loader}",
        )

    return load


def _california() -> Table:
    from sklearn.datasets import fetch_california_housing

    cached = _california_file()
    if not cached.is_file():
        raise UsageError(
            f"tabular.dataset=california but {cached} does not exist; run "
            "sklearn.datasets.fetch_california_housing() once where a network exists"
        )
    bunch = fetch_california_housing(download_if_missing=False)
    return _table(
        bunch.data,
        bunch.target.astype(np.float64),
        "regression",
        "California housing (scikit-learn data home)",
        f"scikit-learn {version('scikit-learn')} california",
    )


def _diabetes() -> Table:
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(scaled=False)
    return _table(
        bunch.data,
        bunch.target.astype(np.float64),
        "regression",
        "diabetes (scikit-learn, bundled)",
        f"scikit-learn {version('scikit-learn')} load_diabetes",
    )


DATASETS: dict[str, tuple[str, Callable[[], Table]]] = {
    "fair": ("classification", _fair),
    "randhie": ("regression", _randhie),
    "breast_cancer": (
        "classification",
        _sklearn("load_breast_cancer", "classification", "breast cancer"),
    ),
    "wine": ("classification", _sklearn("load_wine", "classification", "wine")),
    "diabetes": ("regression", _diabetes),
    "california": ("regression", _california),
}
"""Datasets that need no download (California housing: once cached), by name: (task, loader)."""


def _split(n: int, streams: Streams, preset: str) -> list[np.ndarray]:
    """Train, val, test rows: one fixed test partition for every seed, the rest split per seed."""
    parts = list(streams.partition(n, val=FRACTIONS[1], test=1 - sum(FRACTIONS)))
    limits = MAX_ROWS[preset]
    return [p[:limit] for p, limit in zip(parts, limits, strict=True)] if limits else parts


def _encode(table: Table, parts: list[np.ndarray]) -> tuple[list[np.ndarray], list[int]]:
    """x per split: standardised numeric columns (train statistics; missing -> 0), then codes.

    Category codes come from the training split: 0 is "unseen in training", 1.. the values.
    """
    train = table.numeric[parts[0]]
    mean = np.nanmean(train, axis=0) if len(train) else 0.0
    std = np.nanstd(train, axis=0) + 1e-8
    cardinalities = []
    vocabularies = []
    for j in range(table.categorical.shape[1]):
        values = sorted(set(table.categorical[parts[0], j]))
        vocabularies.append({v: i + 1 for i, v in enumerate(values)})
        cardinalities.append(len(values) + 1)
    xs = []
    for part in parts:
        numeric = np.nan_to_num((table.numeric[part] - mean) / std, nan=0.0)
        codes = [
            [vocabulary.get(v, 0) for v in table.categorical[part, j]]
            for j, vocabulary in enumerate(vocabularies)
        ]
        codes_array = np.array(codes, dtype=np.float64).T.reshape(len(part), len(vocabularies))
        xs.append(np.concatenate([numeric, codes_array], axis=1).astype(np.float32))
    return xs, cardinalities


class TabularTrack(Track):
    """FT-Transformer-style tabular learning: accuracy for classification tables, relative loss
    (lower is better, trivial = 1) for regression ones."""

    name = "tabular"
    description = (
        "tables as feature tokens + CLS (FT-Transformer style): bundled tables, California, CSV"
    )
    metric = ACCURACY  # of the default table; a regression table is scored by RELATIVE_LOSS
    planning_sd = 0.01  # median sd of paired differences / baseline mean (quick, 13 seeds)
    options = (
        Option(
            "dataset",
            str,
            "fair",
            "a table that needs no download (ignored when csv is set): "
            + ", ".join(f"{n} ({task})" for n, (task, _) in DATASETS.items()),
            choices=tuple(DATASETS),
        ),
        Option("csv", str, "", "CSV file with a header row (relative: cwd, then --data-dir)"),
        Option("target", str, "", "target column of the CSV (default: its last column)"),
        Option(
            "task",
            str,
            "auto",
            "auto: classification for a text target or at most 10 distinct integers",
            choices=("auto", "regression", "classification"),
        ),
    )
    budgets = {
        "quick": Budget(
            steps=400,
            batch_size=16,
            dim=32,
            mlp_ratio=5,
            depth=2,
            grid=QUICK_GRID,
            clip=1.0,
            eval_every=25,
            patience=4,
            min_steps=100,
            checkpoint="best",
            # each seed's grid halved (docs/protocol.md, "Pruning the grid"): 0.822x the track's
            # job-seconds, regret median 0.00%, worst +2.4% (python benchmarks/halving.py)
            halve_at=(100, 200),
        ),
        "full": Budget(steps=4000, batch_size=256, dim=192, depth=3, grid=FULL_GRID, clip=1.0),
    }

    def check_options(self, options: dict) -> None:
        """Without ``csv``, a bundled table's task is fixed and so is its target column."""
        if options["csv"]:
            return
        dataset, task = options["dataset"], options["task"]
        kind = DATASETS[dataset][0]
        if task not in ("auto", kind):
            raise UsageError(
                f"track {self.name}: task ({task}) contradicts dataset ({dataset}), a {kind} table"
            )
        if options["target"]:
            raise UsageError(
                f"track {self.name}: target ({options['target']}) names a CSV column, but csv "
                f"is not set (dataset {dataset} has its own target)"
            )

    def _csv_path(self, options: dict, data_dir_option: str | None) -> Path:
        path = Path(options["csv"]).expanduser()
        found = path if path.is_file() or path.is_absolute() else data_dir(data_dir_option) / path
        if not found.is_file():
            raise UsageError(f"option tabular.csv: no file {options['csv']!r} (looked at {found})")
        return found

    def data_key(self, options: dict, preset: str, data_dir: str | None) -> str:
        if options["csv"]:
            path = self._csv_path(options, data_dir).resolve()
            stat = path.stat()
            source = f"csv {path} {stat.st_size} {stat.st_mtime_ns}"
        else:
            source = f"{options['dataset']} scikit-learn {version('scikit-learn')} statsmodels "
            source += version("statsmodels")
        return f"{super().data_key(options, preset, data_dir)} {source}"

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        self.budget(preset)  # an unknown preset is a usage error
        self.check_options(options)
        if options["csv"]:
            table = read_csv(self._csv_path(options, data_dir), options["target"], options["task"])
        else:
            table = DATASETS[options["dataset"]][1]()
        try:
            parts = _split(len(table.target), streams, preset)
        except ValueError:
            raise UsageError(f"{table.source}: too few rows for a train/val/test split") from None
        (x_train, x_val, x_test), cardinalities = _encode(table, parts)
        y_train, y_val, y_test = (table.target[p] for p in parts)
        info = {
            "task": table.task,
            "numeric": table.numeric.shape[1],
            "cardinalities": cardinalities,
            "classes": table.classes,
        }
        if table.task == "regression":
            mean, std = y_train.mean(), y_train.std() + 1e-8
            y_train, y_val, y_test = ((y - mean) / std for y in (y_train, y_val, y_test))
            y_train, y_val, y_test = (y.astype(np.float32) for y in (y_train, y_val, y_test))
            info["target_std"] = float(std)
            cap = val_cap = 1.0  # the trivial predictor's relative loss
            metric = RELATIVE_LOSS
        else:
            counts = np.bincount(y_train, minlength=table.classes) + 1.0  # Laplace smoothing
            info["prior"] = (counts / counts.sum()).tolist()
            cap, metric = float(np.mean(y_test == np.argmax(counts))), ACCURACY
            val_cap = float(np.mean(y_val == np.argmax(counts)))
        tokens = 1 + x_train.shape[1]
        return TrackData(
            x_train,
            y_train,
            x_val,
            y_val,
            x_test,
            y_test,
            tokens=tokens,
            description=(
                f"tabular: {table.source}; {table.task}, {tokens} tokens (features + CLS), "
                f"{len(y_train)}/{len(y_val)}/{len(y_test)} train/val/test"
            ),
            info=info,
            cap=cap,
            identity=table.identity,
            val_cap=val_cap,
            metric=metric,
            test_rows=parts[2],
        )

    def tokenizer(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        import torch
        from torch import nn

        numeric, cardinalities = data.info["numeric"], data.info["cardinalities"]
        bound = dim**-0.5

        class FeatureTokens(nn.Module):
            """(B, features) -> (B, features + 1, dim): numeric tokens, category tokens, CLS."""

            def __init__(self) -> None:
                super().__init__()
                self.cls = nn.Parameter(torch.empty(1, 1, dim).uniform_(-bound, bound))
                self.weight = nn.Parameter(torch.empty(numeric, dim).uniform_(-bound, bound))
                self.bias = nn.Parameter(torch.empty(numeric, dim).uniform_(-bound, bound))
                self.embedding = nn.Embedding(max(sum(cardinalities), 1), dim)
                nn.init.uniform_(self.embedding.weight, -bound, bound)
                offsets = np.concatenate([[0], np.cumsum(cardinalities)[:-1]]).astype(np.int64)
                self.register_buffer("offsets", torch.from_numpy(offsets))
                self.cat_bias = nn.Parameter(
                    torch.empty(len(cardinalities), dim).uniform_(-bound, bound)
                )

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                numbers = x[:, :numeric, None] * self.weight + self.bias
                codes = x[:, numeric:].long() + self.offsets
                categories = self.embedding(codes) + self.cat_bias
                cls = self.cls.expand(len(x), -1, -1)
                return torch.cat([numbers, categories, cls], dim=1)

        return FeatureTokens()

    def head(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        from torch import nn

        from benchsuite import LastToken

        if data.info["task"] == "regression":
            return nn.Sequential(LastToken(), nn.Linear(dim, 1), nn.Flatten(0))
        return nn.Sequential(LastToken(), nn.Linear(dim, data.info["classes"]))

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        from torch.nn import functional

        if target.is_floating_point():
            return functional.mse_loss(prediction, target)
        return functional.cross_entropy(prediction, target)

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        import torch
        from torch.nn import functional

        prediction = prediction.float()
        if data.info["task"] == "regression":
            mse = float(functional.mse_loss(prediction, target))
            trivial = float(target.pow(2).mean())  # the training mean is 0 after scaling
            return {
                "relative_loss": mse / trivial,
                "mse": mse,
                "rmse": mse**0.5 * data.info["target_std"],
                "r2": 1.0 - mse / float(target.var(correction=0)),
            }
        prior = torch.tensor(data.info["prior"], device=target.device)
        cross_entropy = float(functional.cross_entropy(prediction, target))
        trivial = float(-prior.log()[target].mean())
        return {
            "relative_loss": cross_entropy / trivial,
            "cross_entropy": cross_entropy,
            "accuracy": float((prediction.argmax(dim=1) == target).float().mean()),
        }


@hookimpl
def benchsuite_register_tracks(register) -> None:
    register(TabularTrack())

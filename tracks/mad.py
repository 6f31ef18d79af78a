"""The MAD tracks: six synthetic token-manipulation tasks that isolate what a token mixer can do
(Poli et al. 2024, "Mechanistic Architecture Design"; recall as in Zoology, Arora et al. 2023):
``recall`` (multi-query associative recall), ``fuzzy_recall``, ``noisy_recall``,
``selective_copying``, ``compression`` and ``memorization``. Generators: :mod:`mad_tasks`.

Every seed generates its own training, validation and test examples (disjoint draws). The
tokenizer embeds each token plus the token before it (a fixed one-token shift, the short
convolution of H3, Hyena and Based, the same for every mixer), so recall is one content lookup;
the head classifies every position and only the read-out positions are scored: accuracy, or
for ``selective_copying`` the cross-entropy of the same predictions (see ``SCORED_BY``); the
trivial predictor predicts the training targets' frequencies. The quick preset runs ``recall``
and ``selective_copying`` at 128 tokens; ``--preset full`` runs all six over MAD-Lab's settings
(``MAD_LAB``, translated by :func:`rung`; docs/tracks.md lists the differences) and scores each
task by its metric averaged over the ladder, as MAD does.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from benchsuite import Budget, Metric, Option, Track, TrackData, UsageError, hookimpl, lr_grid
from benchsuite.tracks import mad_tasks
from benchsuite.tracks.mad_tasks import IGNORE

if TYPE_CHECKING:
    from torch import Tensor, nn

    from benchsuite.seeds import Streams

# 0.128 since 2026-12-04: the baseline dense chose 0.064, the top of the grid, on 2 of 3 seeds of
# both quick tasks (every comparison flagged baseline_edge_of_grid); with it dense chooses 0.064
# inside the grid, with the same results (docs/tracks.md, "Presets of the built-in tracks")
QUICK_GRID = lr_grid(4e-3, 8e-3, 1.6e-2, 3.2e-2, 6.4e-2, 1.28e-1)
# MAD-Lab's sweep (mad/configs.py, make_benchmark_mad_configs): lr x weight decay
FULL_GRID = tuple(
    point for wd in (0.0, 0.1) for point in lr_grid(1e-4, 5e-4, 1e-3, weight_decay=wd)
)
# at most 400 steps, each config stopping once its validation accuracy has not improved for 3
# checks of 25 steps, its best check scored: at a fixed 200 steps attention solved recall on some
# seeds only (0.87 ± 0.22); with the rule 1.000 ± 0.000 (docs/protocol.md, "Training length");
# each seed's grid halved at steps 100, 200 and 300 (docs/protocol.md, "Pruning the grid")
QUICK_BUDGET = Budget(
    steps=400,
    batch_size=6,
    dim=32,
    depth=1,
    mlp_ratio=4,
    eval_batch_size=64,
    grid=QUICK_GRID,
    eval_every=25,
    patience=3,
    min_steps=100,
    checkpoint="best",
    halve_at=(100, 200, 300),
)
ACCURACY = Metric("accuracy", higher_is_better=True, ideal=1.0)
CROSS_ENTROPY = Metric("cross_entropy", higher_is_better=False, ideal=0.0, positive=True)
# MAD-Lab: width 128, 4 layers (mixer, SwiGLU, mixer, SwiGLU: our 2 blocks), batch 128; it trains
# 200 epochs (20,000 steps at 12,800 examples), we a fixed 4000 steps per rung (docs/tracks.md)
FULL_BUDGET = Budget(steps=4000, batch_size=128, dim=128, depth=2, grid=FULL_GRID)
SPLITS = ("val", "test")


class MadTrack(Track):
    """One MAD task; its declared options are the generator's difficulty settings."""

    def __init__(
        self,
        name: str,
        task: str,
        description: str,
        quick: dict[str, Any] | None,
        ladder: list[dict[str, Any]],
        metric: Metric = ACCURACY,
        quick_budget: Budget = QUICK_BUDGET,
        planning_sd: float = 0.05,
    ) -> None:
        self.name, self.task, self.description = name, task, description
        self.metric, self.planning_sd = metric, planning_sd
        defaults = {**mad_tasks.DEFAULTS[task], **(quick or {})}
        self.options = (
            *(
                Option(key, type(value), value, f"generator setting ({task})")
                for key, value in defaults.items()
            ),
            Option("train", int, 0, "training examples per seed (0: steps x batch, seen once)"),
            Option("val", int, 128, "validation examples per seed"),
            Option("test", int, 256, "test examples per seed"),
        )
        self.budgets = {"full": FULL_BUDGET} | ({"quick": quick_budget} if quick else {})
        self.rungs = ladder

    def ladder(self, options: dict, preset: str) -> list[dict]:
        """The quick preset runs the options as given; ``full`` runs the task's ladder."""
        if preset == "full":
            return [{**options, **rung} for rung in self.rungs]
        return [options]

    def _difficulty(self, options: dict) -> dict:
        """The generator's keywords among the options."""
        return {k: options[k] for k in mad_tasks.DEFAULTS[self.task]}

    def check_options(self, options: dict) -> None:
        """The generator's limits (:func:`mad_tasks.difficulty_problem`), and example counts."""
        self.check_at_least(options, {"train": 0, "val": 1, "test": 1})
        if problem := mad_tasks.difficulty_problem(self.task, self._difficulty(options)):
            raise UsageError(f"track {self.name}: {problem}")

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        budget = self.budget(preset)
        difficulty = self._difficulty(options)
        sizes = [
            options["train"] or budget.steps * budget.batch_size,
            options["val"],
            options["test"],
        ]
        try:
            x, y = mad_tasks.MAKERS[self.task](streams.rng("data"), sum(sizes), **difficulty)
        except ValueError as error:
            raise UsageError(f"track {self.name}: {error}") from None
        edges = np.cumsum([0, *sizes])
        (x_train, x_val, x_test), (y_train, y_val, y_test) = (
            [a[lo:hi] for lo, hi in itertools.pairwise(edges)] for a in (x, y)
        )
        vocab, classes = mad_tasks.vocabulary(self.task, difficulty)
        frequency = np.bincount(y_train[y_train != IGNORE], minlength=classes) / np.sum(
            y_train != IGNORE
        )
        targets = y_test[y_test != IGNORE]
        return TrackData(
            x_train,
            y_train,
            x_val,
            y_val,
            x_test,
            y_test,
            tokens=x.shape[1],
            description=(
                f"{self.name}: {self.description}; "
                + ", ".join(f"{k} {v}" for k, v in difficulty.items())
                + f"; {sizes[0]}/{sizes[1]}/{sizes[2]} train/val/test examples, generated per seed"
            ),
            info={"vocab": vocab, "classes": classes, "targets": y.shape[1]},
            cap=self._trivial(frequency, targets),
            identity="generated",
            val_cap=self._trivial(frequency, y_val[y_val != IGNORE]),
        )

    def _trivial(self, frequency: np.ndarray, targets: np.ndarray) -> float:
        """The score on ``targets`` of predicting the training targets' frequencies at every
        position: the majority class's accuracy, or the cross-entropy of the frequencies."""
        if self.metric.name == "accuracy":
            return float(np.mean(targets == frequency.argmax()))
        return float(-np.mean(np.log(np.maximum(frequency[targets], 1e-12))))

    def tokenizer(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        import torch
        from torch import nn
        from torch.nn import functional

        from benchsuite import PositionalTokens

        vocab, tokens = data.info["vocab"], data.tokens

        class ShiftedTokens(nn.Module):
            """embed(x_t) + embed_previous(x_{t-1}) + position; the first token's previous is a
            start id of its own."""

            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(vocab + 1, dim)
                self.previous = nn.Embedding(vocab + 1, dim)
                self.position = PositionalTokens(tokens, dim)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                shifted = functional.pad(x[:, :-1], (1, 0), value=vocab)
                return self.position(self.embed(x) + self.previous(shifted))

        return ShiftedTokens()

    def head(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        import torch
        from torch import nn

        classes, targets = data.info["classes"], data.info["targets"]
        if targets == data.tokens:
            return nn.Linear(dim, classes)

        class Decoder(nn.Module):
            """MAD's compression decoder: target i = MLP(last token + position i)."""

            def __init__(self) -> None:
                super().__init__()
                self.position = nn.Parameter(torch.randn(targets, dim) * 0.02)
                self.mlp = nn.Sequential(
                    nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, classes)
                )

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.mlp(x[:, -1:, :] + self.position)

        return Decoder()

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        """Cross-entropy over the scored positions (written out, so that vmap can batch it)."""
        scored = target != IGNORE
        log_p = prediction.log_softmax(dim=-1)
        picked = log_p.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return -(picked * scored).sum() / scored.sum().clamp(min=1)

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        scored = target != IGNORE
        correct = (prediction.argmax(dim=-1) == target) & scored
        return {
            "accuracy": float(correct.sum() / scored.sum()),
            "cross_entropy": float(self.loss(prediction.float(), target)),
        }


QUICK = {
    "recall": dict(seq_len=128, num_pairs=4, num_keys=8, num_values=8, num_queries=64),
    # 40 data tokens of 4 among 48 fillers: at this budget mixers learn a position prior (first
    # and last markers ~0.9, the middle ~0.4) rather than to rank and copy; the full ladder
    # (MAD-Lab's: 14 to 126 symbols, 256 to 1024 tokens, 20x the steps) asks for real copying
    "selective_copying": dict(seq_len=128, num_data=40, vocab=4),
}
# MAD-Lab's benchmark (github.com/athms/mad-lab, configs/tasks/*.yml): per task a baseline and,
# one at a time, changes of it; a setting is (vocab_size, seq_len, num_train_examples, extras).
MAD_LAB = {
    "recall": (
        dict(vocab_size=16, seq_len=128, num_train_examples=12800),
        dict(
            vocab_size=[32, 64, 128],
            seq_len=[256, 512, 1024],
            num_train_examples=[6400, 3200, 1600, 800],
        ),
    ),
    "fuzzy_recall": (
        dict(vocab_size=16, seq_len=128, num_train_examples=12800),
        dict(
            vocab_size=[32, 64, 128],
            seq_len=[256, 512, 1024],
            num_train_examples=[6400, 3200, 1600, 800],
        ),
    ),
    "noisy_recall": (
        dict(vocab_size=32, seq_len=128, num_train_examples=12800, frac_noise=0.2),
        dict(
            vocab_size=[48, 80, 144],
            seq_len=[256, 512, 1024],
            num_train_examples=[6400, 3200, 1600, 800],
            frac_noise=[0.4, 0.6, 0.8],
        ),
    ),
    "selective_copying": (
        dict(vocab_size=16, seq_len=256, num_train_examples=12800, num_tokens_to_copy=16),
        dict(
            vocab_size=[32, 64, 128],
            seq_len=[512, 1024],
            num_train_examples=[6400, 3200, 1600, 800],
            num_tokens_to_copy=[32, 64, 96],
        ),
    ),
    "compression": (
        dict(vocab_size=16, seq_len=32, num_train_examples=12800),
        dict(
            vocab_size=[32, 64, 128],
            seq_len=[64, 128, 256],
            num_train_examples=[6400, 3200, 1600, 800],
        ),
    ),
    "memorization": (
        dict(vocab_size=256, seq_len=32, num_train_examples=256),
        dict(vocab_size=[512, 1024, 2048, 4096, 8192]),
    ),
}
NOISE_VOCAB = 16  # MAD-Lab's noise_vocab_size for noisy recall, part of its vocab_size


def mad_lab_settings(name: str) -> list[dict[str, Any]]:
    """MAD-Lab's settings of a task: its baseline, then each change of one key, in its order."""
    baseline, changes = MAD_LAB[name]
    return [baseline] + [
        {**baseline, key: value} for key, values in changes.items() for value in values
    ]


def rung(
    name: str,
    vocab_size: int,
    seq_len: int,
    num_train_examples: int,
    frac_noise: float = 0.0,
    num_tokens_to_copy: int = 0,
) -> dict[str, Any]:
    """Our generator's options for one MAD-Lab setting. MAD-Lab's ``vocab_size`` counts its
    special tokens; ours are ids of their own, so keys and values get what MAD-Lab gives them:
    half each of the non-special ids. Recall binds every key it can (MAD-Lab's sequences are all
    key-value pairs, so every key of the vocabulary recurs) within the first half of the sequence,
    the second half being queries. Only what differs from the generator's defaults is set, so a
    ``--track-option`` of an unset one still applies."""
    if name in ("recall", "noisy_recall"):
        keys = (vocab_size - (NOISE_VOCAB if name == "noisy_recall" else 0)) // 2
        options = dict(
            seq_len=seq_len,
            num_keys=keys,
            num_values=keys,
            num_pairs=min(keys, seq_len // 4),
            num_queries=seq_len // 2,
        )
        if name == "noisy_recall":
            options |= dict(noise_vocab=NOISE_VOCAB, noise_ratio=frac_noise)
    elif name == "fuzzy_recall":  # one id is MAD-Lab's pad token; motifs of up to 3 tokens
        keys, context = (vocab_size - 1) // 2, seq_len - seq_len // 2
        options = dict(
            seq_len=seq_len,
            num_keys=keys,
            num_values=vocab_size - 1 - keys,
            key_len=3,
            value_len=3,
            num_pairs=min(keys, context // 6),
        )
    elif name == "selective_copying":  # two ids are MAD-Lab's blank and copy tokens
        options = dict(seq_len=seq_len, vocab=vocab_size - 2, num_data=num_tokens_to_copy)
    elif name == "compression":  # MAD-Lab: seq_len - 1 data tokens, then the compression token
        options = dict(seq_len=seq_len + 1, vocab=vocab_size - 1)
    else:  # memorization: one id is the insert token; MAD-Lab's key-value map halves the rest
        keys = (vocab_size - 1) // 2
        options = dict(seq_len=seq_len, num_keys=keys, num_values=vocab_size - 1 - keys)
    defaults = mad_tasks.DEFAULTS[TRACKS[name][0]]
    return {k: v for k, v in options.items() if defaults[k] != v} | dict(train=num_train_examples)


TRACKS = {
    "recall": ("in_context_recall", "multi-query associative recall of keys bound in context"),
    "fuzzy_recall": ("fuzzy_in_context_recall", "associative recall of multi-token keys, values"),
    "noisy_recall": ("noisy_in_context_recall", "associative recall among distractor tokens"),
    "selective_copying": ("selective_copying", "copy the data tokens in order, ignoring fillers"),
    "compression": ("compression", "decode a whole sequence from its last token"),
    "memorization": ("memorization", "a fixed key-value table learnt in the weights (no mixing)"),
}
LADDERS = {name: [rung(name, **setting) for setting in mad_lab_settings(name)] for name in MAD_LAB}


# Selective copying is scored by cross-entropy: its accuracy jumps between seeds (a model stalls
# near chance or escapes), so its seed spread hides differences the cross-entropy of the same
# predictions shows (median MDE 20% on accuracy, 9% on cross-entropy, docs/tracks.md).
SCORED_BY = {"selective_copying": CROSS_ENTROPY}
# median sd of the paired differences (recall, relative to the baseline) or log-ratios (copying),
# measured at the quick budget with 13 seeds: 0.024 and 0.049
PLANNING_SD = {"recall": 0.025, "selective_copying": 0.05}


@hookimpl
def benchsuite_register_tracks(register) -> None:
    for name, (task, description) in TRACKS.items():
        register(
            MadTrack(
                name,
                task,
                description,
                QUICK.get(name),
                LADDERS[name],
                metric=SCORED_BY.get(name, ACCURACY),
                planning_sd=PLANNING_SD.get(name, 0.05),
            )
        )

"""The MAD full preset, pinned to the values checked against MAD-Lab (docs/tracks.md): a silent
change of a setting fails here, and one generated batch of each task's baseline rung has the
documented vocabulary, length and number of pairs."""

import numpy as np
import pytest

from benchsuite.tracks import mad, mad_tasks
from benchsuite.tracks.mad_tasks import IGNORE

# (vocab_size, seq_len, num_train_examples) of every MAD-Lab setting, in its order, and the extra
# key of the tasks that sweep one more (configs/tasks/*.yml)
SWEEPS = {
    "recall": [
        (16, 128, 12800),
        (32, 128, 12800),
        (64, 128, 12800),
        (128, 128, 12800),
        (16, 256, 12800),
        (16, 512, 12800),
        (16, 1024, 12800),
        (16, 128, 6400),
        (16, 128, 3200),
        (16, 128, 1600),
        (16, 128, 800),
    ],
    "noisy_recall": [
        (32, 128, 12800),
        (48, 128, 12800),
        (80, 128, 12800),
        (144, 128, 12800),
        (32, 256, 12800),
        (32, 512, 12800),
        (32, 1024, 12800),
        (32, 128, 6400),
        (32, 128, 3200),
        (32, 128, 1600),
        (32, 128, 800),
        (32, 128, 12800),
        (32, 128, 12800),
        (32, 128, 12800),
    ],
    "selective_copying": [
        (16, 256, 12800),
        (32, 256, 12800),
        (64, 256, 12800),
        (128, 256, 12800),
        (16, 512, 12800),
        (16, 1024, 12800),
        (16, 256, 6400),
        (16, 256, 3200),
        (16, 256, 1600),
        (16, 256, 800),
        (16, 256, 12800),
        (16, 256, 12800),
        (16, 256, 12800),
    ],
    "compression": [
        (16, 32, 12800),
        (32, 32, 12800),
        (64, 32, 12800),
        (128, 32, 12800),
        (16, 64, 12800),
        (16, 128, 12800),
        (16, 256, 12800),
        (16, 32, 6400),
        (16, 32, 3200),
        (16, 32, 1600),
        (16, 32, 800),
    ],
    "memorization": [
        (256, 32, 256),
        (512, 32, 256),
        (1024, 32, 256),
        (2048, 32, 256),
        (4096, 32, 256),
        (8192, 32, 256),
    ],
}
SWEEPS["fuzzy_recall"] = SWEEPS["recall"]
EXTRA = {
    "noisy_recall": ("frac_noise", [0.2] * 11 + [0.4, 0.6, 0.8]),
    "selective_copying": ("num_tokens_to_copy", [16] * 10 + [32, 64, 96]),
}

# each task's baseline rung as our generator runs it: every option (defaults included)
BASELINE = {
    "recall": dict(
        seq_len=128,
        num_pairs=8,
        num_keys=8,
        num_values=8,
        num_queries=64,
        noise_vocab=0,
        noise_ratio=0.0,
        packed=1,
    ),
    "fuzzy_recall": dict(
        seq_len=128,
        num_pairs=7,
        num_keys=7,
        num_values=8,
        key_len=3,
        value_len=3,
        query_fraction=0.5,
    ),
    "noisy_recall": dict(
        seq_len=128,
        num_pairs=8,
        num_keys=8,
        num_values=8,
        num_queries=64,
        noise_vocab=16,
        noise_ratio=0.2,
    ),
    "selective_copying": dict(seq_len=256, num_data=16, vocab=14, noise_vocab=0),
    "compression": dict(seq_len=33, vocab=15),
    "memorization": dict(seq_len=32, num_keys=127, num_values=128),
}
# (input ids, classes) of the baseline rungs, as docs/tracks.md lists them
VOCABULARY = {
    "recall": (25, 8),
    "fuzzy_recall": (26, 8),
    "noisy_recall": (41, 8),
    "selective_copying": (16, 14),
    "compression": (17, 15),
    "memorization": (129, 128),
}


def test_the_full_budget_is_mad_labs_model_and_sweep():
    budget = mad.FULL_BUDGET
    assert (budget.steps, budget.batch_size, budget.dim, budget.depth) == (4000, 128, 128, 2)
    assert (budget.mlp_ratio, budget.clip) == (2, 0.0)
    assert sorted((p["lr"], p["weight_decay"]) for p in budget.grid) == [
        (1e-4, 0.0),
        (1e-4, 0.1),
        (5e-4, 0.0),
        (5e-4, 0.1),
        (1e-3, 0.0),
        (1e-3, 0.1),
    ]
    for name in mad.TRACKS:
        assert track(name).budget("full") == budget


def track(name: str) -> mad.MadTrack:
    task, description = mad.TRACKS[name]
    return mad.MadTrack(name, task, description, mad.QUICK.get(name), mad.LADDERS[name])


@pytest.mark.parametrize("name", sorted(mad.TRACKS))
def test_the_ladder_is_mad_labs_sweep(name):
    settings = mad.mad_lab_settings(name)
    assert [(s["vocab_size"], s["seq_len"], s["num_train_examples"]) for s in settings] == (
        SWEEPS[name]
    )
    if name in EXTRA:
        key, values = EXTRA[name]
        assert [s[key] for s in settings] == values
    ladder = mad.LADDERS[name]
    assert len(ladder) == len(settings)
    assert [r["train"] for r in ladder] == [s["num_train_examples"] for s in settings]
    defaults = mad_tasks.DEFAULTS[mad.TRACKS[name][0]]
    train = SWEEPS[name][0][2]
    assert {**defaults, **ladder[0]} == {**BASELINE[name], "train": train}


@pytest.mark.parametrize("name", sorted(mad.TRACKS))
def test_every_rung_is_a_valid_generator_setting(name):
    task = mad.TRACKS[name][0]
    for rung in mad.LADDERS[name]:
        difficulty = {k: v for k, v in rung.items() if k != "train"}
        assert mad_tasks.difficulty_problem(task, difficulty) is None, rung


def test_the_translated_sizes_follow_mad_labs_vocabulary():
    assert mad.rung("recall", 128, 1024, 800) == dict(
        seq_len=1024,
        num_pairs=64,
        num_keys=64,
        num_values=64,
        num_queries=512,
        train=800,
    )
    assert mad.rung("recall", 128, 128, 800)["num_pairs"] == 32  # half the sequence is queries
    noisy = mad.rung("noisy_recall", 144, 128, 12800, frac_noise=0.8)
    assert (noisy["num_keys"], noisy["noise_vocab"], noisy["noise_ratio"]) == (64, 16, 0.8)
    fuzzy = mad.rung("fuzzy_recall", 128, 1024, 12800)
    assert (fuzzy["num_keys"], fuzzy["num_values"], fuzzy["num_pairs"]) == (63, 64, 63)
    assert mad.rung("selective_copying", 128, 256, 12800, num_tokens_to_copy=96)["vocab"] == 126
    assert mad.rung("compression", 16, 256, 12800)["seq_len"] == 257
    memorization = mad.rung("memorization", 8192, 32, 256)
    assert (memorization["num_keys"], memorization["num_values"]) == (4095, 4096)


@pytest.mark.parametrize("name", sorted(mad.TRACKS))
def test_a_generated_baseline_batch_has_the_documented_sizes(name):
    task = mad.TRACKS[name][0]
    difficulty = BASELINE[name]
    x, y = mad_tasks.MAKERS[task](np.random.default_rng(0), 16, **difficulty)
    vocab, classes = mad_tasks.vocabulary(task, difficulty)
    assert (vocab, classes) == VOCABULARY[name]
    assert x.shape == (16, difficulty["seq_len"]) and x.min() >= 0 and x.max() < vocab
    scored = y[y != IGNORE]
    assert scored.size and scored.min() >= 0 and scored.max() < classes
    if name in ("recall", "noisy_recall"):  # 8 distinct keys bound in the first half
        keys = np.where((x[:, :64] >= 1) & (x[:, :64] <= 8), x[:, :64], 0)
        assert all(len(set(row[row > 0])) == 8 for row in keys)
        queries = x[:, 64:][y[:, 64:] != IGNORE]  # query ids 17..24 name the 8 keys
        assert (y[:, :64] == IGNORE).all() and queries.min() >= 17 and queries.max() <= 24
    if name == "fuzzy_recall":  # 7 key spans of 1 to 3 tokens, with values, in the first half
        assert (y[:, :64] == IGNORE).all() and (y[:, 64:] != IGNORE).any(axis=1).all()
    if name == "selective_copying":  # 16 data tokens among fillers, copied at the last 16
        assert ((x[:, :240] > 0) & (x[:, :240] <= 14)).sum(axis=1).tolist() == [16] * 16
        assert (y[:, 240:] != IGNORE).all() and (y[:, :240] == IGNORE).all()
    if name == "compression":  # MAD-Lab's 31 data tokens, decoded from the last
        assert y.shape == (16, 31)
    if name == "memorization":  # 16 keys per example, each answered at its insert token
        assert (y != IGNORE).sum(axis=1).tolist() == [16] * 16

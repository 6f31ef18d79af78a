"""Generators of the six MAD token-manipulation tasks (Poli et al. 2024, "Mechanistic Architecture
Design"), written from the task definitions; multi-query associative recall follows Zoology
(Arora et al. 2023). Pure numpy: every array comes from the ``numpy.random.Generator`` given.

Each ``make_<task>(rng, n, **difficulty)`` returns ``x`` int64 (n, T) token ids and ``y`` int64
targets, ``IGNORE`` where a position is not scored: (n, T) for every task but compression, whose
``y`` is (n, T - 2). Token id 0 is BLANK. The encoder is bidirectional unless its mixer is causal,
so no answer is ever in the input: a read-out position holds a query or a marker, and comes after
everything it needs, so causal mixers (longconv, ssm) can solve every task in principle. The
track's tokenizer adds to each token an embedding of the previous one (a fixed one-token shift,
the short convolution of H3, Hyena and Based, given to every mixer alike): layouts are chosen so
that it never answers a read-out on its own, except for memorization, which by design needs no
mixing (it measures what the weights can store).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

IGNORE = -100
BLANK = 0


def _slots(rng: np.random.Generator, n: int, length: int, count: int, width: int) -> np.ndarray:
    """Sorted start positions (n, count) of ``count`` non-overlapping spans of ``width`` tokens in
    ``length`` tokens, uniform over all placements."""
    free = length - count * width
    if free < 0:
        raise ValueError(f"{count} spans of {width} tokens do not fit in {length}")
    picks = np.sort(rng.random((n, free + count)).argsort(axis=1)[:, :count], axis=1)
    return picks + np.arange(count) * (width - 1)


def _distinct(rng: np.random.Generator, n: int, pool: int, count: int) -> np.ndarray:
    """(n, count) distinct integers below ``pool`` per row, in random order."""
    return rng.random((n, pool)).argsort(axis=1)[:, :count]


Arrays = tuple[np.ndarray, np.ndarray]


def make_in_context_recall(
    rng: np.random.Generator,
    n: int,
    seq_len: int = 128,
    num_pairs: int = 4,
    num_keys: int = 8,
    num_values: int = 8,
    num_queries: int = 64,
    noise_vocab: int = 0,
    noise_ratio: float = 0.0,
    packed: int = 1,
) -> Arrays:
    """Multi-query associative recall (MQAR).

    ``num_pairs`` distinct keys (of ``num_keys``) are bound to values (of ``num_values``, drawn
    with replacement). The first ``seq_len - num_queries`` tokens hold each pair as two adjacent
    tokens ``key value``: packed at the start, as Zoology lays them out (``packed``), else at
    random non-overlapping places among BLANKs, so that a mixer that does not look at content
    cannot route by position. Each of the last ``num_queries`` tokens is a query naming one bound
    key (query tokens have ids of their own); its target is the key's value.
    With ``noise_ratio`` > 0 (noisy recall) every other position is a noise token (of
    ``noise_vocab`` ids) with that probability, in the query region too (then unscored).
    Ids: 0 BLANK, 1..K keys, K+1..K+V values, K+V+1..2K+V queries, then noise. Chance 1/V.
    """
    context = seq_len - num_queries
    if num_pairs > num_keys:
        raise ValueError("num_pairs must be at most num_keys")
    keys = _distinct(rng, n, num_keys, num_pairs)
    values = rng.integers(0, num_values, size=(n, num_pairs))
    x = np.zeros((n, seq_len), dtype=np.int64)
    y = np.full((n, seq_len), IGNORE, dtype=np.int64)
    if noise_ratio > 0:
        noise = 1 + 2 * num_keys + num_values + rng.integers(0, noise_vocab, size=(n, seq_len))
        x = np.where(rng.random((n, seq_len)) < noise_ratio, noise, BLANK)
    if packed:
        starts = np.tile(2 * np.arange(num_pairs), (n, 1))
    else:
        starts = _slots(rng, n, context, num_pairs, 2)
    rows = np.arange(n)[:, None]
    x[rows, starts] = 1 + keys
    x[rows, starts + 1] = 1 + num_keys + values
    which = rng.integers(0, num_pairs, size=(n, num_queries))
    queries = 1 + num_keys + num_values + np.take_along_axis(keys, which, axis=1)
    answers = np.take_along_axis(values, which, axis=1)
    if noise_ratio > 0:
        asked = rng.random((n, num_queries)) >= noise_ratio
        queries = np.where(asked, queries, x[:, context:])
        answers = np.where(asked, answers, IGNORE)
    x[:, context:], y[:, context:] = queries, answers
    return x, y


def make_fuzzy_in_context_recall(
    rng: np.random.Generator,
    n: int,
    seq_len: int = 128,
    num_pairs: int = 4,
    num_keys: int = 8,
    num_values: int = 8,
    key_len: int = 2,
    value_len: int = 2,
    query_fraction: float = 0.5,
) -> Arrays:
    """Fuzzy recall: keys and values are spans of 1..``key_len`` (1..``value_len``) tokens.

    Each pair is a contiguous ``key-span value-span`` at a random place of the context (the first
    ``(1 - query_fraction) * seq_len`` tokens); key spans are distinct, but one may be a prefix of
    another, so the whole span must be matched. The query region packs queries one after another:
    the key span in query ids, then one slot marker per value token, whose target is that value
    token. Ids: 0 BLANK, 1..K keys, K+1..K+V values, K+V+1..2K+V query keys, then the slots.
    Chance 1/V.
    """
    context = seq_len - round(query_fraction * seq_len)
    x = np.zeros((n, seq_len), dtype=np.int64)
    y = np.full((n, seq_len), IGNORE, dtype=np.int64)
    key_lens = rng.integers(1, key_len + 1, size=(n, num_pairs))
    value_lens = rng.integers(1, value_len + 1, size=(n, num_pairs))
    key_tokens = rng.integers(0, num_keys, size=(n, num_pairs, key_len))
    value_tokens = rng.integers(0, num_values, size=(n, num_pairs, value_len))
    starts = _slots(rng, n, context, num_pairs, key_len + value_len)
    slot_base = 1 + 2 * num_keys + num_values
    for i in range(n):
        spans: list[tuple[int, ...]] = []
        for p in range(num_pairs):  # redraw a key span equal to an earlier one
            while (span := tuple(key_tokens[i, p, : key_lens[i, p]])) in spans:
                key_tokens[i, p] = rng.integers(0, num_keys, size=key_len)
            spans.append(span)
            s, kl, vl = starts[i, p], key_lens[i, p], value_lens[i, p]
            x[i, s : s + kl] = 1 + key_tokens[i, p, :kl]
            x[i, s + kl : s + kl + vl] = 1 + num_keys + value_tokens[i, p, :vl]
        position = context
        while True:
            p = rng.integers(0, num_pairs)
            kl, vl = key_lens[i, p], value_lens[i, p]
            if position + kl + vl > seq_len:
                break
            x[i, position : position + kl] = 1 + num_keys + num_values + key_tokens[i, p, :kl]
            x[i, position + kl : position + kl + vl] = slot_base + np.arange(vl)
            y[i, position + kl : position + kl + vl] = value_tokens[i, p, :vl]
            position += kl + vl
    return x, y


def make_noisy_in_context_recall(
    rng: np.random.Generator,
    n: int,
    seq_len: int = 128,
    num_pairs: int = 4,
    num_keys: int = 8,
    num_values: int = 8,
    num_queries: int = 64,
    noise_vocab: int = 8,
    noise_ratio: float = 0.5,
) -> Arrays:
    """MQAR with distractors: every position that is not a pair or a query is a noise token with
    probability ``noise_ratio`` (see :func:`make_in_context_recall`). Chance 1/V."""
    return make_in_context_recall(
        rng,
        n,
        seq_len,
        num_pairs,
        num_keys,
        num_values,
        num_queries,
        noise_vocab,
        noise_ratio,
        packed=0,
    )


def make_selective_copying(
    rng: np.random.Generator,
    n: int,
    seq_len: int = 128,
    num_data: int = 4,
    vocab: int = 8,
    noise_vocab: int = 0,
) -> Arrays:
    """Selective copying: copy the data tokens, in order, ignoring the fillers.

    ``num_data`` data tokens (of ``vocab``, repeats allowed) sit at random distinct positions of
    the first ``seq_len - num_data`` tokens, the others fillers (BLANK, or noise tokens of
    ``noise_vocab`` ids). The last ``num_data`` positions hold a COPY marker; the target of the
    i-th is the i-th data token. Ids: 0 BLANK, 1..vocab data, vocab+1 COPY, then noise.
    Chance 1/vocab.
    """
    context = seq_len - num_data
    data = rng.integers(0, vocab, size=(n, num_data))
    where = np.sort(_distinct(rng, n, context, num_data), axis=1)
    x = np.zeros((n, seq_len), dtype=np.int64)
    if noise_vocab > 0:
        x[:, :context] = vocab + 2 + rng.integers(0, noise_vocab, size=(n, context))
    x[np.arange(n)[:, None], where] = 1 + data
    x[:, context:] = vocab + 1
    y = np.full((n, seq_len), IGNORE, dtype=np.int64)
    y[:, context:] = data
    return x, y


def make_compression(
    rng: np.random.Generator, n: int, seq_len: int = 16, vocab: int = 16
) -> Arrays:
    """Compression: ``d_0 .. d_{L-1} BLANK COMPRESS`` (L = seq_len - 2 random data tokens); the
    head decodes every data token from the COMPRESS position alone, so the mixer must pack the
    whole sequence into one token. ``y`` is (n, L). Ids: 0 BLANK, 1..vocab data, vocab+1 COMPRESS.
    Chance 1/vocab."""
    data = rng.integers(0, vocab, size=(n, seq_len - 2))
    tail = np.tile(np.array([[BLANK, vocab + 1]]), (n, 1))
    return np.concatenate([1 + data, tail], axis=1).astype(np.int64), data.astype(np.int64)


def make_memorization(
    rng: np.random.Generator, n: int, seq_len: int = 128, num_keys: int = 256, num_values: int = 16
) -> Arrays:
    """Memorization: one fixed key -> value table (the generator's first draw, so every split of a
    seed must come from one call), nothing of it in the context. Each example is ``key INSERT``
    pairs; the target at INSERT is the key's value. It needs no token mixing (the tokenizer's shift
    hands the key to INSERT): MAD's capacity control, where ``identity`` matches the mixers.
    Ids: 0 BLANK, 1..K keys, K+1 INSERT. Chance 1/V."""
    table = rng.integers(0, num_values, size=num_keys)
    keys = rng.integers(0, num_keys, size=(n, seq_len // 2))
    x = np.zeros((n, seq_len), dtype=np.int64)
    y = np.full((n, seq_len), IGNORE, dtype=np.int64)
    x[:, 0 : 2 * keys.shape[1] : 2] = 1 + keys
    x[:, 1 : 2 * keys.shape[1] : 2] = num_keys + 1
    y[:, 1 : 2 * keys.shape[1] : 2] = table[keys]
    return x, y


def vocabulary(task: str, difficulty: dict) -> tuple[int, int]:
    """(input ids, output classes) of ``task`` at ``difficulty`` (its generator's keywords)."""
    d = {**DEFAULTS[task], **difficulty}
    if task in ("in_context_recall", "noisy_in_context_recall"):
        return 1 + 2 * d["num_keys"] + d["num_values"] + d["noise_vocab"], d["num_values"]
    if task == "fuzzy_in_context_recall":
        return 1 + 2 * d["num_keys"] + d["num_values"] + d["value_len"], d["num_values"]
    if task == "selective_copying":
        return d["vocab"] + 2 + d["noise_vocab"], d["vocab"]
    if task == "compression":
        return d["vocab"] + 2, d["vocab"]
    return d["num_keys"] + 2, d["num_values"]


AT_LEAST_ONE = (
    "seq_len",
    "num_pairs",
    "num_keys",
    "num_values",
    "num_queries",
    "key_len",
    "value_len",
    "num_data",
    "vocab",
)


def difficulty_problem(task: str, difficulty: dict) -> str | None:
    """The first limit ``difficulty`` (the generator's keywords) breaks for ``task``, worded with
    the option names and values, or None when the generator can make the task."""
    d = {**DEFAULTS[task], **difficulty}
    for name, value in d.items():
        if isinstance(value, float) and not math.isfinite(value):
            return f"{name} ({value}) must be finite"
        if name in AT_LEAST_ONE and value < 1:
            return f"{name} ({value}) must be ≥ 1"
    length = d["seq_len"]
    if "num_pairs" in d and d["num_pairs"] > d["num_keys"]:  # the three recall tasks
        why = "keys of an example are distinct"
        if task == "fuzzy_in_context_recall":
            why = "key spans of an example are distinct and may be one token long"
        return f"num_pairs ({d['num_pairs']}) must be ≤ num_keys ({d['num_keys']}): the {why}"
    if task in ("in_context_recall", "noisy_in_context_recall"):
        if 2 * d["num_pairs"] + d["num_queries"] > length:
            return (
                f"2 × num_pairs ({d['num_pairs']}) + num_queries ({d['num_queries']}) must be "
                f"≤ seq_len ({length})"
            )
        ratio = d["noise_ratio"]
        if ratio >= 1:
            return f"noise_ratio ({ratio:g}) must be < 1, else no query is ever asked"
        if ratio > 0 and d["noise_vocab"] < 1:
            return f"noise_ratio ({ratio:g}) > 0 needs noise_vocab ≥ 1 (got {d['noise_vocab']})"
    if task == "fuzzy_in_context_recall":
        queried = round(d["query_fraction"] * length)
        span = d["key_len"] + d["value_len"]
        if queried < 2:
            return (
                f"round(query_fraction ({d['query_fraction']:g}) × seq_len ({length})) = "
                f"{queried} must be ≥ 2, room for a one-token key and value"
            )
        if d["num_pairs"] * span > length - queried:
            return (
                f"num_pairs ({d['num_pairs']}) × (key_len + value_len) ({span}) must be ≤ the "
                f"context, seq_len − round(query_fraction × seq_len) = {length - queried}"
            )
    if task == "selective_copying" and 2 * d["num_data"] > length:
        return (
            f"2 × num_data ({d['num_data']}) must be ≤ seq_len ({length}): the data tokens sit "
            "among the first seq_len − num_data positions, each copied into one of the last"
        )
    if task == "compression" and length < 3:
        return f"seq_len ({length}) must be ≥ 3: data tokens, then BLANK and COMPRESS"
    if task == "memorization" and length < 2:
        return f"seq_len ({length}) must be ≥ 2: a key and its INSERT"
    return None


MAKERS = {
    "in_context_recall": make_in_context_recall,
    "fuzzy_in_context_recall": make_fuzzy_in_context_recall,
    "noisy_in_context_recall": make_noisy_in_context_recall,
    "selective_copying": make_selective_copying,
    "compression": make_compression,
    "memorization": make_memorization,
}
DEFAULTS = {
    task: {
        name: param.default
        for name, param in inspect.signature(make).parameters.items()
        if name not in ("rng", "n")
    }
    for task, make in MAKERS.items()
}

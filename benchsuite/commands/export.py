"""``benchsuite export``: every training run in a store as one flat row (long format).

A job trains every config of its grid on one seed and keeps the one with the best validation
score: it gives one row per config (``chosen`` marks the kept one, which alone has test metrics
and probes), with its training-loss curve. Rows are built from ``OUT/benchsuite.sqlite`` alone.
CSV and JSON need only the standard library; Parquet needs the optional ``parquet`` extra (pandas
and pyarrow). Column names and meanings are in docs/report.md.
"""

from __future__ import annotations

import csv
import datetime
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchsuite.errors import UsageError
from benchsuite.records import RunRecord, SweepPoint
from benchsuite.vocabulary import Status

FORMATS = ("csv", "parquet", "json")  # the first is the default
CORE = (
    "key",
    "status",
    "track",
    "mixer",
    "seed",
    "config_index",
    "chosen",
    "finite",
    "preset",
    "diverged",
    "divergence",
    "seconds",
    "cap",
    "data_description",
    "data_verified",
    "device",
    "threads",
    "measure",
    "salt",
    "data_dir",
    "created",
    "error",
    "test_digest",
    "curve",
)
# nested dicts flattened into "<prefix>.<name>" columns, in this order
GROUPS = (
    ("config", "config"),
    ("metrics", "metric"),
    ("costs", "cost"),
    ("probes", "probe"),
    ("budget", "budget"),
    ("track_options", "track_option"),
    ("mixer_options", "mixer_option"),
    ("environment", "env"),
    ("fingerprint", "fingerprint"),
)


def _scalar(value: Any) -> Any:
    """A flat cell of a CSV or Parquet table: scalars as they are, anything nested (``curve``, a
    list-valued option) as JSON text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def flatten(record: RunRecord, created: float | None = None) -> list[dict[str, Any]]:
    """A job's training runs as flat rows (one per config of its grid; one row for a failed
    job): core columns, then ``<group>.<name>`` columns; nested values (``curve``: a list) stay
    as they are, for the writer to store."""
    job = record.job.to_plain()  # the stored form of either kind of job, for its columns
    points: list[SweepPoint | None] = [*record.result.sweep] or [
        None
    ]  # a failed or a legacy job: one
    rows = []
    for point in points:
        index = point.index if point else job.get("config_index")
        chosen = record.result.chosen is not None and index == record.result.chosen
        own = point.metrics if point else record.result.metrics
        metrics = {**own.to_plain(), **(record.result.metrics.to_plain() if chosen else {})}
        sources: dict[str, Mapping[str, Any]] = {
            "config": point.config if point else job.get("config") or {},
            "metrics": metrics,
            "costs": dict(record.result.costs.items()),
            "probes": record.result.probes if chosen else {},
            "budget": job.get("budget") or {},
            "track_options": job.get("track_options") or {},
            "mixer_options": job.get("mixer_options") or {},
            "environment": record.environment,
            "fingerprint": job.get("fingerprint") or {},
        }
        row: dict[str, Any] = {
            "key": record.key,
            "status": record.status,
            **{k: job.get(k) for k in ("track", "mixer", "seed")},
            "config_index": index,
            "chosen": chosen if record.status == Status.OK else None,
            "finite": point.finite if point else None,
            "preset": job.get("preset"),
            "diverged": record.result.diverged if chosen else None,
            "divergence": (record.result.divergence or None) if chosen else None,
            "seconds": record.seconds,
            "cap": record.result.cap,
            "data_description": record.result.data_description,
            "data_verified": record.result.data_verified,
            **{k: job.get(k) for k in ("device", "threads", "measure", "salt", "data_dir")},
            "created": (
                datetime.datetime.fromtimestamp(created, datetime.UTC).isoformat(timespec="seconds")
                if created is not None
                else None
            ),
            "error": record.error or None,
            "test_digest": record.result.test_digest or None,
            "curve": point.curve if point else None,
        }
        for group, prefix in GROUPS:
            for name, value in sorted(sources[group].items()):
                row[f"{prefix}.{name}"] = value
        rows.append(row)
    return rows


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every column any row has: the core ones first, then each group's, sorted within it."""
    if not rows:
        return list(CORE)
    seen = {name for row in rows for name in row}
    ordered = [name for name in CORE if name in seen]
    for _, prefix in GROUPS:
        ordered += sorted(n for n in seen if n.startswith(f"{prefix}.") and n not in ordered)
    return ordered + sorted(seen - set(ordered))


def export_rows(out: Path | str, include_failures: bool = False) -> list[dict[str, Any]]:
    """One row per stored training run of ``OUT`` (oldest first); failed runs when asked."""
    from benchsuite.store.store import FILENAME, Store  # numpy: not at import (--help)

    path = Path(out) / FILENAME
    if not path.exists():
        raise UsageError(f"no benchsuite store in {out} (expected {path})")
    store = Store(path)
    try:
        query = "SELECT record, created FROM results ORDER BY created, key"
        found = store.db.execute(query).fetchall()
        if include_failures:
            found += store.db.execute("SELECT record, created FROM failures ORDER BY id").fetchall()
    finally:
        store.close()
    return [
        row
        for text, created in found
        for row in flatten(RunRecord.from_dict(json.loads(text)), created)
    ]


def _json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as None, in lists and mappings too."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _json_safe(item) for key, item in value.items()}
    return value


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """CSV with a header row; a missing value is an empty cell."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns(rows), restval="")
        writer.writeheader()
        writer.writerows({name: _scalar(value) for name, value in row.items()} for row in rows)


def write_json(rows: list[dict[str, Any]], path: Path) -> None:
    """A JSON array of row objects (every column in every row; NaN and infinities as null;
    ``curve`` a list of numbers)."""
    names = columns(rows)
    table = [{name: _json_safe(row.get(name)) for name in names} for row in rows]
    path.write_text(json.dumps(table, indent=1, allow_nan=False), encoding="utf-8")


def write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """Parquet through pandas and pyarrow; nested values as JSON text, and a column mixing text
    and numbers as text."""
    try:
        import pandas as pd
        import pyarrow  # noqa: F401  (pandas' parquet engine)
    except ImportError:
        raise UsageError(
            "parquet export needs pandas and pyarrow: pip install 'benchsuite[parquet]' "
            "(or use --format csv or json)"
        ) from None
    flat = [{name: _scalar(value) for name, value in row.items()} for row in rows]
    frame = pd.DataFrame.from_records(flat, columns=columns(rows))
    for name in frame.columns:
        kinds = {type(v) for v in frame[name] if v is not None and v == v}
        if str in kinds and len(kinds) > 1:
            frame[name] = frame[name].map(lambda v: None if v is None else str(v))
    frame.to_parquet(path, index=False)


WRITERS = {"csv": write_csv, "json": write_json, "parquet": write_parquet}


def export(
    out: Path | str,
    fmt: str = "csv",
    output: Path | str | None = None,
    include_failures: bool = False,
) -> tuple[Path, int]:
    """Write the runs of ``OUT`` to ``output`` (default ``OUT/results.<fmt>``); (path, rows)."""
    if fmt not in WRITERS:
        raise UsageError(f"unknown export format {fmt!r}; valid: {', '.join(FORMATS)}")
    rows = export_rows(out, include_failures)
    path = Path(output) if output else Path(out) / f"results.{fmt}"
    path.parent.mkdir(parents=True, exist_ok=True)
    WRITERS[fmt](rows, path)
    return path, len(rows)

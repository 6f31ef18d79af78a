"""The embedded store: one SQLite row per finished job, keyed by the job's content hash.

Rows are only inserted or upserted, never rewritten in place; failures are kept in their own table
and never count as results. WAL mode keeps every committed row through a killed process. A store of
an older schema is copied to ``benchsuite.sqlite.vN.bak`` before it is migrated.

Several runs may share one store: the ``leases`` table says which run is training which job
(:mod:`benchsuite.store.leases`), a job is leased in one ``BEGIN IMMEDIATE`` transaction that
first looks for its result and for another run's live lease, and its lease is given back in the
transaction that stores its record. Each run saves its own plan (its own row of ``runs``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsuite import disk
from benchsuite.errors import RunError, UsageError
from benchsuite.records import RunRecord
from benchsuite.store.leases import Lease, Owner
from benchsuite.store.legacy import manifest_to_plan
from benchsuite.vocabulary import Status

SCHEMA_VERSION = 4
FILENAME = "benchsuite.sqlite"
STAGE = "tuned"  # the stage column: every job tunes on its seed (0.1 stored "sweep" and "eval")

_TABLES = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    track TEXT NOT NULL, mixer TEXT NOT NULL, stage TEXT NOT NULL,
    config_index INTEGER NOT NULL, seed INTEGER NOT NULL,
    record TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL,
    track TEXT NOT NULL, mixer TEXT NOT NULL, stage TEXT NOT NULL, seed INTEGER NOT NULL,
    record TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, request TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    heartbeat REAL NOT NULL
);
"""
_CHUNK = 500  # keys per "IN (...)" query, under SQLite's limit of bound parameters


def _plans_from_manifests(db: sqlite3.Connection) -> None:
    """Schema 3 keeps each run's plan (it then held each seed's chosen config) where schema 2
    kept its manifest; the manifests of earlier runs are converted (see
    :mod:`benchsuite.store.legacy`)."""
    rows = db.execute("SELECT id, request FROM runs").fetchall()
    for row_id, text in rows:
        plan = manifest_to_plan(json.loads(text), _records(db))
        db.execute("UPDATE runs SET request = ? WHERE id = ?", (json.dumps(plan), row_id))


def _choices_into_records(db: sqlite3.Connection) -> None:
    """Schema 4 keeps each seed's chosen config in its record only: a schema-3 plan's choices
    (per cell, by seed) fill the records that lack one (those converted from 0.1 manifests),
    and leave the plans."""
    records = _records(db)
    for row_id, text in db.execute("SELECT id, request FROM runs").fetchall():
        plan = json.loads(text)
        for cell in (cell for cells in plan["cells"].values() for cell in cells.values()):
            choices = cell.pop("chosen", {})
            for key in cell["jobs"]:
                record = records.get(key)
                chosen = choices.get(str(record.job.seed)) if record else None
                if record is not None and record.result.chosen is None and chosen is not None:
                    record.result.chosen = chosen
                    db.execute(
                        "UPDATE results SET record = ? WHERE key = ?",
                        (_payload(record), key),
                    )
        db.execute("UPDATE runs SET request = ? WHERE id = ?", (json.dumps(plan), row_id))


def _payload(record: RunRecord) -> str:
    """A record as the store keeps it: JSON, keys sorted."""
    return json.dumps(record.to_dict(), sort_keys=True)


def _records(db: sqlite3.Connection) -> dict[str, RunRecord]:
    rows = db.execute("SELECT key, record FROM results").fetchall()
    return {key: RunRecord.from_dict(json.loads(text)) for key, text in rows}


MIGRATIONS: dict[int, str | Callable[[sqlite3.Connection], None]] = {
    2: "CREATE INDEX IF NOT EXISTS results_by_cell ON results (track, mixer, stage);",
    3: _plans_from_manifests,
    4: _choices_into_records,
}
"""What brings a store from the version before each key to that version (SQL or a function)."""


@dataclass
class Claim:
    """What :meth:`Store.claim` found: the keys now leased to the claiming run, those with a
    stored result, those another run failed meanwhile, and the live leases of other runs."""

    mine: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)
    failed: dict[str, RunRecord] = field(default_factory=dict)
    held: list[Lease] = field(default_factory=list)


def renew_leases(path: Path, owner: Owner) -> None:
    """Move the heartbeat of ``owner``'s leases to now, on a connection of its own (it is called
    from the heartbeat thread); a missed beat is made up by the next one."""
    renew = "UPDATE leases SET heartbeat = ? WHERE owner = ?"
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db, db:
            db.execute(renew, (time.time(), owner.id))
    except sqlite3.Error:
        pass


class Store:
    """Results of training runs in ``OUT/benchsuite.sqlite``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.backup: Path | None = None  # where an older store was copied before migrating
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30)
        except (OSError, sqlite3.OperationalError) as error:
            raise UsageError(f"store {self.path}: cannot open ({error})") from None
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as error:
            self.db.close()
            raise UsageError(
                f"store {self.path}: not a usable benchsuite store ({error}); it was left "
                "untouched: move it away or choose another --out"
            ) from None
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"store {self.path} has schema {version}, newer than this benchsuite's "
                f"{SCHEMA_VERSION}; upgrade benchsuite or use another --out"
            )
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            if 0 < version < SCHEMA_VERSION:
                self.backup = self._back_up(version)
            self.db.execute("BEGIN IMMEDIATE")  # one run at a time creates or migrates the tables
            self._migrate()
            self.db.commit()
        except sqlite3.DatabaseError as error:
            self.db.rollback()
            raise UsageError(
                f"store {self.path}: not a usable benchsuite store ({error})"
            ) from None

    def _migrate(self) -> None:
        """Create the tables and bring them to this schema, from the version read under the write
        lock (another run on the same folder may have migrated the store a moment ago)."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        for statement in _TABLES.split(";"):
            if statement.strip():
                self.db.execute(statement)
        for target in range(version + 1, SCHEMA_VERSION + 1):
            step = MIGRATIONS.get(target, "")
            if version and callable(step):  # a fresh store has nothing to convert
                step(self.db)
            elif isinstance(step, str) and step:
                self.db.execute(step)
        if version != SCHEMA_VERSION:
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _back_up(self, version: int) -> Path:
        """Copy an older store beside itself before migrating it (never overwrites a backup)."""
        target = self.path.with_name(f"{self.path.name}.v{version}.bak")
        if not target.exists():
            with sqlite3.connect(target) as copy:
                self.db.backup(copy)
            copy.close()
        return target

    @classmethod
    def in_folder(cls, out: Path | str) -> Store:
        return cls(Path(out) / FILENAME)

    def close(self) -> None:
        self.db.close()

    def _among(self, query: str, keys: Iterable[str], *params: Any) -> list[tuple]:
        """The rows of ``query`` (whose ``{keys}`` becomes ``?,?,...``) for ``keys``, in chunks;
        ``params`` are bound after the keys."""
        wanted = list(keys)
        rows: list[tuple] = []
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows += self.db.execute(query.format(keys=marks), (*chunk, *params)).fetchall()
        return rows

    def known_keys(self, keys: Iterable[str]) -> set[str]:
        """The subset of ``keys`` that already have a stored result."""
        return {
            key for (key,) in self._among("SELECT key FROM results WHERE key IN ({keys})", keys)
        }

    def put(self, record: RunRecord, owner: Owner | None = None) -> None:
        """Save one record: a result (upsert by key) or a failure (appended); in the same
        transaction, give back ``owner``'s lease on its job."""

        def write() -> None:
            self._put(record)
            if owner is not None:
                self.db.execute(
                    "DELETE FROM leases WHERE key = ? AND owner = ?", (record.key, owner.id)
                )

        self._write(write, "a result")

    def claim(self, keys: Iterable[str], owner: Owner, since: float | None = None) -> Claim:
        """Lease to ``owner``, in one transaction, those of ``keys`` that have no stored result and
        no live lease of another run (a stale lease is taken over). A key another run failed at or
        after ``since`` (a failure, no result, no lease) is not leased but returned as failed."""

        def write() -> Claim:
            self.db.execute("BEGIN IMMEDIATE")
            wanted = list(keys)
            claim = Claim(done=self.known_keys(wanted))
            rest = [key for key in wanted if key not in claim.done]
            leases = self._leases(rest)
            if since is not None:
                claim.failed = self._failed_since([k for k in rest if k not in leases], since)
            now = time.time()
            for key in rest:
                lease = leases.get(key)
                if lease is not None and lease.owner != owner.id and not lease.stale(now):
                    claim.held.append(lease)
                elif key not in claim.failed:
                    claim.mine.append(key)
            self.db.executemany(
                "INSERT OR REPLACE INTO leases VALUES (?,?,?,?,?)",
                [(key, owner.id, owner.host, owner.pid, now) for key in claim.mine],
            )
            return claim

        return self._write(write, "the job leases")

    def _leases(self, keys: Iterable[str]) -> dict[str, Lease]:
        query = "SELECT key, owner, host, pid, heartbeat FROM leases WHERE key IN ({keys})"
        return {row[0]: Lease(*row) for row in self._among(query, keys)}

    def _failed_since(self, keys: Iterable[str], since: float) -> dict[str, RunRecord]:
        """The last failure of each of ``keys`` recorded at or after ``since``."""
        query = (
            "SELECT key, record FROM failures WHERE key IN ({keys}) AND created >= ? ORDER BY id"
        )
        rows = self._among(query, keys, since)
        return {key: RunRecord.from_dict(json.loads(text)) for key, text in rows}

    def release(self, owner: Owner) -> None:
        """Give back every lease ``owner`` still holds (its run stopped, finished or failed)."""
        if self.db.in_transaction:  # interrupted mid-write: nothing half-done is kept
            self.db.rollback()
        self._write(
            lambda: self.db.execute("DELETE FROM leases WHERE owner = ?", (owner.id,)),
            "the job leases",
        )

    def _write(self, write: Callable[[], Any], what: str) -> Any:
        """Run one write and commit it; an SQLite error is a one-line RunError (nothing earlier
        is lost: every write is its own transaction)."""
        try:
            result = write()
            self.db.commit()
        except sqlite3.Error as error:
            self.db.rollback()
            raise RunError(
                f"store {self.path}: cannot save {what} ({error}: {disk.cause(self.path, error)}); "
                "every result saved before is intact: free space or fix the folder, then run the "
                "same command to resume"
            ) from error
        return result

    def _put(self, record: RunRecord) -> None:
        job = record.job
        payload = _payload(record)
        if record.status == Status.OK:
            self.db.execute(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET "
                "record=excluded.record, created=excluded.created",
                (
                    record.key,
                    job.track,
                    job.mixer,
                    STAGE,
                    record.result.chosen,
                    job.seed,
                    payload,
                    time.time(),
                ),
            )
        else:
            self.db.execute(
                "INSERT INTO failures (key, track, mixer, stage, seed, record, created) "
                "VALUES (?,?,?,?,?,?,?)",
                (record.key, job.track, job.mixer, STAGE, job.seed, payload, time.time()),
            )

    def results(self, keys: Iterable[str] | None = None) -> dict[str, RunRecord]:
        """Stored results by key (all of them, or those among ``keys``)."""
        if keys is None:
            rows = self.db.execute("SELECT key, record FROM results").fetchall()
        else:
            rows = self._among("SELECT key, record FROM results WHERE key IN ({keys})", keys)
        return {key: RunRecord.from_dict(json.loads(text)) for key, text in rows}

    def failures(self) -> list[RunRecord]:
        """Every failure record, oldest first."""
        rows = self.db.execute("SELECT record FROM failures ORDER BY id").fetchall()
        return [RunRecord.from_dict(json.loads(text)) for (text,) in rows]

    def save_plan(self, plan: dict[str, Any]) -> int:
        """Remember a run's plan (``Plan.to_dict()``), for ``report`` and ``compare``."""
        text = json.dumps(plan, sort_keys=True, default=str)
        cursor = self._write(
            lambda: self.db.execute(
                "INSERT INTO runs (started, request) VALUES (?, ?)", (time.time(), text)
            ),
            "the run's plan",
        )
        return int(cursor.lastrowid or 0)

    def plans(self) -> list[dict[str, Any]]:
        """The plan of every run saved here, oldest first."""
        rows = self.db.execute("SELECT request FROM runs ORDER BY id").fetchall()
        return [json.loads(text) for (text,) in rows]

    def last_plan(self) -> dict[str, Any] | None:
        """The plan of the most recent run (as saved), or None."""
        row = self.db.execute("SELECT request FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return json.loads(row[0]) if row else None

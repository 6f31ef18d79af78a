"""Job leases: which run is training a job, so that two runs on one output folder never train the
same job at the same time.

A run takes a lease on a job just before it hands the job out, and gives it back with the job's
record. A lease names its owner (host, process id and a random token of one run) and carries a
heartbeat the owner renews while it trains. A lease is *stale*, and another run takes the job over,
once its heartbeat is older than :data:`EXPIRY_SECONDS`, or at once when its owner ran on this host
and that process is gone. The store keeps the leases (its ``leases`` table); this module holds the
rules and the heartbeat.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

HEARTBEAT_SECONDS = 15.0
"""How often a run renews the heartbeat of its leases."""
EXPIRY_SECONDS = 120.0
"""A lease whose heartbeat is older than this is stale, wherever its owner ran."""
POLL_SECONDS = 1.0
"""How often a run waiting for another run's jobs looks at the store again."""


@dataclass(frozen=True)
class Owner:
    """One run: where it runs, its process, and a token that tells apart two runs of a process."""

    host: str
    pid: int
    token: str

    @classmethod
    def here(cls) -> Owner:
        """A new owner for a run of this process."""
        return cls(socket.gethostname(), os.getpid(), secrets.token_hex(4))

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}:{self.token}"


@dataclass(frozen=True)
class Lease:
    """A row of the store's ``leases`` table: ``owner`` is training the job ``key``."""

    key: str
    owner: str
    host: str
    pid: int
    heartbeat: float  # time.time() of the owner's last renewal

    def stale(self, now: float) -> bool:
        """Whether another run may take the job over: the heartbeat expired, or the owner ran on
        this host and its process is gone."""
        if now - self.heartbeat > EXPIRY_SECONDS:
            return True
        return self.host == socket.gethostname() and not process_alive(self.pid)

    @property
    def who(self) -> str:
        return f"pid {self.pid} on {self.host}"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (on Windows, where signal 0 would end it, every
    process counts as alive and only the heartbeat makes a lease stale)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def waiting_message(held: Iterable[Lease]) -> str:
    """The line a run prints once when it waits for jobs other runs are training."""
    held = list(held)
    owners = sorted({lease.who for lease in held})
    runs = "another run" if len(owners) == 1 else f"{len(owners)} other runs"
    jobs = f"{len(held)} job{'s' if len(held) != 1 else ''}"
    return (
        f"waiting for {jobs} that {runs} ({', '.join(owners)}) "
        f"{'is' if len(owners) == 1 else 'are'} training on this folder; a job is taken over "
        "if its run stops"
    )


class Heartbeat:
    """Calls ``beat`` every ``every`` seconds on a daemon thread while its ``with`` block runs."""

    def __init__(self, beat: Callable[[], None], every: float = HEARTBEAT_SECONDS) -> None:
        self.beat, self.every = beat, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="benchsuite-leases", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.beat()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=1)

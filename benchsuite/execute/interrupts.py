"""Stopping a run on a signal. The first Ctrl-C (SIGINT) or SIGTERM (a scheduler, ``docker
stop``, ``timeout``) is said at once, then stops the run where it is: every finished job is
already stored, the jobs in flight stop at their last save (:mod:`benchsuite.train.checkpoint`),
and the run writes its report of what finished and says how to resume. A second signal quits
the process at once (the store keeps every record committed so far; the workers end with the
driver).

Handlers are installed only on the main thread (a run started from another thread keeps the
process's own handlers: Python delivers signals to the main thread alone).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_code(name: str) -> int:
    """The shell's exit code of a process ended by signal ``name``: 128 + its number (130 for
    SIGINT, 143 for SIGTERM)."""
    return 128 + signal.Signals[name].value


@dataclass
class Interrupts:
    """The signals a run has received: ``announce(name)`` says the first at once, then the run
    unwinds (``KeyboardInterrupt`` where it is); a second ends the process."""

    announce: Callable[[str], None]
    received: str | None = None  # the first signal's name

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The signal handler."""
        name = signal.Signals(signum).name
        if self.received is not None:
            os.write(2, f"\n{name} again: quitting now (stored jobs are kept)\n".encode())
            os._exit(exit_code(self.received))
        self.received = name
        self.announce(name)
        raise KeyboardInterrupt


@contextmanager
def stoppable(announce: Callable[[str], None]) -> Iterator[Interrupts]:
    """SIGINT and SIGTERM handled as :class:`Interrupts` inside the block (on the main thread),
    the previous handlers restored after it."""
    interrupts = Interrupts(announce)
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous = {number: signal.signal(number, interrupts.handle) for number in SIGNALS}
    try:
        yield interrupts
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)

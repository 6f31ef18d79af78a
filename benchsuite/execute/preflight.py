"""Running the pre-flight's checks (:mod:`benchsuite.plan.preflight`) where a hang cannot stop
the run.

``process``  on the run's own worker pool, each check under its own time limit (a worker past
             it is killed and replaced, as a job past ``--timeout`` is); the workers then train.
``ray``      on a one-process pool of the driver's machine, closed once the checks are done.
``local``    in a thread of the driver each: past the limit the run goes on without waiting,
             but the thread cannot be stopped (the local executor isolates nothing).
"""

from __future__ import annotations

import threading

from benchsuite.execute.executors import Executor, LocalExecutor
from benchsuite.execute.pool import ProcessExecutor
from benchsuite.execute.worker import Worker
from benchsuite.plan.preflight import Check, Checked, Checker


def checker(pool: Executor, worker: Worker) -> Checker:
    """The pre-flight for a run whose jobs go to ``pool`` (each worker runs ``worker``)."""

    def run(checks: list[Check]) -> dict[str, str]:
        if isinstance(pool, LocalExecutor):
            outcomes = [_in_thread(check, worker) for check in checks]
        elif isinstance(pool, ProcessExecutor):
            outcomes = list(pool.map(checks))
        else:
            with ProcessExecutor(worker, 1) as own:
                outcomes = list(own.map(checks))
        return {o.key: o.reason for o in outcomes if o.reason is not None}

    return run


def _in_thread(check: Check, worker: Worker) -> Checked:
    """``check`` in a daemon thread of this process, waited for ``check.limit`` seconds."""
    outcome: list[Checked] = []
    thread = threading.Thread(
        target=lambda: outcome.append(worker.check(check)), name=check.label, daemon=True
    )
    thread.start()
    thread.join(check.limit)
    if outcome:
        return outcome[0]
    left = "; its thread keeps running (--executor local cannot stop it)"
    return Checked(check.key, check.timed_out() + left)

"""Each worker process's memory cap (``--memory-limit``, docs/running.md "Faults a run
survives"): a mixer that eats the memory fails its job with one line naming the mixer and the
limit, instead of the kernel's OOM killer taking the machine (and every other job) down.

The cap is the process's data segment (``RLIMIT_DATA``: its heap and private anonymous mappings,
where tensors live on the CPU; not the shared libraries), set in the worker once it has loaded
torch and the plugins, so an allocation past it fails at once (torch raises "can't allocate
memory", Python ``MemoryError``) and the worker lives on for the next job. The ``local``
executor runs jobs in the driver, which is not capped.
"""

from __future__ import annotations

import os

SHARE = 0.8  # of the machine's memory, shared by the workers, when no limit is given
GIB = 2**30


def worker_limit(setting: float | None, workers: int) -> int | None:
    """The bytes each of ``workers`` processes may allocate: ``setting`` GiB, else
    :data:`SHARE` of the machine's memory over the workers; None for no cap (``setting`` 0)."""
    if setting == 0:
        return None
    if setting is not None:
        return int(setting * GIB)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return int(SHARE * total / max(workers, 1))


def cap(limit: int | None) -> None:
    """Cap this process's data segment at ``limit`` bytes (None: leave it), below the hard limit
    the system allows."""
    if limit is None:
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def refused(text: str) -> bool:
    """Whether an error's text says an allocation was refused (torch's CPU allocator)."""
    return "can't allocate memory" in text or "MemoryError" in text


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an allocation refused (by the cap, or by the system)."""
    return isinstance(error, MemoryError) or refused(str(error))


def said(mixer: str, track: str, limit: int) -> str:
    """The one line of a job that ran out of memory at the cap."""
    return (
        f"mixer {mixer!r} on {track} ran out of memory at the worker limit of "
        f"{limit / GIB:.3g} GiB (--memory-limit)"
    )

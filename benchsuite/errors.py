"""The three kinds of error benchsuite reports as one line, and the helpers that word them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


class UsageError(Exception):
    """A mistake in what the user asked for: shown as one line, exit code 2."""


class PluginError(Exception):
    """A plugin broke its contract: shown as one line naming the plugin."""


class RunError(Exception):
    """The run cannot go on (e.g. the store cannot be written): one line, exit code 1."""


def one_line(error: BaseException) -> str:
    """An exception as one line: its first line, after its type name unless it is one of
    benchsuite's own errors (those are already worded for the user)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if text and isinstance(error, UsageError | PluginError | RunError):
        return text
    return f"{type(error).__name__}: {text}".rstrip(": ")


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest valid name, or an empty string."""
    match = difflib.get_close_matches(name, list(valid), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def check_names(kind: str, asked: Sequence[str], valid: Iterable[str]) -> None:
    """Every asked name exists and is given once, else a one-line error with the valid names."""
    known = sorted(valid)
    seen: set[str] = set()
    for name in asked:
        if name in seen:
            raise UsageError(f"{kind} {name!r} is named twice")
        seen.add(name)
        if name not in known:
            hint = did_you_mean(name, known)
            raise UsageError(f"unknown {kind} {name!r}{hint}; valid: {', '.join(known)}")

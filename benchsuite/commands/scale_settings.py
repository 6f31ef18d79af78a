"""What ``benchsuite scale`` is asked (:class:`ScaleSettings`, from which its flags come) and the
statuses of a measured point. Nothing here imports torch."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchsuite.errors import UsageError
from benchsuite.settings import (
    NAMES,
    NUMBER,
    OPTIONS,
    TEXT,
    WHOLE,
    RunSettings,
    setting,
    split_names,
)

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_tokens(text: str) -> tuple[int, ...]:
    """``"64,128"`` -> ``(64, 128)``, sorted and without repeats; a bad entry is named."""
    ladder = set()
    for part in split_names(text):
        if not part.isdigit() or int(part) < 1:
            raise UsageError(f"--tokens {part!r}: expected whole numbers >= 1, like 64,128,256")
        ladder.add(int(part))
    if not ladder:
        raise UsageError("--tokens: give at least one token count, like 64,128,256")
    return tuple(sorted(ladder))


def parse_bytes(text: str) -> int:
    """``"4GiB"``, ``"512M"``, ``"2e9"`` -> bytes (K, M, G, T are powers of 1024)."""
    match = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    try:
        value = float(match[1]) * _UNITS[match[2]] if match else math.nan
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise UsageError(f"--max-memory {text!r}: expected a size like 4GiB, 512M or 2e9")
    return int(value)


def size_text(value: float) -> str:
    return f"{value / 2**30:.3g} GiB" if value >= 2**30 else f"{value / 2**20:.3g} MiB"


@dataclass(frozen=True)
class ScaleSettings:
    """What ``benchsuite scale`` measures (``mixers`` None: every registered mixer); a field with
    a help is a flag."""

    mixers: tuple[str, ...] | None = setting(None, "comma-separated mixers (default: all)", NAMES)
    tokens: tuple[int, ...] = setting(
        tuple(2**k for k in range(6, 15)),
        "comma-separated ladder of token counts",
        NAMES,
        parse=parse_tokens,
    )
    baseline: str = setting(RunSettings.baseline, "the mixer the table is relative to", TEXT)
    width: int = setting(32, "model dim", WHOLE)
    depth: int = setting(1, "blocks", WHOLE)
    batch: int = setting(8, "batch size", WHOLE)
    mlp_ratio: int = 2
    warmup: int = setting(2, "untimed steps; the first is checked against --max-seconds", WHOLE)
    steps: int = setting(5, "timed steps, of which the median is kept", WHOLE)
    lr: float = 1e-3
    threads: int = setting(1, "torch threads per point", WHOLE)
    device: str = setting("cpu", "cpu or cuda", TEXT)
    max_seconds: float = setting(10.0, "a longer training step is over budget", NUMBER)
    max_memory: int = setting(
        4 * 2**30,
        "more memory is over budget, e.g. 512M, 4GiB",
        TEXT,
        parse=parse_bytes,
        show=size_text,
    )
    mixer_options: Mapping[str, Mapping[str, Any]] = setting(
        {},
        "a mixer option (as for run)",
        OPTIONS,
        metavar="MIXER.KEY=VALUE",
        flag="--mixer-option",
    )
    out: str = setting(RunSettings.out, "folder for scaling.json and plots/scaling-*.png", TEXT)
    plugins_dir: str | None = None

    def check(self) -> None:
        """A one-line usage error for a setting out of range."""
        for name in ("width", "depth", "batch", "mlp_ratio", "warmup", "steps", "threads"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
        if not self.max_seconds > 0:
            raise UsageError("--max-seconds must be > 0")

    def record(self) -> dict[str, Any]:
        """The settings as plain JSON values (the plugins and output folders left out)."""
        plain = dataclasses.asdict(self)
        del plain["plugins_dir"], plain["out"]
        return {**plain, "mixers": list(self.mixers or ()), "tokens": list(self.tokens)}

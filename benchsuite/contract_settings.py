"""What ``benchsuite test`` checks (:class:`ContractSettings`: its flags and the contract kit's
default sizes), declared like the run settings with :func:`benchsuite.settings.setting`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from benchsuite.errors import UsageError
from benchsuite.settings import NAMES, OPTIONS, setting, split_names


def sizes(flag: str, text: str) -> tuple[int, ...]:
    """``"8,16"`` -> ``(8, 16)``; anything but whole numbers > 0 is an error naming ``flag``."""
    values = split_names(text)
    if not values or not all(v.isdigit() and int(v) > 0 for v in values):
        raise UsageError(f"{flag} takes whole numbers > 0, e.g. 8,16; got {','.join(values)!r}")
    return tuple(int(v) for v in values)


@dataclass(frozen=True)
class ContractSettings:
    """What ``benchsuite test`` checks; its sizes are the contract kit's defaults too
    (:mod:`benchsuite.testing`)."""

    mixers: Sequence[str] = ()
    tokens: tuple[int, ...] = setting(
        (8, 16), "token counts to build the mixer with", NAMES, parse=partial(sizes, "--tokens")
    )
    dims: tuple[int, ...] = setting(
        (16, 32), "model widths to build the mixer with", NAMES, parse=partial(sizes, "--dims")
    )
    mixer_options: Mapping[str, Mapping[str, Any]] = setting(
        {},
        "a mixer option to build with (as for run)",
        OPTIONS,
        metavar="MIXER.KEY=VALUE",
        flag="--mixer-option",
    )
    plugins_dir: str | None = None

"""The hooks a benchsuite plugin may implement (one docstring each).

A plugin is a module (from the ``benchsuite`` entry-point group or a ``*.py`` file in a plugins
folder) with functions decorated by :data:`benchsuite.hookimpl`.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

hookspec = pluggy.HookspecMarker("benchsuite")
hookimpl = pluggy.HookimplMarker("benchsuite")


@hookspec
def benchsuite_register_mixers(register: Callable[..., None]) -> None:
    """Register token mixers: call ``register(Mixer(...))`` once per mixer.

    Keep module-level imports light (no torch): import heavy code inside ``build`` or name it as a
    ``"module:attribute"`` string, so that ``benchsuite list`` stays fast.
    """


@hookspec
def benchsuite_register_tracks(register: Callable[..., None]) -> None:
    """Register tracks: call ``register(MyTrack())`` once per track (a :class:`Track` instance)."""

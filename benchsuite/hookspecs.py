"""The hooks a benchsuite plugin may implement.

A plugin is a module — named by an entry point of the ``benchsuite`` group of an installed
distribution, or a ``*.py`` file in a plugins folder (``--plugins-dir``) — with functions of these
names decorated by :data:`hookimpl`. docs/plugins.md has a section per hook.

When hooks are called: once per process that loads the plugins — the driver of ``benchsuite run``
(and ``list``, ``plugins``, ``new-mixer``) and every worker process, each of which loads the
plugins itself. Keep hook implementations fast and free of side effects; import heavy code (torch)
inside ``build``/``tokenizer`` rather than at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from benchsuite.specs import Mixer, Track

hookspec = pluggy.HookspecMarker("benchsuite")
hookimpl = pluggy.HookimplMarker("benchsuite")
"""Marks a plugin's hook implementation: ``@hookimpl def benchsuite_register_mixers(register)``."""


@hookspec
def benchsuite_register_mixers(register: Callable[[Mixer], None]) -> None:
    """Register token mixers: call ``register(Mixer(...))`` once per mixer.

    :param register: takes one :class:`benchsuite.Mixer`; the core stamps it with the plugin's
        name, distribution, version and module.

    Called once per process (driver and every worker), before anything runs. An exception raised
    here, or an object that is not a ``Mixer``, makes the whole plugin fail with a one-line reason
    (``benchsuite plugins`` lists it) while every other plugin still loads. A mixer name that
    another plugin registered too is an error naming both plugins. Keep module-level imports light
    (no torch): import heavy code inside ``build`` or name it as a ``"module:attribute"`` string,
    so that ``benchsuite list`` stays fast.
    """


@hookspec
def benchsuite_register_tracks(register: Callable[[Track], None]) -> None:
    """Register tracks: call ``register(MyTrack())`` once per track.

    :param register: takes one :class:`benchsuite.Track` instance; the core stamps it with the
        plugin's name, distribution, version and module.

    Called once per process (driver and every worker), before anything runs. An exception raised
    here, or an object that is not a ``Track``, makes the whole plugin fail with a one-line reason
    while every other plugin still loads; a track name registered twice is an error naming both
    plugins. A track's ``load`` is called later, per seed; errors there skip only that track.
    """

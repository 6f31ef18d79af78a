"""``benchsuite list`` and ``benchsuite plugins``: what is registered, read without building."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from benchsuite.registry import Registry
from benchsuite.specs import Option


def _options(options: tuple[Option, ...]) -> str:
    return "\n".join(
        f"{o.name}={o.default!r} ({o.type.__name__}) {o.help}".rstrip() for o in options
    )


def listing(registry: Registry) -> dict[str, Any]:
    """Plain data of every mixer and track (for ``list --json``)."""
    return {
        "mixers": {
            m.name: {
                "description": m.description,
                "options": {o.name: o.default for o in m.options},
                "fixed_tokens": m.fixed_tokens,
                "causal": m.causal,
                "signature": m.signature.prediction if m.signature else None,
                "plugin": m.plugin,
                "distribution": f"{m.distribution} {m.version}".strip(),
            }
            for m in registry.mixers.values()
        },
        "tracks": {
            t.name: {
                "description": t.description,
                "metric": t.metric.name,
                "direction": t.metric.direction,
                "options": {o.name: o.default for o in t.options},
                "presets": sorted(t.budgets),
                "plugin": t.plugin,
                "distribution": f"{t.distribution} {t.version}".strip(),
            }
            for t in registry.tracks.values()
        },
    }


def print_listing(registry: Registry, console: Console) -> None:
    """Rich tables of mixers and tracks with their options and providing distribution."""
    mixers = Table(title="[bold]mixers[/]")
    for column in ("name", "description", "options", "fixed T", "causal", "signature", "from"):
        mixers.add_column(column, overflow="fold")
    for m in sorted(registry.mixers.values(), key=lambda m: m.name):
        mixers.add_row(
            m.name, m.description, _options(m.options), "yes" if m.fixed_tokens else "no",
            "yes" if m.causal else "no", m.signature.prediction if m.signature else "",
            f"{m.distribution} {m.version}".strip(),
        )  # fmt: skip
    tracks = Table(title="[bold]tracks[/]")
    for column in ("name", "description", "metric", "options", "presets", "from"):
        tracks.add_column(column, overflow="fold")
    for t in sorted(registry.tracks.values(), key=lambda t: t.name):
        tracks.add_row(
            t.name, t.description, f"{t.metric.name} ({t.metric.direction})", _options(t.options),
            ", ".join(sorted(t.budgets)), f"{t.distribution} {t.version}".strip(),
        )  # fmt: skip
    console.print(mixers)
    console.print(tracks)
    if registry.failures:
        console.print(f"[yellow]{len(registry.failures)} plugin(s) failed to load: see "
                      "`benchsuite plugins`[/]")  # fmt: skip


def print_plugins(registry: Registry, console: Console) -> None:
    """Loaded plugins with their origin, and failures with their one-line reason."""
    table = Table(title="[bold]plugins[/]")
    for column in ("plugin", "distribution", "origin", "source hash"):
        table.add_column(column, overflow="fold")
    for p in registry.plugins:
        table.add_row(p.name, f"{p.distribution} {p.version}".strip(), p.origin, p.source_hash)
    console.print(table)
    if registry.failures:
        failed = Table(title="[bold red]plugin failures[/]")
        for column in ("plugin", "origin", "reason"):
            failed.add_column(column, overflow="fold")
        for f in registry.failures:
            failed.add_row(f.name, f.origin, f.reason)
        console.print(failed)

"""``benchsuite list`` (also ``--costs``) and ``benchsuite plugins``: what is registered, what it
costs, and which plugins failed."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchsuite.measures import COSTS
from benchsuite.output import numbers
from benchsuite.registry import Registry
from benchsuite.specs import Option, provenance


def _options(options: tuple[Option, ...]) -> str:
    return "\n".join(
        f"{o.name}={o.default!r} ({o.type.__name__}) {o.help}".rstrip() for o in options
    )


def _option_data(options: tuple[Option, ...]) -> dict[str, dict[str, Any]]:
    return {
        o.name: {
            "type": o.type.__name__,
            "default": o.default,
            "help": o.help,
            "choices": list(o.choices),
        }
        for o in options
    }


def listing(registry: Registry) -> dict[str, Any]:
    """Plain data of every mixer and track, with each option's type, default and help, and the
    plugins that failed to load (for ``list --json``)."""
    return {
        "mixers": {
            m.name: {
                "description": m.description,
                "options": _option_data(m.options),
                "fixed_tokens": m.fixed_tokens,
                "causal": m.causal,
                "tags": list(m.tags),
                "signature": m.signature.prediction if m.signature else None,
                "plugin": m.plugin,
                "distribution": provenance(m),
            }
            for m in registry.mixers.values()
        },
        "tracks": {
            t.name: {
                "description": t.description,
                "metric": t.metric.name,
                "direction": t.metric.direction,
                "options": _option_data(t.options),
                "presets": sorted(t.budgets),
                "plugin": t.plugin,
                "distribution": provenance(t),
            }
            for t in registry.tracks.values()
        },
        "unavailable": {
            m.name: {"description": m.description, "reason": m.unavailable, "plugin": m.plugin}
            for m in registry.unavailable.values()
        },
        "failures": [dataclasses.asdict(f) for f in registry.failures],
    }


def plugins_data(registry: Registry) -> list[dict[str, Any]]:
    """Every plugin tried, for ``plugins --json``: where it came from, the mixers and tracks it
    registered, and its failure (None when it loaded cleanly; ``loaded`` is false for a plugin
    that could not even be imported)."""
    reasons: dict[str, list[str]] = {}
    for f in registry.failures:
        reasons.setdefault(f.name, []).append(f.reason)
    rows = [
        {
            "name": p.name,
            "loaded": True,
            "distribution": p.distribution,
            "version": p.version,
            "source": p.origin,
            "module": p.module,
            "source_hash": p.source_hash,
            "mixers": sorted(m.name for m in registry.mixers.values() if m.plugin == p.name),
            "tracks": sorted(t.name for t in registry.tracks.values() if t.plugin == p.name),
            "failure": "; ".join(reasons.get(p.name, [])) or None,
        }
        for p in registry.plugins
    ]
    loaded = {p.name for p in registry.plugins}
    rows += [
        {
            "name": f.name,
            "loaded": False,
            "distribution": f.distribution,
            "version": f.version,
            "source": f.origin,
            "module": "",
            "source_hash": "",
            "mixers": [],
            "tracks": [],
            "failure": f.reason,
        }
        for f in registry.failures
        if f.name not in loaded
    ]
    return rows


VARIANTS = (
    "variants in one run: --mixers 'dense,attention[heads=2],attention[heads=8]' "
    "(options in brackets win over --mixer-option); by tag: --mixers tag:NAME"
)


def print_listing(registry: Registry, console: Console, status: Console) -> None:
    """Rich tables of mixers and tracks with their options and providing distribution on
    ``console``; a note of failed plugins on ``status``."""
    tags = sorted({tag for m in registry.mixers.values() for tag in m.tags})
    caption = VARIANTS + (f" ({', '.join(tags)})" if tags else "")
    mixers = Table(title="[bold]mixers[/]", caption=escape(caption))
    for column in ("name", "description", "options", "fixed T", "causal", "signature", "from"):
        mixers.add_column(column, overflow="fold")
    for m in sorted(registry.mixers.values(), key=lambda m: m.name):
        mixers.add_row(
            m.name,
            m.description,
            _options(m.options),
            "yes" if m.fixed_tokens else "no",
            "yes" if m.causal else "no",
            m.signature.prediction if m.signature else "",
            provenance(m),
        )
    for m in sorted(registry.unavailable.values(), key=lambda m: m.name):
        mixers.add_row(
            m.name, f"[dim]unavailable: {escape(m.unavailable)}[/]", "", "", "", "", provenance(m)
        )
    tracks = Table(title="[bold]tracks[/]")
    for column in ("name", "description", "metric", "options", "presets", "from"):
        tracks.add_column(column, overflow="fold")
    for t in sorted(registry.tracks.values(), key=lambda t: t.name):
        tracks.add_row(
            t.name,
            t.description,
            f"{t.metric.name} ({t.metric.direction})",
            _options(t.options),
            ", ".join(sorted(t.budgets)),
            provenance(t),
        )
    console.print(mixers)
    console.print(tracks)
    if registry.failures:
        status.print(
            f"[yellow]warning:[/] {len(registry.failures)} plugin(s) failed to load: "
            "see `benchsuite plugins`"
        )


def print_plugins(registry: Registry, console: Console) -> None:
    """Loaded plugins with their origin and what they registered, and failures with their
    one-line reason."""
    table = Table(title="[bold]plugins[/]")
    for column in ("plugin", "distribution", "source", "registered", "source hash"):
        table.add_column(column, overflow="fold")
    for row in plugins_data(registry):
        if row["loaded"]:
            registered = [f"mixer {m}" for m in row["mixers"]]
            registered += [f"track {t}" for t in row["tracks"]]
            table.add_row(
                row["name"],
                f"{row['distribution']} {row['version']}".strip(),
                row["source"],
                ", ".join(registered),
                row["source_hash"],
            )
    console.print(table)
    if registry.failures:
        failed = Table(title="[bold red]plugin failures[/]")
        for column in ("plugin", "source", "reason"):
            failed.add_column(column, overflow="fold")
        for f in registry.failures:
            failed.add_row(f.name, f.origin, escape(f.reason))
        console.print(failed)


def print_costs(rows: list[dict[str, Any]], console: Console) -> None:
    """One rich table per track of :func:`costs_table` rows; unmeasured mixers with their reason."""
    for track in dict.fromkeys(row["track"] for row in rows):
        cells = [row for row in rows if row["track"] == track]
        reasons = {row["reason"] for row in cells}
        if len(cells) > 1 and len(reasons) == 1 and None not in reasons:  # the track, not a mixer
            console.print(f"[yellow]{escape(track)}:[/] skipped: {escape(str(reasons.pop()))}")
            continue
        shape = next(
            (
                f"({c['tokens']} tokens, dim {c['dim']}, depth {c['depth']})"
                for c in cells
                if c["tokens"]
            ),
            "",
        )
        shown = [name for name, c in COSTS.items() if c.column and any(name in r for r in cells)]
        table = Table(
            title=f"[bold]costs on {escape(track)}[/] {shape}",
            caption="; ".join(f"{COSTS[name].column}: {COSTS[name].label}" for name in shown)
            + "; vs base: params over the baseline's ([yellow]yellow[/]: param_mismatch, > 10%)",
        )
        for column in ("mixer", *(COSTS[name].column for name in shown), "vs base"):
            table.add_column(column, justify="left" if column == "mixer" else "right")
        for row in cells:
            if row["reason"] is not None:
                continue
            ratio = f"{row['params_vs_baseline']:.2f}x" if "params_vs_baseline" in row else ""
            table.add_row(
                escape(row["mixer"]),
                *(numbers.cost(name, row.get(name)) for name in shown),
                f"[yellow]{ratio}[/]" if row.get("param_mismatch") else ratio,
            )
        if table.row_count:
            console.print(table)
        for row in cells:
            if row["reason"] is not None:
                where = escape(f"{track} / {row['mixer']}")
                console.print(f"[yellow]{where}:[/] {escape(row['reason'])}")

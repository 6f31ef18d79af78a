"""``benchsuite list`` (also ``--costs``) and ``benchsuite plugins``: what is registered, what it
costs, and which plugins failed."""

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


def _count(value: float | None, unit: str = "") -> str:
    if value is None:
        return ""
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{prefix}{unit}"
    return f"{value:.3g}{unit}"


def print_costs(rows: list[dict[str, Any]], console: Console) -> None:
    """One rich table per track of :func:`costs_table` rows; unmeasured mixers with their reason."""
    for track in dict.fromkeys(row["track"] for row in rows):
        cells = [row for row in rows if row["track"] == track]
        shape = next((f"({c['tokens']} tokens, dim {c['dim']})" for c in cells if c["tokens"]), "")
        memory = "peak allocated" if any("peak_memory_bytes" in c for c in cells) else "activations"
        table = Table(
            title=f"[bold]costs on {track}[/] {shape}",
            caption="params: whole model; vs base: over the baseline's ([yellow]yellow[/]: "
            f"param_mismatch, > 10%); forward FLOPs per example (matmuls, convolutions, attention, "
            "FFTs); memory: "
            f"{memory}",
        )
        for column in ("mixer", "params", "vs base", "mixer params", "FLOPs/ex",
                       "ms/step", "memory"):  # fmt: skip
            table.add_column(column, justify="left" if column == "mixer" else "right")
        for row in cells:
            if row["reason"] is not None:
                continue
            ratio = f"{row['params_vs_baseline']:.2f}x" if "params_vs_baseline" in row else ""
            table.add_row(
                row["mixer"], _count(row["params"]),
                f"[yellow]{ratio}[/]" if row.get("param_mismatch") else ratio,
                _count(row["mixer_params"]), _count(row["flops_per_example"]),
                f"{1e3 * row['seconds_per_step']:.2f}",
                _count(row.get("peak_memory_bytes", row["activation_bytes"]), "B"),
            )  # fmt: skip
        if table.row_count:
            console.print(table)
        for row in cells:
            if row["reason"] is not None:
                console.print(f"[yellow]{track} / {row['mixer']}:[/] {row['reason']}")

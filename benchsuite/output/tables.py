"""Rich tables of a report: one per track, the mechanism signatures, across tracks, failures."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

VERDICT_STYLE = {
    "significant_win": "bold green",
    "significant_win_below_margin": "green",
    "significant_loss": "bold red",
    "significant_loss_below_margin": "red",
    "equivalent_within_margin": "cyan",
    "inconclusive": "yellow",
}


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}"


def _pct(value: Any) -> str:
    return "–" if value is None else f"{value:+.1f}%"


def _cfg(config: dict, grid: list[dict]) -> str:
    """The hyperparameters that vary over the grid (all of them if none varies)."""
    varying = [k for k in config if len({repr(point.get(k)) for point in grid}) > 1] or list(config)
    return " ".join(f"{k}={config[k]:g}" for k in varying)


SCALE_NOTE = {
    "log": "effects from paired log-ratios (1 − geometric-mean ratio; never beyond +100%)",
    "difference": "effects from paired differences, relative to the baseline's mean",
}


def _choice(arm: dict, grid: list[dict]) -> str:
    """The config most seeds chose, with how many of them did."""
    counts = arm["selection"]["counts"]
    return f"{_cfg(arm['best_cfg'], grid)} ({max(counts)}/{sum(counts)})"


def track_table(name: str, entry: dict) -> Table:
    """The comparison table of one track (baseline first)."""
    first = next(iter(entry["comparisons"].values()), None)
    alpha = first["comparison"]["mde_alpha"] if first else None
    scale = SCALE_NOTE.get(entry.get("scale", "difference"), "")
    table = Table(
        title=f"[bold]{name}[/] — {entry['dataset']}",
        caption=f"{entry['metric']} ({entry['direction']}); improvement > 0 means better than "
        f"{entry['baseline']}; {scale}; MDE at alpha {_num(alpha, 2)} (Holm's first step); "
        f"config: the one most seeds chose on their validation split (seeds agreeing / seeds); "
        f"budget {entry['budget_signature']}",
    )
    for column in ("mixer", "config", f"{entry['metric']} mean ± sd", "improvement [95% CI]",
                   "p", "Holm p", "MDE", "verdict", "flags"):  # fmt: skip
        table.add_column(column, overflow="fold")
    for mixer, arm in entry["mixers"].items():
        full = arm["full"]
        spread = f"{_num(full['mean'])} ± {_num(full['std'], 2)}"
        cell = entry["comparisons"].get(mixer)
        if cell is None:
            table.add_row(f"[bold]{mixer}[/] (baseline)", _choice(arm, entry["grid"]), spread)
            continue
        c = cell["comparison"]
        lo, hi = c["ci95_rel_pct"] or (None, None)
        style = VERDICT_STYLE.get(c["verdict"], "")
        table.add_row(
            mixer,
            _choice(arm, entry["grid"]),
            spread,
            f"{_pct(c['improvement_rel_pct'])} [{_pct(lo)}, {_pct(hi)}]",
            _num(c["p_value"], 3),
            _num(c["p_holm"], 3),
            _pct(c["mde_rel_pct"]).lstrip("+"),
            f"[{style}]{c['verdict']}[/]",
            ", ".join(c["flags"]),
        )
    return table


def signature_table(report: dict) -> Table | None:
    """Predicted vs observed mechanism signatures, for the mixer and the baseline."""
    rows = [
        (track, mixer, key, value, cell["signature"])
        for track, entry in report["tracks"].items()
        for mixer, cell in entry["comparisons"].items()
        if cell.get("signature")
        for key, value in cell["signature"]["predicted"].items()
    ]
    if not rows:
        return None
    table = Table(title="[bold]mechanism signatures[/] (trained model, first evaluation seed)")
    for column in ("track", "mixer", "probe", "predicted", "observed", "baseline", "confirmed"):
        table.add_column(column)
    for track, mixer, key, value, sig in rows:
        ok = "[green]yes[/]" if sig["confirmed"] else "[red]no[/]"
        table.add_row(track, mixer, key, _num(value), _num(sig["observed"][key], 6),
                      _num(sig["baseline_observed"][key], 6), ok)  # fmt: skip
    return table


SUITE_STYLE = {"better": "bold green", "worse": "bold red", "mixed": "magenta",
               "inconclusive": "yellow"}  # fmt: skip


def across_table(report: dict) -> Table | None:
    """Per mixer across tracks: the suite effect, the per-track effects beside it, the combined
    test, the verdict and whether it survives leaving any one track out."""
    across = report.get("across_tracks")
    if not across or not across["mixers"]:
        return None
    tracks = across["tracks"]
    table = Table(
        title="[bold]across tracks[/] (score: fraction of the gap from the trivial predictor "
        "to the ideal value closed)",
        caption="effect: mean paired score difference with the baseline, per track and (suite) "
        "the mean over tracks, each track weighing the same, with a stratified bootstrap 95% "
        "CI; p: the per-track studentised effects combined (Stouffer) under sign flips, Holm "
        "across mixers; robust: the verdict holds with any one track left out (mixed: it does "
        "not); * ran on fewer tracks; ranks: docs/statistics.md",
    )
    for column in ("mixer", "suite effect [95% CI]", *tracks, "p (Holm)", "verdict", "robust"):
        table.add_column(column)
    for mixer, row in across["mixers"].items():
        lo, hi = row.get("suite_effect_ci95") or (None, None)
        suite = row.get("suite_test") or {}
        effects = row.get("per_track_effect") or {}
        verdict = row.get("verdict", "")
        table.add_row(
            mixer + (" *" if row.get("fewer_tracks") else ""),
            f"{_num(row.get('suite_effect'), 2)} [{_num(lo, 2)}, {_num(hi, 2)}]",
            *[_num(effects.get(t), 2) if t in effects else "–" for t in tracks],
            f"{_num(suite.get('p_value'), 2)} ({_num(suite.get('p_holm'), 2)})",
            f"[{SUITE_STYLE.get(verdict, '')}]{verdict}[/]",
            "yes" if row.get("robust_without_any_track") else "no",
        )
    return table


def problems_table(report: dict) -> Table | None:
    """Skipped cells and failed jobs with their reason; identical failures share one row."""
    rows = [(s["track"], s["mixer"], "skipped", "", s["reason"], "") for s in report["skipped"]]
    groups: dict[tuple, list[dict]] = {}
    for f in report["failures"]:
        groups.setdefault((f["track"], f["mixer"], f["reason"]), []).append(f)
    for (track, mixer, reason), failures in groups.items():
        seeds = ", ".join(sorted({str(f["seed"]) for f in failures}))
        log = f"logs/{Path(failures[0]['traceback']).name}" if failures[0]["traceback"] else ""
        rows.append((track, mixer, "failed", f"{len(failures)} (seed {seeds})", reason, log))
    if not rows:
        return None
    table = Table(title="[bold red]skipped and failed[/]", caption="logs/ is in the output folder")
    for column in ("track", "mixer", "what", "jobs"):
        table.add_column(column)
    table.add_column("reason", overflow="fold", ratio=3)
    table.add_column("traceback (first)", overflow="fold", ratio=1)
    for row in rows:
        table.add_row(*row)
    return table


def print_design(design: dict, console: Console) -> None:
    """The design check, before training: seeds, family size and the planned MDE per track."""
    m = design["comparisons"]
    why = (
        "as given" if design["seeds_given"]
        else f"the fewest with which a comparison with one discordant seed passes Holm over {m} "
        "comparisons, and at least 12"
    )  # fmt: skip
    console.print(
        f"design: {design['seeds']} paired seeds ({why}), {m} comparisons (Holm needs at least "
        f"{design['min_seeds_for_significance']} seeds; verdicts at alpha {design['alpha']:.2g}, "
        "its first step); each seed tunes on its own validation split"
    )
    if design["warning"]:
        console.print(f"[yellow]warning:[/] {design['warning']}")
    for track, plan in design["tracks"].items():
        console.print(
            f"  {track}: planned MDE {plan['planned_mde_rel_pct']:.1f}% of the baseline at that "
            f"alpha (sd of paired differences {100 * plan['planning_sd_rel']:.1f}%, "
            f"{plan['source']})"
        )


def print_report(report: dict, console: Console) -> None:
    """Print every table of a report."""
    design = report["design"]
    if design.get("warning"):
        console.print(f"[yellow]design:[/] {design['warning']}")
    for warning in report.get("warnings", []):
        console.print(f"[yellow]warning:[/] {warning}")
    for name, entry in report["tracks"].items():
        console.print(track_table(name, entry))
    for table in (signature_table(report), across_table(report), problems_table(report)):
        if table is not None:
            console.print(table)


def compare_table(result: dict) -> Table:
    """Run B against run A, per (track, mixer): improvement > 0 means B is better."""
    table = Table(
        title="[bold]compare[/]: run B against run A, paired by seed",
        caption="improvement > 0 means B is better; Holm over every row",
    )
    for column in ("track", "mixer", "A mean", "B mean", "improvement [95% CI]", "p", "Holm p",
                   "MDE", "verdict"):  # fmt: skip
        table.add_column(column)
    for row in result["rows"]:
        c = row["comparison"]
        lo, hi = c["ci95_rel_pct"] or (None, None)
        style = VERDICT_STYLE.get(c["verdict"], "")
        table.add_row(
            row["track"], row["mixer"], _num(c["baseline_mean"]), _num(c["mixer_mean"]),
            f"{_pct(c['improvement_rel_pct'])} [{_pct(lo)}, {_pct(hi)}]", _num(c["p_value"], 3),
            _num(c["p_holm"], 3), _pct(c["mde_rel_pct"]).lstrip("+"), f"[{style}]{c['verdict']}[/]",
        )  # fmt: skip
    return table

"""``benchsuite list --costs``: what each mixer costs on each track, measured on the real model.

The model is the one a run builds (:func:`benchsuite.train.job.build_model`, the track's budget),
measured with the counters of :mod:`benchsuite.train.measures` (see there what each figure
counts) on one batch of the track's training data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from benchsuite import serial
from benchsuite.budget import Budget, variant_keys
from benchsuite.errors import one_line
from benchsuite.measures import Costs
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.matching import Sizing
from benchsuite.registry import track_variants, variants
from benchsuite.seeds import DEFAULT_SALT, Streams, evaluation_seeds
from benchsuite.settings import RunSettings
from benchsuite.specs import Mixer, Track, TrackData, resolve_options
from benchsuite.vocabulary import Match

if TYPE_CHECKING:
    from benchsuite.registry import Registry


def measure_costs(
    track: Track,
    mixer: Mixer,
    data: TrackData,
    budget: Budget,
    *,
    preset: str = RunSettings.preset,
    track_options: Mapping[str, Any] | None = None,
    mixer_options: Mapping[str, Any] | None = None,
    device: str = "cpu",
    threads: int = 1,
    warmup: int = 2,
    steps: int = 5,
    salt: str = DEFAULT_SALT,
    size: Mapping[str, Any] | None = None,
) -> Costs:
    """Parameters, FLOPs, step time and memory of ``mixer`` on ``track`` (keys: module docstring).

    ``data`` must have been loaded with ``track_options`` (defaults when None); one batch of
    ``budget.batch_size`` training examples is used throughout; the model is the one a run of
    ``preset`` builds, with ``budget``'s steps, batch size, width and depth, and ``size`` (what
    the equal-size rule sets: a mixer option and/or ``mlp_hidden``).
    """
    import torch

    from benchsuite.train.job import build_model
    from benchsuite.train.measures import (
        activation_bytes,
        forward_flops,
        parameter_counts,
        step_seconds,
    )

    settings = RunSettings(
        preset=preset,
        threads=threads,
        device=device,
        salt=salt,
        seeds=1,
        track_options={track.name: resolve_options(track.options, track_options or {}, track.name)},
        mixer_options={mixer.name: resolve_options(mixer.options, mixer_options or {}, mixer.name)},
        budget={key: getattr(budget, key) for key in variant_keys()},
    )
    [job] = cell_jobs(settings, track, mixer, grid_of(track, settings), "costs", size)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    target = torch.device(device)
    cuda = target.type == "cuda"
    try:
        before = torch.cuda.memory_allocated(target) if cuda else 0
        if cuda:
            torch.cuda.reset_peak_memory_stats(target)
        model = build_model(track, mixer, data, job).to(target)
        size = min(budget.batch_size, len(data.x_train))
        x = torch.from_numpy(np.ascontiguousarray(data.x_train[:size])).to(target)
        y = torch.from_numpy(np.ascontiguousarray(data.y_train[:size])).to(target)
        costs = parameter_counts(model, model.mixers())
        costs.flops_per_example = forward_flops(model, x) / size
        costs.activation_bytes = activation_bytes(model, x)
        lr = float(job.grid[0].get("lr", 1e-3))
        costs.seconds_per_step = step_seconds(model, track, x, y, lr, warmup, steps)
        if cuda:
            costs.peak_memory_bytes = float(torch.cuda.max_memory_allocated(target) - before)
    finally:
        torch.set_num_threads(previous_threads)
    return costs


def costs_table(
    registry: Registry,
    preset: str = RunSettings.preset,
    tracks: Sequence[str] | None = None,
    mixers: Sequence[str] | None = None,
    *,
    baseline: str | None = RunSettings.baseline,
    track_options: Mapping[str, Mapping[str, Any]] | None = None,
    mixer_options: Mapping[str, Mapping[str, Any]] | None = None,
    data_dir: str | None = None,
    device: str = "cpu",
    match: str = RunSettings.match,
    say: Callable[[str], None] = lambda text: None,
) -> list[dict[str, Any]]:
    """One row per track x mixer (default: every mixer, on every track that has ``preset``)
    with its costs, or the reason it has none, each model sized as a run of these settings
    sizes it (``match="params"``: the equal-size rule; ``sized_by`` says how, as the run's
    ``size.by``). ``say`` hears each track as its measuring starts.

    Each row has ``track``, ``mixer``, ``tokens``, ``dim``, ``depth``, ``reason`` (None when
    measured), the :func:`measure_costs` figures, and, when ``baseline`` is measured on the track,
    ``params_vs_baseline`` (model parameters over the baseline model's) and ``param_mismatch``
    (the ratio is off by more than the protocol's 10%). A track without ``preset``, a track whose
    data cannot be loaded and a mixer that cannot run or fails give a row with the reason instead
    of raising.
    """
    if tracks:  # names or variants (``sequence[dim=32]``), as a run takes them
        asked = track_variants.select(tracks, registry.tracks)
    else:  # the tracks a run of this preset has
        asked = [
            registry.tracks[n]
            for n in sorted(registry.tracks)
            if preset in registry.tracks[n].budgets
        ]
    chosen = variants.select(
        mixers or sorted(registry.mixers), registry.mixers, registry.unavailable
    )
    if baseline is not None:
        base = variants.parse(baseline, registry.mixers, registry.unavailable)
        chosen = [base, *(v for v in chosen if v.name != base.name)]
        baseline = base.name
    mixer_names = [v.name for v in chosen]
    resolved = variants.variant_options(chosen, registry.mixers, mixer_options or {})
    rows: list[dict[str, Any]] = []
    for number, track in enumerate(asked, 1):
        track_name = track.name
        say(f"measuring {len(mixer_names)} mixers on {track_name} ({number}/{len(asked)})…")
        if preset not in track.budgets:  # e.g. a full-only track in a quick listing
            presets = ", ".join(sorted(track.budgets))
            reason = f"no {preset!r} preset (has {presets}; --preset picks one)"
            rows += [
                {"track": track_name, "mixer": name, "dim": None, "depth": None, "tokens": None}
                | {"reason": reason}
                for name in mixer_names
            ]
            continue
        base = track_variants.base_name(track)  # options are given to the registered track
        options = resolve_options(track.options, (track_options or {}).get(base, {}), base)
        data, problem = _load(track, options, preset, data_dir)
        sizes: dict[str, Sizing | None] = {}
        if match == Match.PARAMS and baseline is not None and data is not None:
            sizes = _sizes(registry, track, mixer_names, preset, options, mixer_options, data_dir)
        cells = [
            _cell(
                track,
                variants.lookup(registry.mixers, name),
                data,
                problem,
                preset,
                options,
                resolved[name],
                device,
                sizes.get(name),
            )
            for name in mixer_names
        ]
        _compare_params(cells, baseline)
        rows += cells
    return rows


def _load(
    track: Track, options: dict, preset: str, data_dir: str | None
) -> tuple[TrackData | None, str | None]:
    """The track's data for the first sweep seed (as a run probes it), or why there is none."""
    try:
        track.check_options(options)
        streams = Streams(DEFAULT_SALT, track.name, evaluation_seeds(1)[0])
        return track.load(streams, options, preset, data_dir), None
    except Exception as error:  # a track without its data still lists the others
        return None, f"track data: {one_line(error)}"


def _sizes(
    registry: Registry,
    track: Track,
    mixers: list[str],
    preset: str,
    options: dict,
    mixer_options: Mapping[str, Mapping[str, Any]] | None,
    data_dir: str | None,
) -> dict[str, Sizing | None]:
    """Each cell's size as a run plans it (the run's own planner, equal-size rule, the first
    mixer the baseline); none where the plan cannot be made (its cells then keep their declared
    size, and their own rows say what fails)."""
    from benchsuite.plan.plan import plan_run
    from benchsuite.plan.resolve import resolve
    from benchsuite.train.size import parameter_count

    own = getattr(track, "variant_keys", {})  # a variant's brackets set these options
    settings = RunSettings(
        tracks=(track.name,),
        mixers=tuple(mixers),
        baseline=mixers[0],
        preset=preset,
        seeds=2,
        track_options={
            track_variants.base_name(track): {k: v for k, v in options.items() if k not in own}
        },
        mixer_options=dict(mixer_options or {}),
        data_dir=data_dir,
    )
    try:
        resolved = resolve(settings, registry)
        plan = plan_run(resolved, registry.tracks, registry.mixers, parameter_count)
    except Exception:  # the rows report what is wrong, cell by cell
        return {}
    return {name: cell.size for name, cell in plan.cells.get(track.name, {}).items()}


def _cell(
    track: Track,
    mixer: Mixer,
    data: TrackData | None,
    problem: str | None,
    preset: str,
    options: dict,
    mixer_options: Mapping[str, Any] | None,
    device: str,
    size: Sizing | None,
) -> dict[str, Any]:
    """One row of the costs table: the measured costs of the model as the run sizes it
    (``size``: the plan's size record of the cell), or the reason there are none."""
    budget = track.budget(preset)
    row: dict[str, Any] = {
        "track": track.name,
        "mixer": mixer.name,
        "dim": budget.dim,
        "depth": budget.depth,
        "tokens": data.tokens if data else None,
        "reason": problem,
    }
    if data is None:
        return row
    resolved = resolve_options(mixer.options, mixer_options or {}, mixer.name)
    row["reason"] = mixer.reason_unsupported(data.tokens, budget.dim, resolved)
    if row["reason"] is None:
        try:
            measured = measure_costs(
                track,
                mixer,
                data,
                budget,
                preset=preset,
                track_options=options,
                mixer_options=mixer_options,
                device=device,
                size=size.set if size else None,
            )
            row.update(measured.items())
            row["sized_by"] = size.by if size else "as declared"
        except Exception as error:  # one broken mixer never hides the others
            row["reason"] = f"failed: {one_line(error)}"
    return row


def _compare_params(cells: list[dict[str, Any]], baseline: str | None) -> None:
    from benchsuite.results.flags import param_mismatch

    params = {c["mixer"]: serial.build(Costs, c).params for c in cells}
    reference = params.get(baseline) if baseline is not None else None
    if not reference:
        return
    for cell in cells:
        if (own := params[cell["mixer"]]) is not None:
            cell["params_vs_baseline"] = own / reference
            cell["param_mismatch"] = param_mismatch(cell["params_vs_baseline"])

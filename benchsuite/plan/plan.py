"""The plan of a run: per track the facts probed from its data, per (track, mixer) cell its jobs
(one per evaluation seed, each tuning over the track's grid on that seed's validation split; the
config a seed chose is in its job's record, not here); the cells skipped with their reason.

Plain dataclasses, JSON-serialisable (:meth:`Plan.to_dict` / :meth:`Plan.from_dict`), no torch.
The store saves the plan of every run (settings, environment, track and mixer facts, cells with
their job keys, skips, the looks, and the code each track and mixer ran); ``report`` reads it and
the records back and never re-decides anything.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from benchsuite import serial
from benchsuite.budget import Budget
from benchsuite.errors import PluginError, UsageError, one_line
from benchsuite.plan import jobs as jobs_
from benchsuite.plan import matching
from benchsuite.plan.environment import RunEnvironment, describe
from benchsuite.plan.extension import looks, track_looks
from benchsuite.plan.preflight import REFUSED, Check, Checker, check_key
from benchsuite.protocol.futility import FutilityLook, futility_look
from benchsuite.records import Job
from benchsuite.registry.variants import lookup
from benchsuite.seeds import Streams, evaluation_seeds
from benchsuite.settings import RunSettings
from benchsuite.specs import Mixer, Track, TrackData, provenance
from benchsuite.vocabulary import Match, Scale, SkipKind

Counter = Callable[[Track, Mixer, TrackData, Job], int]
"""Parameters of the model a job trains on some data (``benchsuite.train.size``)."""


@dataclass
class TrackFacts:
    """What a track is in this run, probed once from its data for the first sweep seed."""

    metric: str
    higher_is_better: bool
    direction: str
    scale: Scale
    ideal: float | None  # the metric's best possible value
    dataset: str
    verified: bool
    tokens: int  # of the first rung of the ladder (the only one, for most tracks)
    grid: list[dict[str, float]]
    budget: Budget  # the preset's, after overrides; its grid is ``grid``, not repeated here
    budget_signature: str
    data_key: str
    plugin: str


@dataclass
class DeclaredSignature:
    """A mixer's mechanism signature as the plan keeps it: what it predicts, the probe values
    predicted, the tolerance (the probes themselves are code: the plugin's)."""

    prediction: str
    predicted: dict[str, float]
    tolerance: float


@dataclass
class MixerFacts:
    """What the report says about a mixer (read from its declaration)."""

    description: str
    plugin: str
    causal: bool
    signature: DeclaredSignature | None
    tags: tuple[str, ...] = ()  # as declared: ``control`` leaves a mixer out of resolving power


@dataclass
class Cell:
    """One (track, mixer): its job keys (one per seed) and its size under the equal-size rule
    (see :func:`benchsuite.plan.matching.match`; None under ``match = "none"``). Each seed's
    chosen config is in its job's record (``RunRecord.result.chosen``), nowhere else."""

    track: str
    mixer: str
    jobs: list[str]
    size: matching.Sizing | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Cell:
        """A stored cell (a plan from before sizes were typed kept ``{}`` for none)."""
        size = serial.build(matching.Sizing, raw["size"]) if raw.get("size") else None
        return cls(raw["track"], raw["mixer"], list(raw["jobs"]), size)


@dataclass
class Skip:
    """A track or cell (``mixer`` ``*``: the whole track) that does not run, and why."""

    track: str
    mixer: str
    reason: str
    kind: SkipKind

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Skip:
        """A stored skip (a plan from before the pre-flight had its own kind: read as one)."""
        kind, reason = SkipKind(raw["kind"]), raw["reason"]
        if kind == SkipKind.ERROR and reason.startswith(PREFLIGHT_SAID):
            kind, reason = SkipKind.PREFLIGHT, reason.removeprefix(PREFLIGHT_SAID)
        return cls(raw["track"], raw["mixer"], reason, kind)

    @property
    def said(self) -> str:
        """The reason as a reader sees it (a pre-flight's says so)."""
        return PREFLIGHT_SAID + self.reason if self.kind == SkipKind.PREFLIGHT else self.reason


PREFLIGHT_SAID = "pre-flight: "


@dataclass
class Plan:
    """A run's plan; ``jobs`` and ``templates`` (the Job objects) live in memory only."""

    settings: RunSettings  # the resolved run settings
    environment: RunEnvironment
    mixers: dict[str, MixerFacts]
    tracks: dict[str, TrackFacts]
    cells: dict[str, dict[str, Cell]]  # track -> mixer -> cell
    skipped: list[Skip]
    code: dict[str, dict[str, str]] = field(default_factory=dict)  # "track X" -> module digests
    recipe: str = ""  # digest of what the plan was made from (:func:`recipe`)
    # the seed counts at which earlier runs in the folder showed these suite verdicts
    # (:func:`benchsuite.plan.extension.looks`)
    looks: list[int] = field(default_factory=list)
    # the seed counts at which earlier runs in the folder could show per-track verdicts, and
    # the alpha this run's per-track verdicts spend (:func:`benchsuite.plan.extension.track_looks`)
    track_looks: list[int] = field(default_factory=list)
    track_alpha: float = 0.05
    # the per-track design's pre-registered futility look (:mod:`benchsuite.protocol.futility`)
    futility: FutilityLook | None = None
    # the design's planned MDE per track, % at the verdicts' alpha (None: nothing detectable),
    # from the planning sd (the track's default, or the last run's in the folder)
    planned_mde: dict[str, float | None] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict, repr=False)

    def cell_list(self) -> list[Cell]:
        """Every planned cell, track by track."""
        return [cell for cells in self.cells.values() for cell in cells.values()]

    def keys(self) -> list[str]:
        """The keys of every planned job."""
        return [key for cell in self.cell_list() for key in cell.jobs]

    def look_keys(self) -> list[str]:
        """The keys of the jobs the futility look waits for: every cell's first seeds (all
        jobs without a look)."""
        upto = self.futility.seeds if self.futility else None
        return [key for cell in self.cell_list() for key in cell.jobs[:upto]]

    def needed_keys(self, stopped: Mapping[str, Mapping[str, int]]) -> list[str]:
        """The keys of the jobs the run trains once its futility look has ``stopped``
        comparisons (track -> mixer -> seeds at the look): a stopped cell's seeds up to the
        look only, and so the baseline's on a track where every other cell stopped."""
        if self.futility is None:
            return self.keys()
        keys = []
        for track, cells in self.cells.items():
            halted = set(stopped.get(track, {}))
            others = set(cells) - {self.settings.baseline}
            for mixer, cell in cells.items():
                done = mixer in halted or (
                    mixer == self.settings.baseline and bool(others) and others <= halted
                )
                keys += cell.jobs[: self.futility.seeds] if done else cell.jobs
        return keys

    def family(self) -> int:
        """The Holm family: every planned (track, mixer) cell besides the baseline's, on tracks
        where the baseline has a cell (finished or not)."""
        baseline = self.settings.baseline
        return sum(len(cells) - 1 for cells in self.cells.values() if baseline in cells)

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON-able data (without the in-memory Job objects)."""
        return serial.to_plain(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Plan:
        """A plan read back from the store (no Job objects), its tracks and mixers in the order
        the run listed them (the store keeps its mappings sorted), so that ``report`` prints the
        tables in the run's order."""
        plan = serial.build(cls, {"environment": {}, **raw})
        tracks, mixers = plan.settings.tracks or (), plan.settings.mixers or ()
        plan.mixers = _listed(plan.mixers, mixers)
        plan.tracks = _listed(plan.tracks, tracks)
        plan.cells = {t: _listed(cells, mixers) for t, cells in _listed(plan.cells, tracks).items()}
        return plan


T = TypeVar("T")


def _listed(mapping: dict[str, T], order: Sequence[str]) -> dict[str, T]:
    """``mapping`` in the order of ``order`` (names it does not list last, as they were)."""
    rank = {name: i for i, name in enumerate(order)}
    return {name: mapping[name] for name in sorted(mapping, key=lambda n: rank.get(n, len(rank)))}


# Settings that decide how jobs run, not which: they leave a plan's recipe unchanged.
EXECUTION_ONLY = (
    "executor",
    "address",
    "jobs",
    "timeout",
    "preflight_timeout",
    "save_every",
    "allow_failures",
    "strict",
)


def recipe(settings: RunSettings, tracks: dict[str, Track], mixers: dict[str, Mixer]) -> str:
    """A digest of everything a plan of resolved ``settings`` is made from, read without torch
    and without loading data: the settings that shape jobs, package versions, the code of the
    training path and of every track and mixer named, and each track's data key. Two runs with
    the same recipe plan the same jobs, so a run whose recipe matches the last plan in its
    folder may reuse that plan (when every job is stored) instead of probing data and building
    models to size them."""
    shaping = {k: v for k, v in settings.to_dict().items() if k not in EXECUTION_ONLY}
    parts: dict[str, Any] = {"settings": shaping, "training": jobs_.training_code()}
    parts["versions"] = {
        name: jobs_.package_version(name) for name in ("benchsuite", "torch", "numpy")
    }
    for name in settings.tracks or ():
        track = tracks[name]
        options = dict(settings.track_options.get(name, {}))
        try:
            data = track.data_key(options, settings.preset, settings.data_dir)
        except Exception as error:  # the plan skips this track with its reason
            data = f"error: {one_line(error)}"
        parts[f"track {name}"] = [jobs_.plugin_code(track), data]
    for name in settings.mixers or ():
        parts[f"mixer {name}"] = jobs_.plugin_code(lookup(mixers, name))
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def probe_track(track: Track, settings: RunSettings) -> tuple[TrackFacts, list[TrackData]]:
    """Load the track's data for the first seed (every rung of its ladder): the facts (token
    count, dataset line, data key, ...) and each rung's data."""
    options = dict(settings.track_options[track.name])
    streams = Streams(settings.salt, track.name, evaluation_seeds(1)[0])
    rungs = [
        track.load(streams, rung, settings.preset, settings.data_dir)
        for rung in track.ladder(options, settings.preset)
    ]
    data = rungs[0]
    budget = jobs_.effective_budget(track, settings)
    metric = data.metric or track.metric
    facts = TrackFacts(
        metric=metric.name,
        higher_is_better=metric.higher_is_better,
        direction=metric.direction,
        scale=metric.scale,
        ideal=metric.ideal,
        dataset=data.description,
        verified=data.verified,
        tokens=data.tokens,
        grid=jobs_.grid_of(track, settings),
        budget=dataclasses.replace(budget, grid=()),
        budget_signature=jobs_.budget_signature(track, settings),
        data_key=track.data_key(options, settings.preset, settings.data_dir)
        + " ".join(rung.identity for rung in rungs),
        plugin=provenance(track),
    )
    return facts, rungs


def mixer_facts(mixer: Mixer) -> MixerFacts:
    """A mixer's declaration as the report shows it."""
    signature = mixer.signature
    return MixerFacts(
        description=mixer.description,
        plugin=provenance(mixer),
        causal=mixer.causal,
        signature=None
        if signature is None
        else DeclaredSignature(
            signature.prediction, dict(signature.predicted), signature.tolerance
        ),
        tags=tuple(mixer.tags),
    )


def plan_run(
    settings: RunSettings,
    tracks: dict[str, Track],
    mixers: dict[str, Mixer],
    count: Counter | None = None,
    checker: Checker | None = None,
    reference_step: Callable[[], float] | None = None,
    earlier: Sequence[Mapping[str, Any]] = (),
    planned_mde: Mapping[str, float | None] | None = None,
) -> Plan:
    """The plan of a run of resolved ``settings`` (see :func:`benchsuite.plan.resolve.resolve`):
    each track probed (a broken track is skipped with its reason), each supported cell's jobs,
    sized by the equal-size rule when ``settings.match`` asks for it and ``count`` is given; a
    mixer variant runs its base mixer under its own name. ``checker``, when given, runs every
    cell's pre-flight (:class:`~benchsuite.plan.preflight.Check`) before any job: a reason skips
    the cell as an error. ``reference_step()``, when given, times the reference step the run's
    cost is counted in (:mod:`benchsuite.train.reference`) for its environment. The plan comes
    out whole: ``earlier``, the plans stored in the run's folder, give its looks at the suite
    and at the per-track verdicts (:mod:`benchsuite.plan.extension`), and with them its
    futility look; ``planned_mde`` is the design's per track."""
    plan = Plan(
        settings=settings,
        environment=describe(
            settings.device, settings.threads, reference_step() if reference_step else None
        ),
        mixers={name: mixer_facts(lookup(mixers, name)) for name in settings.mixers or ()},
        tracks={},
        cells={},
        skipped=[],
    )
    plan.code["training"] = jobs_.training_code()
    plan.recipe = recipe(settings, tracks, mixers)
    probed: dict[str, list[TrackData]] = {}
    for name in settings.tracks or ():
        try:
            plan.tracks[name], probed[name] = probe_track(tracks[name], settings)
        except Exception as error:  # one broken track never takes the others down
            plan.skipped.append(Skip(name, "*", one_line(error), SkipKind.ERROR))
            continue
        plan.code[f"track {name}"] = jobs_.plugin_code(tracks[name])
    ruled_out = _ruled_out(settings, mixers, plan.tracks, probed)
    checks = [
        Check(
            track,
            mixer,
            tuple((r.tokens, plan.tracks[track].budget.dim) for r in rungs),
            settings.mixer_options.get(mixer, {}),
            settings.preflight_timeout,
        )
        for track, rungs in probed.items()
        for mixer in settings.mixers or ()
        if (track, mixer) not in ruled_out
    ]
    failed = checker(checks) if checker is not None else {}
    _stop_on_refusal(checks, failed, plan.tracks)
    for track, rungs in probed.items():
        _plan_track(plan, tracks[track], mixers, rungs, count, ruled_out, failed)
    plan.looks = looks(earlier, settings)
    plan.track_looks, plan.track_alpha = track_looks(earlier, settings, plan.family())
    plan.planned_mde = dict(planned_mde or {})
    plan.futility = futility_look(settings, plan.family(), plan.track_alpha)
    return plan


def _ruled_out(
    settings: RunSettings,
    mixers: dict[str, Mixer],
    facts: dict[str, TrackFacts],
    probed: dict[str, list[TrackData]],
) -> dict[tuple[str, str], str]:
    """Why each (track, mixer) cell the mixer does not support at some rung's shape is out."""
    ruled_out = {}
    for track, rungs in probed.items():
        dim = facts[track].budget.dim
        for name in settings.mixers or ():
            options = settings.mixer_options.get(name, {})
            mixer = lookup(mixers, name)
            reasons = (mixer.reason_unsupported(r.tokens, dim, options) for r in rungs)
            if reason := next((r for r in reasons if r), None):
                ruled_out[track, name] = reason
    return ruled_out


def _stop_on_refusal(
    checks: list[Check], failed: dict[str, str], facts: dict[str, TrackFacts]
) -> None:
    """Bad input stops the run before anything trains: a cell whose mixer refused, at the
    pre-flight, the track's width or its own options (its build raised a UsageError, e.g. heads
    that do not divide the width) is a one-line error naming the mixer, the track and why."""
    for check in checks:
        reason = failed.get(check.key, "")
        if REFUSED in reason:
            budget = facts[check.track].budget
            raise UsageError(
                f"mixer {check.mixer!r} cannot take track {check.track!r} (width {budget.dim}, "
                f"depth {budget.depth}): {reason.partition(REFUSED)[2]}"
            )


def _plan_track(
    plan: Plan,
    track: Track,
    mixers: dict[str, Mixer],
    rungs: list[TrackData],
    count: Counter | None,
    ruled_out: dict[tuple[str, str], str],
    failed: dict[str, str],
) -> None:
    """A probed track's cells in ``plan``: its jobs, sized when ``count`` is given, or the
    cell's skip (ruled out by the data, or failed by the pre-flight)."""
    settings, name, facts = plan.settings, track.name, plan.tracks[track.name]
    sizing = count if settings.match == Match.PARAMS else None
    target = None
    for mixer_name in settings.mixers or ():
        mixer = lookup(mixers, mixer_name)
        if reason := ruled_out.get((name, mixer_name)):
            plan.skipped.append(Skip(name, mixer_name, reason, SkipKind.UNSUPPORTED))
            continue
        if reason := failed.get(check_key(name, mixer_name)):
            plan.skipped.append(Skip(name, mixer_name, reason, SkipKind.PREFLIGHT))
            continue
        plan.code[f"mixer {mixer_name}"] = jobs_.plugin_code(mixer)
        jobs = jobs_.cell_jobs(settings, track, mixer, facts.grid, facts.data_key)
        size: matching.Sizing | None = None
        if sizing is not None:
            counts = _counter(sizing, track, mixer, rungs[0], jobs[0])
            if mixer_name == settings.baseline:
                size, target = _baseline_size(counts)
            elif target is not None:
                width = jobs[0].budget.mlp_ratio * facts.budget.dim
                try:
                    size = matching.match(
                        mixer, mixer_name, jobs[0].mixer_options, target, width, counts
                    )
                except PluginError as error:  # a wrong size_option: that mixer's error
                    plan.skipped.append(Skip(name, mixer_name, one_line(error), SkipKind.ERROR))
                    continue
            if size is not None and size.set:
                jobs = jobs_.cell_jobs(settings, track, mixer, facts.grid, facts.data_key, size.set)
        plan.jobs.update((job.key, job) for job in jobs)
        cell = Cell(name, mixer_name, [job.key for job in jobs], size=size)
        plan.cells.setdefault(name, {})[mixer_name] = cell


def _counter(
    count: Counter, track: Track, mixer: Mixer, data: TrackData, job: Job
) -> matching.Count:
    """Parameters of the cell's model on its first rung under a size (a mixer option and/or
    ``mlp_hidden``)."""

    def params(size: Mapping[str, int]) -> int:
        size = dict(size)
        sized = dataclasses.replace(
            job,
            mlp_hidden=size.pop("mlp_hidden", job.mlp_hidden),
            mixer_options={**job.mixer_options, **size},
        )
        return count(track, mixer, data, sized)

    return params


def _baseline_size(counts: matching.Count) -> tuple[matching.Sizing, int | None]:
    """The baseline cell's size record and the count its track matches to (None: not counted,
    then no cell of the track is matched)."""
    try:
        params = counts({})
    except Exception as error:  # the baseline's jobs will say what is wrong with it
        return matching.uncounted(None, error), None
    return matching.baseline_size(params), params

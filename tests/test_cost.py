"""What a job costs before it runs: the units of the real default tracks' jobs rank them as their
measured times do, and the runner hands out the costliest first, every mixer's first seed early."""

from __future__ import annotations

from benchsuite.plan.cost import JobCost, job_units, longest_first
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.settings import RunSettings

# measured job-seconds of dense on the quick tracks (issue 31, 2-core machine, 2026-12-03, the
# presets stopping by the rule: sequence 5.0, dynamics 4.7, vision 3.2, recall 2.0, tabular 1.0
# s a job): the units must put them in this order
MEASURED_ORDER = ["sequence", "dynamics", "vision", "recall", "tabular"]


def test_units_rank_the_quick_tracks_as_their_jobs_measured(registry):
    settings = resolve(
        RunSettings(tracks=tuple(MEASURED_ORDER), mixers=("dense", "identity"), seeds=2), registry
    )
    tokens = {"vision": 64, "recall": 128, "dynamics": 16, "sequence": 16, "tabular": 9}
    units = {}
    for name in MEASURED_ORDER:
        track = registry.tracks[name]
        job = cell_jobs(settings, track, registry.mixers["dense"], grid_of(track, settings), "")[0]
        units[name] = job_units(job, tokens[name])
    assert sorted(units, key=units.get, reverse=True) == MEASURED_ORDER


def test_the_costliest_jobs_go_first_and_every_mixer_starts_early(registry):
    settings = resolve(
        RunSettings(tracks=("tabular", "recall"), mixers=("dense", "identity"), seeds=3), registry
    )
    jobs = [
        job
        for name in ("tabular", "recall")
        for mixer in ("dense", "identity")
        for job in cell_jobs(
            settings,
            registry.tracks[name],
            registry.mixers[mixer],
            grid_of(registry.tracks[name], settings),
            "",
        )
    ]
    tokens = {"tabular": 9, "recall": 128}
    costs = {
        job.key: JobCost(job.track, job.mixer, job_units(job, tokens[job.track])) for job in jobs
    }
    order = [(job.track, job.mixer, job.seed) for job in longest_first(jobs, costs)]
    seeds = sorted({job.seed for job in jobs})
    assert [track for track, _, _ in order] == ["recall"] * 6 + ["tabular"] * 6
    assert [(m, s) for _, m, s in order[:2]] == [("dense", seeds[0]), ("identity", seeds[0])]

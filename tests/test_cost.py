"""What a job costs before it runs: the units of the real default tracks' jobs rank them as their
measured times do, and the runner hands out a scout of every track and of every mixer, then the
costliest first, every mixer's first seed early."""

from __future__ import annotations

from benchsuite.plan.cost import JobCost, job_units, run_order
from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.settings import RunSettings

# measured job-seconds of dense on the quick tracks (2-core machine, the presets stopping by the
# rule; the default run of 2026-12-06, dynamics and vision under the plateau schedule): dynamics
# 7.1, sequence 4.3, vision 3.7, recall 2.7, tabular 1.7 s a job: the units must put them in
# this order
MEASURED_ORDER = ["dynamics", "sequence", "vision", "recall", "tabular"]


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


def test_scouts_of_every_track_and_mixer_then_the_costliest_first(registry):
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
    by_key = {job.key: job for job in jobs}
    keys = run_order({job.key: job.seed for job in jobs}, costs)
    order = [(by_key[key].track, by_key[key].mixer, by_key[key].seed) for key in keys]
    first = min(job.seed for job in jobs)
    assert sorted(keys) == sorted(by_key)
    assert order[:4] == [
        ("recall", "dense", first),  # the costliest track's scout
        ("tabular", "dense", first),  # every other track's scout, so its pace is seen early
        ("tabular", "identity", first),  # a mixer not scouted yet: its cheapest job
        ("recall", "identity", first),  # then costliest first, every mixer's first seed early
    ]
    assert [track for track, _, _ in order[3:]] == ["recall"] * 5 + ["tabular"] * 4

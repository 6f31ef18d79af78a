"""Early stopping on the validation score, the same rule for every mixer and config.

A budget with ``eval_every`` reads each model's validation score every ``eval_every`` steps (and at
the last step); a model whose score has not improved by more than ``min_delta`` (relative to its
best so far) for ``patience`` checks in a row has converged and stops, once it has trained
``min_steps`` and left the trivial predictor's level (one that has learnt nothing trains on); with
``checkpoint = "best"`` the state of its best check is the one scored. Under the plateau schedule a
model whose patience ran out first has its learning rate cut (``cuts`` times) and its patience
restarted; the next plateau stops it. With ``halve_at``, at the first check at or after each of
those steps the grid is ranked and configs outside its better half (a quarter at the second, ...)
stop (pruned: successive halving inside the seed). :func:`stopping_of` builds a model's
:class:`Stopping` from its budget and validation split, the training loop applies a
:class:`StopRule` (the same settings with the loop's callbacks), and :func:`stopping_fields` says in
a record what it did. docs/protocol.md, "Training length".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from benchsuite.budget import Budget, RateSchedule, ScoredAt
from benchsuite.selection import learnt_floor

if TYPE_CHECKING:
    from benchsuite.specs import Metric, Track, TrackData


class Stopped(Protocol):
    """What a record says of a model's stopping, read from its training trace (unstacked)."""

    converged: dict[int, int]
    best_step: dict[int, int]
    pruned: dict[int, int]
    cuts: dict[int, list[int]]

    def steps(self, index: int) -> int: ...


@dataclass(frozen=True)
class Stopping:
    """A budget's early stopping for one model: the budget (its rule's settings are the
    budget's own knobs: ``eval_every``, ``patience``, ``min_delta``, ``min_steps``,
    ``halve_at``, ``cut_factor``; ``keep_best`` and ``cuts`` derive from it) and its validation
    split.

    ``score(prediction)`` scores a prediction of ``x`` (the validation inputs) so that higher is
    better; predictions are made in batches of the budget's ``eval_batch_size``. Patience stops
    no model before ``min_steps``, nor one whose best score is still at or below ``trivial`` (the
    trivial predictor's validation score on the same scale, within ``LEARNT_MIN``: it has learnt
    nothing, so it has not converged; None: no such level is known).
    """

    budget: Budget
    x: torch.Tensor
    score: Callable[[torch.Tensor], float]
    trivial: float | None = None

    @property
    def keep_best(self) -> bool:
        return self.budget.checkpoint == ScoredAt.BEST

    @property
    def cuts(self) -> int:
        """The plateau schedule's rate cuts before a plateau stops the model (0: none)."""
        return self.budget.cuts if self.budget.schedule == RateSchedule.PLATEAU else 0

    def rule(
        self,
        score: Callable[[], Sequence[float]],
        snapshot: Callable[[int], None],
        on_halving: Halving | None = None,
        groups: Sequence[int] = (),
    ) -> StopRule:
        """This budget's rule with the loop's callbacks (``groups``: see :class:`StopRule`)."""
        return StopRule(self, score, snapshot, on_halving, tuple(groups))


@dataclass(frozen=True)
class StopRule:
    """Early stopping on the validation score, the same for every member and mixer: the budget's
    settings with the training loop's callbacks.

    ``score()`` gives each member's validation score (higher is better, one per member; one
    value when unstacked); ``snapshot(member)`` keeps a member's current state as its best;
    ``on_halving(rung, steps_done, watches)``, when given, is told of each halving before it prunes,
    with the watches of the members still training (a model trained alone records what the
    halving of its grid will need: :func:`benchsuite.train.job.halve_one_by_one`). ``groups``
    gives each member's grid (one seed's configs) where a stack holds several: a halving ranks
    each grid apart (empty: one grid).
    """

    settings: Stopping  # every, patience, min_delta, keep_best (one member's: all share them)
    score: Callable[[], Sequence[float]]
    snapshot: Callable[[int], None]
    on_halving: Halving | None = None
    groups: tuple[int, ...] = ()


@dataclass
class Watch:
    """One member's record under a :class:`StopRule`: its best score, that check's step and the
    checks since."""

    best: float = -math.inf
    best_step: int = 0
    stale: int = 0
    cuts: int = 0  # its learning rate's cuts so far (the plateau schedule)

    def improved(self, value: float, min_delta: float) -> bool:
        """Whether ``value`` beats the best so far by more than ``min_delta`` (relative)."""
        return math.isfinite(value) and (
            self.best == -math.inf or value > self.best + min_delta * abs(self.best)
        )


# (halving number from 1, steps done, member still training -> its watch)
Halving = Callable[[int, int, dict[int, Watch]], None]


@dataclass(frozen=True)
class Check:
    """What one validation check decided: the members that converged (they stop) and those
    whose learning rate is cut (the plateau schedule: they train on at the lower rate)."""

    converged: list[int]
    cut: list[int]


def converged_now(
    rule: StopRule, watches: list[Watch], done: int, scored: list[int], live: list[int]
) -> Check:
    """One validation check: ``rule.score()`` gives one value per member of ``scored`` (in that
    order); of those, the ``live`` ones (not stopped) are judged. A member whose patience ran
    out (at or after ``min_steps``, above the trivial level) has its rate cut while it has cuts
    left (its patience starts again), else it has converged."""
    settings, converged, cut = rule.settings, [], []
    for member, value in zip(scored, rule.score(), strict=True):
        if member not in live:
            continue
        watch = watches[member]
        if watch.improved(float(value), rule.settings.budget.min_delta):
            watch.best, watch.best_step, watch.stale = float(value), done, 0
            if rule.settings.keep_best:
                rule.snapshot(member)
            continue
        watch.stale += 1
        learnt = settings.trivial is None or watch.best > settings.trivial
        patience = settings.budget.patience
        ran_out = patience and watch.stale >= patience
        if not (ran_out and done >= settings.budget.min_steps and learnt):
            continue
        if watch.cuts < settings.cuts:
            watch.cuts, watch.stale = watch.cuts + 1, 0
            cut.append(member)
        else:
            converged.append(member)
    return Check(converged, cut)


def halved_now(
    watches: list[Watch],
    live: list[int],
    finished: list[int],
    rung: int,
    groups: Sequence[int] = (),
) -> list[int]:
    """Halving number ``rung`` (1 for the first): in each grid of ``n`` configs (``groups`` gives
    each member's; empty: one grid), the best ``ceil(n / 2**rung)`` by best validation score so
    far may train on, ranked among those still training (``live``) and those that converged
    (``finished``: done, at no further cost, they keep their place), ties in grid order. Returns
    the live members outside that top, which stop."""

    def grid(member: int) -> int:
        return groups[member] if groups else 0

    halved = []
    for group in dict.fromkeys(grid(member) for member in live):
        size = sum(grid(member) == group for member in range(len(watches)))
        pool = sorted(m for m in (*live, *finished) if grid(m) == group)
        ranked = sorted(pool, key=lambda member: -watches[member].best)  # stable: grid order
        top = set(ranked[: math.ceil(size / 2**rung)])
        halved += [member for member in live if grid(member) == group and member not in top]
    return sorted(halved)


def trivial_level(metric: Metric, val_cap: float | None) -> float | None:
    """The signed validation score (higher is better) at or below which a model has learnt
    nothing (:func:`benchsuite.selection.learnt_floor` of the trivial predictor's
    ``val_cap``); None without a ``val_cap``."""
    if val_cap is None or not math.isfinite(val_cap):
        return None
    return learnt_floor(val_cap, metric.ideal, metric.higher_is_better)


def stopping_of(
    budget: Budget, track: Track, data: TrackData, x_val: torch.Tensor, y_val: torch.Tensor
) -> Stopping:
    """The budget's early stopping on the validation split (already on the job's device), scored
    by the data's metric; the budget must check during training (``eval_every``)."""
    metric = data.metric or track.metric
    sign = 1.0 if metric.higher_is_better else -1.0

    def score(prediction: torch.Tensor) -> float:
        return sign * float(track.evaluate(prediction, y_val, data)[metric.name])

    return Stopping(budget, x_val, score, trivial_level(metric, data.val_cap))


def stopping_fields(traces: list[Stopped], budget: Budget) -> dict[str, Any]:
    """What early stopping did to one config (over the rungs: summed steps, all converged, and
    with halving the step each rung pruned it at, or None); nothing when the budget has no
    stopping rule, so such records keep their old fields."""
    if not budget.eval_every:
        return {}
    fields: dict[str, Any] = {
        "steps": sum(trace.steps(0) for trace in traces),
        "converged": all(0 in trace.converged for trace in traces),
        "best_step": [trace.best_step.get(0) for trace in traces],
    }
    if budget.halve_at:
        fields["pruned_at"] = [trace.pruned.get(0) for trace in traces]
    if budget.schedule == RateSchedule.PLATEAU:
        fields["cut_at"] = [trace.cuts.get(0, []) for trace in traces]
    return fields

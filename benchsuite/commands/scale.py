"""``benchsuite scale``: what one training step of each mixer costs as the sequence grows.

For each mixer and each token count of a ladder, a separate process (torch imported once; a
fresh one after any point that was not measured) builds the shared encoder
(:func:`benchsuite.train.encoder.build_encoder`) with that mixer in every block, at a fixed width,
depth and batch, on a **synthetic input**: random tokens (batch x tokens x width, no tokenizer), a
mean-pooled linear regression head and an MSE loss against random targets. It measures, with the
counters of :mod:`benchsuite.train.measures`:

- ``seconds_per_step``: median wall time of an AdamW training step (forward, loss, backward,
  update) after warm-up steps, over ``steps`` steps or, when they are short, as many as take
  about 0.25 s (``timed_steps``, at most 50);
- ``memory_bytes``: on a CPU the activation bytes autograd saves in one training-mode forward;
  on CUDA the peak allocated while the model is built, measured and trained (``memory`` says which);
- ``flops_per_example``: forward FLOPs of the batch over its size; ``params``, ``mixer_params``.

A point is ``"over budget"`` when its first training step or its median step takes longer than
``max_seconds``, when it is still running ``(warmup + steps + 3) x max_seconds + 5`` seconds after
it was handed to the process (the process is killed), when its memory figure exceeds
``max_memory``, or when it cannot allocate memory (on a CPU under Linux, the point's process may
allocate at most ``max_memory`` + 512 MiB beyond what importing torch took). An over-budget or
failed point ends its mixer's ladder; a length the mixer does not support (its ``supports``) is
recorded with the reason and the ladder goes on. Nothing a point does can crash or hang the command.

Each mixer's ``exponents`` are the least-squares slopes of log(quantity) against log(tokens) over
the upper half of its measured points (at least two): about 1 for a cost linear in the length,
2 for a quadratic one.
"""

from __future__ import annotations

import dataclasses
import math
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsuite.errors import UsageError, one_line
from benchsuite.registry import variants
from benchsuite.seeds import DEFAULT_SALT, Streams
from benchsuite.settings import (
    NAMES,
    NUMBER,
    OPTIONS,
    TEXT,
    WHOLE,
    RunSettings,
    setting,
    split_names,
)
from benchsuite.specs import Mixer, Track

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from torch import Tensor

    from benchsuite.registry import Registry

OK, OVER_BUDGET, UNSUPPORTED, FAILED = "ok", "over budget", "unsupported", "failed"
SYNTHETIC_INPUT = (
    "synthetic: random tokens (batch x tokens x width), mean-pooled linear regression head, "
    "MSE loss against random targets"
)
STARTUP_SECONDS = 120.0  # importing torch and loading the plugins in the measuring process
GRACE_SECONDS = 5.0  # added to a point's deadline, for building the model
TIMED_SECONDS = 0.25  # short steps are timed this long in all (at most MAX_STEPS), for stability
MAX_STEPS = 50
HEADROOM_BYTES = 2**29  # address space a point may use beyond --max-memory (Python, allocator)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_tokens(text: str) -> tuple[int, ...]:
    """``"64,128"`` -> ``(64, 128)``, sorted and without repeats; a bad entry is named."""
    ladder = set()
    for part in split_names(text):
        if not part.isdigit() or int(part) < 1:
            raise UsageError(f"--tokens {part!r}: expected whole numbers >= 1, like 64,128,256")
        ladder.add(int(part))
    if not ladder:
        raise UsageError("--tokens: give at least one token count, like 64,128,256")
    return tuple(sorted(ladder))


def parse_bytes(text: str) -> int:
    """``"4GiB"``, ``"512M"``, ``"2e9"`` -> bytes (K, M, G, T are powers of 1024)."""
    match = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    try:
        value = float(match[1]) * _UNITS[match[2]] if match else math.nan
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise UsageError(f"--max-memory {text!r}: expected a size like 4GiB, 512M or 2e9")
    return int(value)


def _size(value: float) -> str:
    return f"{value / 2**30:.3g} GiB" if value >= 2**30 else f"{value / 2**20:.3g} MiB"


@dataclass(frozen=True)
class ScaleSettings:
    """What ``benchsuite scale`` measures (``mixers`` None: every registered mixer); a field with
    a help is a flag."""

    mixers: tuple[str, ...] | None = setting(None, "comma-separated mixers (default: all)", NAMES)
    tokens: tuple[int, ...] = setting(
        tuple(2**k for k in range(6, 15)), "comma-separated ladder of token counts", NAMES,
        parse=parse_tokens,
    )  # fmt: skip
    baseline: str = setting(RunSettings.baseline, "the mixer the table is relative to", TEXT)
    width: int = setting(32, "model dim", WHOLE)
    depth: int = setting(1, "blocks", WHOLE)
    batch: int = setting(8, "batch size", WHOLE)
    mlp_ratio: int = 2
    warmup: int = setting(2, "untimed steps; the first is checked against --max-seconds", WHOLE)
    steps: int = setting(5, "timed steps, of which the median is kept", WHOLE)
    lr: float = 1e-3
    threads: int = setting(1, "torch threads per point", WHOLE)
    device: str = setting("cpu", "cpu or cuda", TEXT)
    max_seconds: float = setting(10.0, "a longer training step is over budget", NUMBER)
    max_memory: int = setting(
        4 * 2**30,
        "more memory is over budget, e.g. 512M, 4GiB",
        TEXT,
        parse=parse_bytes,
        show=_size,
    )
    mixer_options: Mapping[str, Mapping[str, Any]] = setting(
        {}, "a mixer option (as for run)", OPTIONS, metavar="MIXER.KEY=VALUE",
        flag="--mixer-option",
    )  # fmt: skip
    out: str = setting(RunSettings.out, "folder for scaling.json and plots/scaling-*.png", TEXT)
    plugins_dir: str | None = None

    def check(self) -> None:
        """A one-line usage error for a setting out of range."""
        for name in ("width", "depth", "batch", "mlp_ratio", "warmup", "steps", "threads"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
        if not self.max_seconds > 0:
            raise UsageError("--max-seconds must be > 0")

    def record(self) -> dict[str, Any]:
        """The settings as plain JSON values (the plugins and output folders left out)."""
        plain = dataclasses.asdict(self)
        del plain["plugins_dir"], plain["out"]
        return {**plain, "mixers": list(self.mixers or ()), "tokens": list(self.tokens)}


def scale(
    registry: Registry,
    settings: ScaleSettings,
    on_point: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Measure every mixer along the ladder in a killable process; the scaling record.

    The record has ``input`` (what the model sees), ``settings``, ``environment``, ``memory``
    (``activation_bytes`` or ``peak_allocated_bytes``), ``baseline`` and per mixer its
    ``description``, ``points`` (``tokens``, ``status``, the measures or a ``reason``) and
    ``exponents`` (per quantity, None with fewer than two measured points). ``on_point`` is
    called with each point as it is finished.
    """
    from benchsuite.plan.environment import describe

    settings.check()
    chosen = variants.select(settings.mixers or sorted(registry.mixers), registry.mixers,
                             registry.unavailable)  # fmt: skip
    base = variants.parse(settings.baseline, registry.mixers, registry.unavailable)
    chosen = [base, *(v for v in chosen if v.name != base.name)]
    names = [v.name for v in chosen]
    unknown = sorted(set(settings.mixer_options) - {v.base for v in chosen})
    if unknown:
        raise UsageError(f"--mixer-option {unknown[0]}: not among the mixers measured")
    options = variants.variant_options(chosen, registry.mixers, settings.mixer_options)
    settings = dataclasses.replace(settings, mixer_options=options, baseline=base.name)
    mixers, measuring = {}, PointProcess(settings)
    try:
        for name in names:
            mixer = variants.lookup(registry.mixers, name)
            points = []
            for tokens in settings.tokens:
                reason = mixer.reason_unsupported(tokens, settings.width, options[name])
                if reason:
                    point = {"tokens": tokens, "status": UNSUPPORTED, "reason": reason}
                else:
                    point = measuring.measure(name, tokens)
                points.append(point)
                if on_point:
                    on_point(name, point)
                if point["status"] in (OVER_BUDGET, FAILED):
                    break
            mixers[name] = {"description": mixer.description, "points": points,
                            "exponents": exponents(points)}  # fmt: skip
    finally:
        measuring.close()
    cuda = settings.device.startswith("cuda")
    return {
        "kind": "scaling",
        "input": SYNTHETIC_INPUT,
        "settings": settings.record(),
        "environment": describe(settings.device, settings.threads),
        "memory": "peak_allocated_bytes" if cuda else "activation_bytes",
        "baseline": settings.baseline,
        "mixers": mixers,
    }


def exponents(points: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Per quantity, the log-log slope over the upper half of the measured points (>= 2)."""
    import numpy as np

    from benchsuite.output.scaling import QUANTITIES

    done = [p for p in points if p["status"] == OK]
    upper = done[min(len(done) // 2, max(len(done) - 2, 0)) :]
    slopes: dict[str, float | None] = {}
    for key in QUANTITIES:
        pairs = [(p["tokens"], p[key]) for p in upper if (p.get(key) or 0) > 0]
        if len(pairs) < 2:
            slopes[key] = None
            continue
        x, y = np.log(np.array(pairs, dtype=float)).T
        slopes[key] = float(np.polyfit(x, y, 1)[0])
    return slopes


def refresh_report(out: Path | str) -> Path | None:
    """Re-render ``OUT/report.html`` (now with the scaling section) when OUT holds a run's
    ``report.json``; returns the page, or None when there is no run there."""
    import json

    from benchsuite.output.html import write_html

    path = Path(out) / "report.json"
    if not path.is_file():
        return None
    return write_html(json.loads(path.read_text()), out)


# ----------------------------------------------------------------------------- the points


class PointProcess:
    """The process that measures points one at a time (torch imported and the plugins loaded
    once); killed and replaced when a point overruns its deadline, dies or is not measured."""

    def __init__(self, settings: ScaleSettings) -> None:
        self.settings = settings
        self.process: Any = None
        self.connection: Connection | None = None

    def measure(self, mixer: str, tokens: int) -> dict[str, Any]:
        """The point's record: ``tokens``, ``status`` and its measures or a ``reason``."""
        settings = self.settings
        deadline = (settings.warmup + settings.steps + 3) * settings.max_seconds + GRACE_SECONDS
        problem = self._start() if self.connection is None else None
        if problem or self.connection is None:
            return {"tokens": tokens, "status": FAILED, "reason": problem}
        self.connection.send((mixer, tokens))
        done = self._receive(deadline)
        if done is None:
            reason = (f"killed after {deadline:.3g} s, still measuring (--max-seconds "
                      f"{settings.max_seconds:g} per step)")  # fmt: skip
            done = ("done", {"status": OVER_BUDGET, "reason": reason})
        if done[0] == "died":
            done = ("done", {"status": FAILED, "reason": self._death()})
        if done[1]["status"] != OK:  # a fresh process for the next point
            self.close()
        return {"tokens": tokens, **done[1]}

    def _start(self) -> str | None:
        """Start the measuring process; None once it is ready, else why it is not."""
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_serve_points, args=(theirs, self.settings),
                                       daemon=True)  # fmt: skip
        self.process.start()
        theirs.close()
        started = self._receive(STARTUP_SECONDS)
        if started is not None and started[0] == "ready":
            return None
        problem = (f"the measuring process did not start in {STARTUP_SECONDS:g} s"
                   if started is None else self._death())  # fmt: skip
        self.close()
        return problem

    def _death(self) -> str:
        from benchsuite.execute.pool import exit_reason

        self.process.join(1)
        return f"the measuring process died: {exit_reason(self.process.exitcode)}"

    def _receive(self, limit: float) -> tuple[str, Any] | None:
        """The process's next message, ``("died", None)`` when it died, None after ``limit`` s."""
        from multiprocessing.connection import wait

        assert self.connection is not None
        ready = wait([self.connection, self.process.sentinel], timeout=limit)
        if self.connection in ready:
            try:
                return self.connection.recv()
            except EOFError:
                return ("died", None)
        return ("died", None) if ready else None

    def close(self) -> None:
        """End the process (killed if still running)."""
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join()
        if self.connection is not None:
            self.connection.close()
        self.process = self.connection = None


def _serve_points(connection: Connection, settings: ScaleSettings) -> None:
    """The measuring process: import torch and the plugins, say so, then measure each
    ``(mixer, tokens)`` received until the driver hangs up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    import torch

    from benchsuite.registry import load_registry

    torch.set_num_threads(settings.threads)
    mixers = load_registry(settings.plugins_dir).mixers
    if not settings.device.startswith("cuda"):
        _cap_memory(settings.max_memory + HEADROOM_BYTES)
    connection.send(("ready", None))
    while True:
        try:
            name, tokens = connection.recv()
        except EOFError:
            return
        known = name in mixers or variants.base_of(name) in mixers
        mixer = variants.lookup(mixers, name) if known else None
        connection.send(("done", _point(mixer, name, settings, tokens)))


def _point(mixer: Mixer | None, name: str, settings: ScaleSettings, tokens: int) -> dict:
    """:func:`measure_point`, with any error as a failed or over-budget record."""
    if mixer is None:
        return {"status": FAILED, "reason": f"mixer {name!r} is not registered in a fresh "
                "process (scale loads entry points and --plugins-dir)"}  # fmt: skip
    try:
        return measure_point(mixer, settings, tokens)
    except Exception as error:  # a broken or too large point is a record, never a crash
        if _out_of_memory(error):
            asked = re.search(r"allocate (\d+) bytes", str(error))
            what = f"{_size(int(asked[1]))} more" if asked else one_line(error)
            return _over({}, f"out of memory under --max-memory {_size(settings.max_memory)} "
                             f"(could not allocate {what})")  # fmt: skip
        return {"status": FAILED, "reason": one_line(error)}


def _cap_memory(limit: int) -> None:
    """Let this process allocate at most ``limit`` more bytes of address space (Linux only)."""
    try:
        import os
        import resource

        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = used + limit if hard == resource.RLIM_INFINITY else min(used + limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):  # not Linux: the measured figure is the only limit
        pass


def _out_of_memory(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError)
        and ("can't allocate memory" in text or "out of memory" in text)
    )


class _Regression(Track):
    """The synthetic task's loss (all :func:`benchsuite.train.measures.step_seconds` needs)."""

    name = "synthetic"

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        from torch.nn import functional

        return functional.mse_loss(prediction, target)


def measure_point(mixer: Mixer, settings: ScaleSettings, tokens: int) -> dict[str, Any]:
    """The measures of ``mixer`` at ``tokens`` in this process (see the module docstring):
    ``status`` ok or over budget, with a ``reason`` when over budget."""
    import torch
    from torch import nn

    from benchsuite.train.encoder import build_encoder
    from benchsuite.train.measures import (
        activation_bytes,
        forward_flops,
        parameter_counts,
        step_seconds,
    )

    device = torch.device(settings.device)
    cuda = device.type == "cuda"
    before = torch.cuda.memory_allocated(device) if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    width, streams = settings.width, Streams(DEFAULT_SALT, "scale", 0)

    class MeanHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(width, 1)

        def forward(self, encoded: Tensor) -> Tensor:
            return self.linear(encoded.mean(dim=1))

    build = mixer.builder()
    options = dict(settings.mixer_options.get(mixer.name, {}))
    model = build_encoder(
        make={"tokenizer": nn.Identity, "head": MeanHead},
        make_mixer=lambda: build(tokens, width, **options),
        dim=width, depth=settings.depth, mlp_ratio=settings.mlp_ratio,
        seed_of=lambda part: streams.int_seed(f"init/{part}"),
    ).to(device)  # fmt: skip
    generator = torch.Generator().manual_seed(streams.int_seed("data"))
    x = torch.randn(settings.batch, tokens, width, generator=generator).to(device)
    y = torch.randn(settings.batch, 1, generator=generator).to(device)
    point: dict[str, Any] = {"status": OK, **parameter_counts(model, model.mixers())}
    point["activation_bytes"] = activation_bytes(model, x)
    point["flops_per_example"] = forward_flops(model, x) / settings.batch
    if not cuda:
        point["memory_bytes"] = point["activation_bytes"]
        if point["memory_bytes"] > settings.max_memory:
            return _over(point, f"activations take {_size(point['memory_bytes'])} > --max-memory "
                                f"{_size(settings.max_memory)}")  # fmt: skip
    task, limit = _Regression(), settings.max_seconds
    first = step_seconds(model, task, x, y, settings.lr, warmup=0, steps=1)
    if first > limit:
        return _over(point, f"a training step took {first:.3g} s > --max-seconds {limit:g}")
    timed = max(settings.steps, min(MAX_STEPS, math.ceil(TIMED_SECONDS / max(first, 1e-6))))
    point["timed_steps"] = timed
    point["seconds_per_step"] = step_seconds(model, task, x, y, settings.lr,
                                             settings.warmup - 1, timed)  # fmt: skip
    if cuda:
        point["memory_bytes"] = float(torch.cuda.max_memory_allocated(device) - before)
        if point["memory_bytes"] > settings.max_memory:
            return _over(point, f"peak allocated {_size(point['memory_bytes'])} > --max-memory "
                                f"{_size(settings.max_memory)}")  # fmt: skip
    if point["seconds_per_step"] > limit:
        return _over(point, f"median step {point['seconds_per_step']:.3g} s > --max-seconds "
                            f"{limit:g}")  # fmt: skip
    return point


def _over(point: dict[str, Any], reason: str) -> dict[str, Any]:
    return {**point, "status": OVER_BUDGET, "reason": reason}

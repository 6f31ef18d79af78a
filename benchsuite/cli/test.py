"""``benchsuite test MIXER...``: every check of the plugin contract kit
(:func:`benchsuite.testing.run_contract`), one line each; exit 1 when one failed."""

from __future__ import annotations

import argparse
import sys

from benchsuite.cli import arguments
from benchsuite.contract_settings import ContractSettings
from benchsuite.errors import UsageError

HELP = "check mixers against the plugin contract kit"
EXAMPLES = (
    ("benchsuite test dense attention", "every contract check, one line each"),
    ("benchsuite --plugins-dir ./my_mixers test mymix --tokens 8,64", "a plugins-folder mixer"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The mixers and the :class:`ContractSettings` flags."""
    parser.add_argument("mixers", nargs="+", metavar="MIXER", help="registered mixer names")
    arguments.add_settings(parser, ContractSettings)


def run(args: argparse.Namespace) -> int:
    """Check every mixer (every mistake is reported before the first check runs)."""
    from benchsuite.registry import load_registry, variants

    settings = arguments.read(ContractSettings, args)
    registry = load_registry(settings.plugins_dir)
    for failure in registry.failures:
        print(f"warning: plugin {failure.name!r} not loaded: {failure.reason}", file=sys.stderr)
    registry.check_loaded("mixer", settings.mixers)
    chosen = variants.select(settings.mixers, registry.mixers, registry.unavailable)
    if unknown := sorted(set(settings.mixer_options) - {v.base for v in chosen}):
        raise UsageError(f"--mixer-option {unknown[0]}: not among the mixers tested")
    # a variant's own options win
    resolved = variants.variant_options(chosen, registry.mixers, settings.mixer_options)
    from benchsuite.testing import run_contract  # torch: only once the names are known

    failed = 0
    for variant in chosen:
        name, mixer = variant.name, variants.lookup(registry.mixers, variant.name)
        outcomes = run_contract(
            mixer, tokens=settings.tokens, dims=settings.dims, options=resolved[name]
        )
        for outcome in outcomes:
            failed += outcome.ran and not outcome.passed
            verdict = "passed" if outcome.passed else f"FAILED: {outcome.reason}"
            if not outcome.ran:
                verdict = f"not run: {outcome.reason}"
            print(f"{name} {outcome.check}: {verdict}")
    return 1 if failed else 0

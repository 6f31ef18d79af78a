"""``benchsuite completion SHELL``: the shell completion script of the CLI's own parser."""

from __future__ import annotations

import argparse

HELP = "print a shell completion script"
EXAMPLES = (
    ("benchsuite completion bash > ~/.local/share/bash-completion/completions/benchsuite", "bash"),
    ("benchsuite completion fish > ~/.config/fish/completions/benchsuite.fish", "fish"),
)
# Arguments that name files or folders, completed as such by the shell.
PATH_ARGUMENTS = {
    "out": "dir",
    "plugins_dir": "dir",
    "data_dir": "dir",
    "path": "dir",
    "config": "file",
    "output": "file",
    "a": "file",
    "b": "file",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The shell."""
    parser.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser below it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += parsers(sub)
    return found


def run(args: argparse.Namespace) -> int:
    """Print the script of ``args.root``, the whole command line's parser (set by the CLI)."""
    import shtab

    kinds = {"dir": shtab.DIRECTORY, "file": shtab.FILE}
    for sub in parsers(args.root):
        for action in sub._actions:
            if action.dest in PATH_ARGUMENTS:
                action.complete = kinds[PATH_ARGUMENTS[action.dest]]  # type: ignore[attr-defined]
    print(shtab.complete(args.root, args.shell))
    return 0

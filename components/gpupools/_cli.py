"""What every ``python -m gpupools.<tool>`` shares: unknown options rejected by name.

argparse reports a missing positional argument before an unknown option, so a mistyped flag on a
command with a required argument (``python -m gpupools.preflight --strct``) would read "the
following arguments are required: stack". ``parse_args`` names the unknown option first, with
argparse's own message and exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Iterator, Sequence


def _option_strings(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        yield from action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                yield from _option_strings(subparser)


def unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The ``-x``/``--xyz`` tokens of ``argv`` that no option of ``parser`` (or of its subcommands)
    matches, exactly or as an abbreviation argparse would accept; ``--`` ends the options.

    >>> p = argparse.ArgumentParser(); _ = p.add_argument("--strict", action="store_true")
    >>> unknown_options(p, ["--strict", "--stict", "--str", "-1", "--", "--x"])
    ['--stict']
    """
    known = set(_option_strings(parser))
    unknown: list[str] = []
    for token in argv:
        if token == "--":
            break
        if not token.startswith("-") or token == "-" or token[1:2].isdigit():
            continue
        name = token.split("=", 1)[0]
        if name in known or (name.startswith("--") and any(option.startswith(name) for option in known)):
            continue
        unknown.append(token)
    return unknown


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, after exiting 2 with ``unrecognized arguments: ...`` for unknown options."""
    import sys

    tokens = list(sys.argv[1:] if argv is None else argv)
    unknown = unknown_options(parser, tokens)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return parser.parse_args(tokens)


def add_stack(parser: argparse.ArgumentParser) -> None:
    """The ``stack`` positional of every ``python -m gpupools.sim`` command (one wording for all)."""
    parser.add_argument("stack", help="stack name, as in Pulumi.<stack>.yaml")


def add_pool(parser: argparse.ArgumentParser, help: str) -> None:
    """A required ``--pool`` (a ``gpuPools``/``cpuPools`` name), with what the command takes."""
    parser.add_argument("--pool", required=True, help=help)

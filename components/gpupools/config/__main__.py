"""``python -m gpupools.config schema``: print the JSON Schema (draft 2020-12) of a stack file's ``config:`` map.

The command lives here, not in ``gpupools.config``: the schema (``gpupools.config_schema``) reads the
reference notes, which read the parser's defaults, so the parser itself must not import it (no
import circle, ``tests/test_import_cycles.py``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from gpupools import config_schema


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and print the schema; returns the exit status (2 on a usage error, from argparse)."""
    parser = argparse.ArgumentParser(prog="python -m gpupools.config", description="The stack config of gpupools.")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("schema", help="print the JSON Schema (draft 2020-12) of a Pulumi.<stack>.yaml")
    if parser.parse_args(argv).command is None:
        parser.error("a command is required: schema")
    sys.stdout.write(config_schema.text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

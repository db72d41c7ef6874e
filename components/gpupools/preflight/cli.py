"""The ``python -m gpupools.preflight`` command line.

Exit status: 0 every check ✓ (``?`` allowed unless ``--strict``); 1 a check ✗ (or ``?`` with
``--strict``); 2 a bad stack config or a missing stack file (the same line and status as
``python -m gpupools.synth``); 3 a cloud SDK is not installed (the message says how to install it);
4 no check could run (every row ``?``, e.g. no credentials), with one line on stderr saying why.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from gpupools._cli import parse_args
from gpupools.preflight import run_checks
from gpupools.preflight.credentials import why_nothing_ran
from gpupools.preflight.report import EXIT_NO_ANSWER, exit_status, render
from gpupools.preflight.sdk import MissingSdkError
from gpupools.preflight.stack import load_target

EXIT_MISSING_SDK = 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.preflight",
        description="Check a stack's config against the account before `pulumi up`: sizes offered per zone, "
        "vCPU quota (Spot and on-demand), Kubernetes version, deployer permissions. Read-only.",
    )
    parser.add_argument("stack", help="stack name, as in Pulumi.<stack>.yaml (e.g. aws-dev)")
    parser.add_argument("--root", type=Path, help="project directory (default: the current one if it has Pulumi.yaml)")
    parser.add_argument("--strict", action="store_true", help="fail (exit 1) on checks the cloud could not answer (?) too")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the preflight; returns the exit status."""
    from gpupools.synth import EXIT_CONFIG_ERROR, committed_stacks, config_error_in, default_root

    args = parse_args(_parser(), argv)
    root = (args.root or default_root()).resolve()
    try:
        target = load_target(args.stack, root)
    except FileNotFoundError as error:
        print(f"error: {error} (stacks here: {', '.join(committed_stacks(root)) or 'none'})", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except Exception as error:
        config_error = config_error_in(error)
        if config_error is None:
            raise
        print(str(config_error), file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        checks = run_checks(target)
    except MissingSdkError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_MISSING_SDK
    where = f"subscription {target.subscription_id}, " if target.subscription_id else ""
    print(f"preflight {target.stack}: {target.cloud.value}, {where}{target.region}")
    sys.stdout.write(render(checks))
    status = exit_status(checks, strict=args.strict)
    if status == EXIT_NO_ANSWER:
        print(why_nothing_ran(checks), file=sys.stderr)
    elif status:
        print("fix the ✗ rows before `pulumi up`" + (" (--strict: ? fails too)" if args.strict else ""), file=sys.stderr)
    return status

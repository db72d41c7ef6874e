"""The project's example stacks: what the tests that pin outputs, docs and snapshots run over.

A user adds their own ``Pulumi.<stack>.yaml`` to the project (docs/synth.md); those files are not
examples: no snapshot, no docs table, no sim run names them, so the checks below never fail for a
stack someone else added. What every stack file gets, a user's too: it is valid against the schema
and synthesizes (``tests/test_stack_files.py``).
"""

from __future__ import annotations

from gpupools.testing import PROJECT_ROOT

EXAMPLE_STACKS = (
    "aws-auto-dev",
    "aws-dev",
    "aws-karpenter-dev",
    "aws-training-dev",
    "azure-automatic-dev",
    "azure-dev",
    "azure-nap-dev",
)

EXAMPLE_FILES = tuple(PROJECT_ROOT / f"Pulumi.{stack}.yaml" for stack in EXAMPLE_STACKS)

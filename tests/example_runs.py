"""The example stacks exactly as their stack files say, run on the recording runtime once per test process.

Running a stack program on Pulumi's mock runtime takes one to three seconds, and dozens of test
modules read the same unchanged runs of the five example stacks: each worker of the suite runs each
stack here once and every module reads that run. A run from here is shared, so a test reads it and
never changes it; a test that needs its own run (another config, or a check that two runs agree)
calls ``run_stack`` itself.
"""

from __future__ import annotations

import functools

from gpupools.testing import Run, run_stack


@functools.cache
def example_run(stack: str) -> Run:
    """``run_stack(stack)`` with no overrides and the default fakes, made once per process."""
    return run_stack(stack)

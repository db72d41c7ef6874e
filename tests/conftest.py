"""Shared pytest setup: the project root and ``components/`` on sys.path, so ``stacks`` and ``gpupools``
import from this checkout (ahead of any installed copy)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT / "components", ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from hypothesis import HealthCheck, settings  # noqa: E402

# Hypothesis' per-example deadline (200 ms by default) and its too_slow health check are timings,
# not properties: on a loaded machine (.ci/run runs the checks beside the sim's builds, at a lower CPU
# priority) an example takes longer and the test fails with no fault in the code. Performance is
# measured by the benchmarks, never asserted in a test; a test's own @settings still set the rest.
settings.register_profile("gpupools", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gpupools")

# The Python SDK gives every registration its caller's stack trace and source position
# (pulumi/runtime/resource.py, _get_stack_trace: traceback.extract_stack and a file URI per frame),
# for the engine's diagnostics. The recording mock monitor (gpupools.testing) never reads them and
# no test asserts them, yet building them was a tenth of the suite's CPU time (measured with
# cProfile over the lifecycle tests). The tests register with an empty trace; programs run by the
# real engine (scripts/test-sim, the consumer and wheel tests) keep the SDK's own.
from pulumi.runtime import resource as _pulumi_resource  # noqa: E402
from pulumi.runtime.proto import source_pb2 as _source_pb2  # noqa: E402

_pulumi_resource._get_stack_trace = lambda: _source_pb2.StackTrace()  # type: ignore[attr-defined]

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

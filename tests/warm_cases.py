"""``gpuPools[].warm`` stack configs that must fail, with the path and rule each names (shared by
``tests/test_warm.py`` and the bad-input catalogue)."""

from __future__ import annotations

from typing import Any

from tests.multi_node_cases import AWS, AZURE, with_pool

SCHEDULE = {"days": ["Monday", "Friday"], "start": "08:00", "end": "19:00", "timeZone": "Europe/Berlin"}

WARM_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "warm-above-max",
        with_pool(AWS, 0, warm={"nodes": 99}),
        "gpupools:gpuPools[0].warm.nodes",
        "must be <= the pool's maxSize",
    ),
    ("warm-zero", with_pool(AZURE, 0, warm={"nodes": 0}), "gpupools:gpuPools[0].warm.nodes", "must be a whole number >= 1"),
    (
        "warm-never-opens",
        with_pool(AZURE, 0, warm={"nodes": 1, "schedule": {**SCHEDULE, "end": "08:00"}}),
        "gpupools:gpuPools[0].warm.schedule.end",
        "must be after start (08:00) on the same day: this window never opens",
    ),
    (
        "warm-no-days",
        with_pool(AWS, 0, warm={"nodes": 1, "schedule": {**SCHEDULE, "days": []}}),
        "gpupools:gpuPools[0].warm.schedule.days",
        "must list at least one day",
    ),
    (
        "warm-bad-time-zone",
        with_pool(AWS, 0, warm={"nodes": 1, "schedule": {**SCHEDULE, "timeZone": "Europe/Atlantis"}}),
        "gpupools:gpuPools[0].warm.schedule.timeZone",
        "must be a time zone of the IANA database",
    ),
    (
        "warm-unquoted-time",
        with_pool(AWS, 0, warm={"nodes": 1, "schedule": {**SCHEDULE, "start": 480}}),
        "gpupools:gpuPools[0].warm.schedule.start",
        'must be a quoted "HH:MM" string',
    ),
    (
        "warm-bad-day",
        with_pool(AWS, 0, warm={"nodes": 1, "schedule": {**SCHEDULE, "days": ["Mon"]}}),
        "gpupools:gpuPools[0].warm.schedule.days[0]",
        "must be one of Sunday",
    ),
    (
        "warm-unknown-key",
        with_pool(AWS, 0, warm={"nodes": 1, "spare": 2}),
        "gpupools:gpuPools[0].warm.spare",
        "is not a known key",
    ),
]

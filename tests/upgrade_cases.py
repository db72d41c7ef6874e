"""``gpuPools[].upgrade`` / ``cpuPools[].upgrade`` stack configs that must fail, with the path and rule
each names (shared by ``tests/test_aks_upgrades.py`` and the bad-input catalogue)."""

from __future__ import annotations

from typing import Any

from tests.karpenter_cases import NAP
from tests.multi_node_cases import AWS, AZURE, with_pool

UPGRADE_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "upgrade-surge-not-a-count",
        with_pool(AZURE, 0, upgrade={"maxSurge": "a third"}),
        "gpupools:gpuPools[0].upgrade.maxSurge",
        'must be a node count or a percentage ("33%")',
    ),
    (
        "upgrade-percentage-over-100",
        with_pool(AZURE, 0, upgrade={"maxUnavailable": "150%"}),
        "gpupools:gpuPools[0].upgrade.maxUnavailable",
        "must be a percentage of at most 100%",
    ),
    (
        "upgrade-both-zero",
        with_pool(AZURE, 0, upgrade={"maxSurge": 0, "maxUnavailable": 0}),
        "gpupools:gpuPools[0].upgrade.maxUnavailable",
        "must be above 0 when maxSurge is 0",
    ),
    (
        "upgrade-drain-over-a-day",
        with_pool(AZURE, 0, upgrade={"drainTimeoutMinutes": 2000}),
        "gpupools:gpuPools[0].upgrade.drainTimeoutMinutes",
        "must be 1 to 1440 minutes",
    ),
    (
        "upgrade-unknown-key",
        with_pool(AZURE, 0, upgrade={"nodeSoak": 5}),
        "gpupools:gpuPools[0].upgrade.nodeSoak",
        "is not a known key",
    ),
    (
        "upgrade-spot-only-pool",
        {
            **AZURE,
            "gpupools:gpuPools": [
                {
                    **{k: v for k, v in AZURE["gpupools:gpuPools"][0].items() if k != "onDemandMaxSize"},
                    "onDemandFallback": False,
                    "upgrade": {"maxSurge": "1"},
                },
                *AZURE["gpupools:gpuPools"][1:],
            ],
        },
        "gpupools:gpuPools[0].upgrade",
        "has no agent pool to apply to",
    ),
    ("upgrade-on-aws", with_pool(AWS, 0, upgrade={"maxSurge": "1"}), "gpupools:gpuPools[0].upgrade", "Azure only"),
    (
        "upgrade-under-nap",
        with_pool(NAP, 0, upgrade={"maxSurge": "1"}),
        "gpupools:gpuPools[0].upgrade",
        "has no meaning with provisioner karpenter",
    ),
]

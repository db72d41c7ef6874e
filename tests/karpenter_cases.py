"""Invalid stack configs under ``gpupools:provisioner: karpenter``, for the bad-input catalogue.

Each case: (id, full config, the config path the error must name, words of the rule). Every one
must fail with one ``ConfigError`` before anything is registered (``tests/test_bad_input_catalogue.py``).
"""

from __future__ import annotations

from typing import Any

from gpupools.testing import stack_config

KARPENTER = stack_config("aws-karpenter-dev")


def karpenter(**changes: Any) -> dict[str, Any]:
    """The aws-karpenter-dev config with top-level keys replaced (``gpupools:`` prefix added)."""
    return {**KARPENTER, **{f"gpupools:{k}": v for k, v in changes.items()}}


def with_pool(index: int, **changes: Any) -> dict[str, Any]:
    pools = [dict(p) for p in KARPENTER["gpupools:gpuPools"]]
    pools[index].update(changes)
    return karpenter(gpuPools=pools)


def with_cpu_pool(**changes: Any) -> dict[str, Any]:
    pools = [dict(p) for p in KARPENTER["gpupools:cpuPools"]]
    pools[0].update(changes)
    return karpenter(cpuPools=pools)


NAP = stack_config("azure-nap-dev")


def nap(**changes: Any) -> dict[str, Any]:
    """The azure-nap-dev config with top-level keys replaced (``gpupools:`` prefix added)."""
    return {**NAP, **{f"gpupools:{k}": v for k, v in changes.items()}}


def nap_pool(index: int, **changes: Any) -> dict[str, Any]:
    pools = [dict(p) for p in NAP["gpupools:gpuPools"]]
    pools[index].update(changes)
    return nap(gpuPools=pools)


NAP_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("nap-spot-max-price", nap_pool(0, spotMaxPrice=0.5), "gpupools:gpuPools[0].spotMaxPrice", "max price of -1"),
    ("nap-mig", nap_pool(1, sharing={"mig": {"profile": "MIG1g"}}), "gpupools:gpuPools[1].sharing.mig", "AKSNodeClass"),
    (
        "nap-reservations",
        nap_pool(
            0,
            reservations=[
                {
                    "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/capacity/providers/"
                    "Microsoft.Compute/capacityReservationGroups/gpu",
                    "zone": "1",
                }
            ],
        ),
        "gpupools:gpuPools[0].reservations",
        "AKSNodeClass has no capacity reservation field",
    ),
    (
        "nap-autoscaled-system-pool",
        nap(systemPool={"instanceTypes": ["Standard_D4s_v5"], "minSize": 2, "maxSize": 4}),
        "gpupools:systemPool.maxSize",
        "refuses autoscaled pools",
    ),
    ("nap-min-size", nap_pool(0, minSize=1), "gpupools:gpuPools[0].minSize", "keeps no minimum"),
    (
        "nap-provision-time",
        nap(autoscaler={"maxNodeProvisionTime": "10m"}),
        "gpupools:autoscaler.maxNodeProvisionTime",
        "no provision timeout",
    ),
    (
        "nap-reserved-label",
        nap_pool(0, labels={"kubernetes.azure.com/team": "vision"}),
        "gpupools:gpuPools[0].labels.kubernetes.azure.com/team",
        "Karpenter reserves",
    ),
    (
        "nap-provider-label",
        nap_pool(1, labels={"karpenter.azure.com/sku-gpu-name": "A100"}),
        "gpupools:gpuPools[1].labels.karpenter.azure.com/sku-gpu-name",
        "Karpenter reserves",
    ),
    ("nap-dataplane-typo", nap(network={"dataplane": "cillium"}), "gpupools:network.dataplane", "must be one of azure, cilium"),
    (
        "dataplane-on-aws",
        {**KARPENTER, "gpupools:network": {"cidr": "10.41.0.0/16", "dataplane": "cilium"}},
        "gpupools:network.dataplane",
        "is Azure only",
    ),
]
"""Invalid stack configs under AKS Node Auto Provisioning (and the dataplane key)."""


KARPENTER_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("karpenter-provisioner-typo", karpenter(provisioner="karpentr"), "gpupools:provisioner", "did you mean 'karpenter'"),
    (
        # azure-dev switched to NAP without removing what NAP cannot honour: the first such key is named.
        "nap-switch-keeps-on-demand-max",
        {**stack_config("azure-dev"), "gpupools:provisioner": "karpenter"},
        "gpupools:gpuPools[0].onDemandMaxSize",
        "no meaning with provisioner karpenter",
    ),
    ("karpenter-on-demand-max", with_pool(0, onDemandMaxSize=3), "gpupools:gpuPools[0].onDemandMaxSize", "no meaning"),
    ("karpenter-min-size", with_pool(1, minSize=1), "gpupools:gpuPools[1].minSize", "keeps no minimum"),
    ("karpenter-cpu-min-size", with_cpu_pool(minSize=2), "gpupools:cpuPools[0].minSize", "keeps no minimum"),
    (
        "karpenter-provision-time",
        karpenter(autoscaler={"maxNodeProvisionTime": "10m", "scaleDownUnneededTime": "10m"}),
        "gpupools:autoscaler.maxNodeProvisionTime",
        "no provision timeout",
    ),
    (
        "karpenter-reserved-label",
        with_pool(0, labels={"karpenter.sh/team": "vision"}),
        "gpupools:gpuPools[0].labels.karpenter.sh/team",
        "Karpenter reserves",
    ),
    (
        "karpenter-unneeded-seconds",
        karpenter(autoscaler={"scaleDownUnneededTime": "90s"}),
        "gpupools:autoscaler.scaleDownUnneededTime",
        "whole minutes",
    ),
    (
        "karpenter-fallback-without-spot",
        with_pool(0, spot=False, onDemandFallback=True),
        "gpupools:gpuPools[0].onDemandFallback",
        "already on-demand",
    ),
]


def window(**changes: Any) -> dict[str, Any]:
    """The aws-karpenter-dev config with ``gpupools:maintenance`` keys replaced."""
    return karpenter(maintenance={**KARPENTER["gpupools:maintenance"], **changes})


MAINTENANCE_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("maintenance-short", window(durationHours=2), "gpupools:maintenance.durationHours", "must be >= 4, got 2"),
    ("maintenance-long", window(durationHours=25), "gpupools:maintenance.durationHours", "must be <= 24"),
    ("maintenance-hours-string", window(durationHours="4"), "gpupools:maintenance.durationHours", "must be an integer"),
    ("maintenance-day", window(day="Sun"), "gpupools:maintenance.day", "did you mean 'Sunday'"),
    ("maintenance-start", window(startTime="2:00"), "gpupools:maintenance.startTime", '"HH:MM"'),
    ("maintenance-start-number", window(startTime=120), "gpupools:maintenance.startTime", "quoted"),
    ("maintenance-offset", window(utcOffset="UTC"), "gpupools:maintenance.utcOffset", '"+HH:MM"'),
    ("maintenance-offset-range", window(utcOffset="+15:00"), "gpupools:maintenance.utcOffset", "-12:00 to +14:00"),
    ("maintenance-grace-days", window(terminationGracePeriod="1d"), "gpupools:maintenance.terminationGracePeriod", "24h"),
    (
        "maintenance-grace-long",
        window(terminationGracePeriod="200h"),
        "gpupools:maintenance.terminationGracePeriod",
        "at most 168h",
    ),
    ("maintenance-typo", window(duration=4), "gpupools:maintenance.duration", "did you mean 'durationHours'"),
    (
        "maintenance-under-cluster-autoscaler",
        {**stack_config("aws-dev"), "gpupools:maintenance": {"day": "Sunday"}},
        "gpupools:maintenance",
        "no meaning with provisioner cluster-autoscaler",
    ),
    ("nap-maintenance-short", nap(maintenance={"durationHours": 3}), "gpupools:maintenance.durationHours", "must be >= 4"),
    (
        "nap-time-slicing",
        nap_pool(0, sharing={"timeSlicing": {"replicas": 2}}),
        "gpupools:gpuPools[0].sharing",
        "NodeOverlay feature gate",
    ),
    ("nap-mps", nap_pool(1, sharing={"mps": {"replicas": 4}}), "gpupools:gpuPools[1].sharing", "k pending pods"),
]
"""Invalid ``gpupools:maintenance`` windows, and GPU sharing under AKS NAP (issue 18, items 3 and 5)."""

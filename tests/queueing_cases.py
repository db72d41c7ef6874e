"""Bad ``gpupools:queueing`` configs: each is one ConfigError naming the path and the rule, with
nothing registered (``tests/test_bad_input_catalogue.py`` runs them through the real program)."""

from __future__ import annotations

from typing import Any

from gpupools.testing import stack_config


def queueing(stack: str, **section: Any) -> dict[str, Any]:
    return {**stack_config(stack), "gpupools:queueing": section}


ON = {"enabled": True, "namespaces": ["ml"]}

QUEUEING_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "queueing-unknown-pool",
        queueing("aws-dev", **ON, pools=["gpu1", "gpu8"]),
        "gpupools:queueing.pools[1]",
        "must name a gpuPools or cpuPools entry",
    ),
    (
        # 1000 GPU slots: far more than azure-dev's two small GPU pools hold at their ceiling.
        "queueing-team-quota-above-the-pools",
        queueing("azure-dev", enabled=True, teams=[{"name": "vision", "namespaces": ["vision"], "gpus": 1000}]),
        "gpupools:queueing.teams",
        "must not guarantee more GPU slots than the queued pools' ceiling holds",
    ),
    (
        "queueing-team-quota-above-the-named-pools",
        queueing("aws-dev", enabled=True, pools=["general"], teams=[{"name": "vision", "namespaces": ["vision"], "gpus": 1}]),
        "gpupools:queueing.teams",
        "ceiling holds (0 GPU slots",
    ),
    (
        "queueing-provisioning-request-under-karpenter",
        queueing("aws-karpenter-dev", **ON, atomicScaleUp=True),
        "gpupools:queueing.atomicScaleUp",
        "not available with provisioner karpenter",
    ),
    (
        "queueing-provisioning-request-under-nap",
        queueing("azure-nap-dev", **ON, atomicScaleUp=True),
        "gpupools:queueing.atomicScaleUp",
        "not available with provisioner karpenter",
    ),
    ("queueing-keys-while-off", queueing("aws-dev", namespaces=["ml"]), "gpupools:queueing.namespaces", "no effect unless"),
    ("queueing-no-namespace", queueing("azure-dev", enabled=True), "gpupools:queueing.namespaces", "at least one namespace"),
    (
        "queueing-bad-namespace",
        queueing("aws-dev", enabled=True, namespaces=["ML_Team"]),
        "gpupools:queueing.namespaces[0]",
        "namespace name",
    ),
    (
        "queueing-team-named-like-the-shared-queue",
        queueing("aws-dev", enabled=True, teams=[{"name": "gpupools", "namespaces": ["a"]}]),
        "gpupools:queueing.teams[0].name",
        "must not be 'gpupools'",
    ),
    (
        "queueing-team-twice",
        queueing("aws-dev", enabled=True, teams=[{"name": "a", "namespaces": ["a"]}, {"name": "a", "namespaces": ["b"]}]),
        "gpupools:queueing.teams[1].name",
        "must be unique",
    ),
    (
        "queueing-team-without-namespace",
        queueing("aws-dev", enabled=True, teams=[{"name": "a"}]),
        "gpupools:queueing.teams[0].namespaces",
        "at least one namespace",
    ),
    ("queueing-unknown-key", queueing("aws-dev", **ON, queues=["a"]), "gpupools:queueing", "queues"),
]

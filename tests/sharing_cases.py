"""Bad ``gpuPools[].sharing`` inputs for the bad-input catalogue: stack configs and component arguments.

``tests/test_config.py`` adds ``SHARING_INVALID`` to ``INVALID`` (each parsed by ``config.parse``
and run through the real program by the catalogue); ``tests/test_bad_input_catalogue.py`` adds
``SHARING_COMPONENT_CASES`` to its component cases. Each must fail with one ``ConfigError`` naming
the path and the rule, before anything is registered.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import pulumi
import pulumi_kubernetes as k8s
from gpupools.aws import GpuNodeGroup
from gpupools.azure import GpuNodePool
from gpupools.conventions import DEVICE_PLUGIN_CONFIG_LABEL, CapacityType, Role, pool_labels
from gpupools.kubernetes import NvidiaDevicePlugin
from gpupools.pools import NodePoolInfo
from gpupools.specs import GpuPoolSpec, SharingMode, SharingSpec, frozen_map

AZURE: dict[str, Any] = {
    "gpupools:cloud": "azure",
    "azure-native:location": "eastus",
    "gpupools:cluster": {"name": "ml-dev"},
    "gpupools:gpuPools": [{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 10}],
}
AWS: dict[str, Any] = {
    "gpupools:cloud": "aws",
    "aws:region": "us-west-2",
    "gpupools:cluster": {"name": "ml-dev", "zones": ["us-west-2a", "us-west-2b", "us-west-2c"]},
    "gpupools:gpuPools": [{"name": "g1", "instanceTypes": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"], "maxSize": 9}],
}
A100 = "Standard_NC24ads_A100_v4"
TS4 = {"timeSlicing": {"replicas": 4}}
MIG1G = {"mig": {"profile": "MIG1g"}}


def pool(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``base`` with its first GPU pool updated."""
    result = copy.deepcopy(base)
    result["gpupools:gpuPools"][0].update(changes)
    return result


SHARING_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    # (case id, config, path in the message, rule fragment in the message)
    (
        "sharing-two-modes",
        pool(AZURE, sharing={**TS4, "mps": {"replicas": 4}}),
        "gpupools:gpuPools[0].sharing",
        "exactly one mode",
    ),
    ("sharing-no-mode", pool(AZURE, sharing={}), "gpupools:gpuPools[0].sharing", "exactly one mode"),
    ("sharing-not-a-mapping", pool(AZURE, sharing="timeSlicing"), "gpupools:gpuPools[0].sharing", "must be a mapping"),
    (
        "sharing-mode-typo",
        pool(AZURE, sharing={"timeslicing": {"replicas": 4}}),
        "sharing.timeslicing",
        "did you mean 'timeSlicing'",
    ),
    ("sharing-replicas-missing", pool(AZURE, sharing={"timeSlicing": {}}), "sharing.timeSlicing.replicas", "is required"),
    (
        "sharing-replicas-one",
        pool(AZURE, sharing={"timeSlicing": {"replicas": 1}}),
        "sharing.timeSlicing.replicas",
        "from 2 to 48",
    ),
    ("sharing-replicas-above-mps-max", pool(AWS, sharing={"mps": {"replicas": 49}}), "sharing.mps.replicas", "from 2 to 48"),
    ("sharing-replicas-string", pool(AZURE, sharing={"mps": {"replicas": "4"}}), "sharing.mps.replicas", "an integer"),
    (
        "sharing-replicas-bool",
        pool(AWS, sharing={"timeSlicing": {"replicas": True}}),
        "sharing.timeSlicing.replicas",
        "an integer",
    ),
    ("sharing-replicas-key-typo", pool(AZURE, sharing={"mps": {"replica": 4}}), "sharing.mps.replica", "did you mean 'replicas'"),
    ("sharing-mig-on-t4", pool(AZURE, sharing=MIG1G), "gpupools:gpuPools[0].sharing.mig", "MIG-capable"),
    ("sharing-mig-on-eks", pool(AWS, sharing=MIG1G), "gpupools:gpuPools[0].sharing.mig", "MIG manager"),
    (
        "sharing-mig-on-eks-a100",
        pool(AWS, instanceTypes=["p4d.24xlarge"], sharing=MIG1G),
        "gpupools:gpuPools[0].sharing.mig",
        "AKS only",
    ),
    (
        "sharing-mig-unknown-profile",
        pool(AZURE, instanceTypes=[A100], sharing={"mig": {"profile": "MIG5g"}}),
        "sharing.mig.profile",
        "GPU instance profile",
    ),
    ("sharing-mig-no-profile", pool(AZURE, instanceTypes=[A100], sharing={"mig": {}}), "sharing.mig.profile", "is required"),
    (
        "sharing-on-bottlerocket",
        pool(AWS, amiType="BOTTLEROCKET_x86_64_NVIDIA", sharing=TS4),
        "gpupools:gpuPools[0].sharing",
        "Bottlerocket",
    ),
    (
        "sharing-config-label-by-hand",
        pool(AZURE, labels={DEVICE_PLUGIN_CONFIG_LABEL: "time-slicing-4"}),
        f"labels.{DEVICE_PLUGIN_CONFIG_LABEL}",
        "set by gpupools",
    ),
]

SUBNETS = {
    "us-west-2a": "subnet-0aaaaaaaaaaaaaaaa",
    "us-west-2b": "subnet-0bbbbbbbbbbbbbbbb",
    "us-west-2c": "subnet-0cccccccccccccccc",
}
ROLE = "arn:aws:iam::123456789012:role/nodes"


def _gpu_info(sharing: SharingSpec, *, label: str | None) -> NodePoolInfo:
    labels = {**pool_labels("t4", Role.GPU, CapacityType.SPOT), **({DEVICE_PLUGIN_CONFIG_LABEL: label} if label else {})}
    return NodePoolInfo(
        name="t4s0000",
        pool="t4",
        role=Role.GPU,
        capacity=CapacityType.SPOT,
        zones=("1",),
        instance_types=("Standard_NC4as_T4_v3",),
        min_size=0,
        max_size=2,
        labels=frozen_map(labels),
        gpus_per_node=1,
        autoscaler_group_regex="^aks-t4s0000-[0-9]+-vmss$",
        sharing=sharing,
        slots_per_gpu=sharing.replicas,
    )


def _plugin(info: NodePoolInfo) -> Callable[[], Any]:
    def build() -> Any:
        provider = k8s.Provider("k8s", kubeconfig="{}", cluster_identifier="test")
        return NvidiaDevicePlugin("dp", [info], opts=pulumi.ResourceOptions(provider=provider))

    return build


SHARING_COMPONENT_CASES: list[tuple[str, Callable[[], Any], str, str]] = [
    (
        "aks-pool-mig-on-t4",
        lambda: GpuNodePool(
            "t4",
            {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4, "sharing": MIG1G},
            resource_group_name="rg",
            cluster_name="ml",
        ),
        "GpuNodePool(t4).pool.sharing.mig",
        "MIG-capable",
    ),
    (
        "aks-pool-spec-replicas",
        lambda: GpuNodePool(
            "t4",
            GpuPoolSpec(
                name="t4", instance_types=("Standard_NC4as_T4_v3",), max_size=3, sharing=SharingSpec(SharingMode.MPS, replicas=64)
            ),
            resource_group_name="rg",
            cluster_name="ml",
        ),
        "GpuNodePool(t4).pool.sharing.mps.replicas",
        "from 2 to 48",
    ),
    (
        "eks-group-mig",
        lambda: GpuNodeGroup(
            "g1",
            {"name": "g1", "instanceTypes": ["g5.xlarge"], "maxSize": 6, "sharing": MIG1G},
            cluster_name="ml",
            node_role_arn=ROLE,
            subnet_ids_by_zone=SUBNETS,
        ),
        "GpuNodeGroup(g1).pool.sharing.mig",
        "AKS only",
    ),
    (
        "device-plugin-shared-pool-without-label",
        _plugin(_gpu_info(SharingSpec(SharingMode.TIME_SLICING, replicas=4), label=None)),
        f"NvidiaDevicePlugin(dp).pools[0].labels.{DEVICE_PLUGIN_CONFIG_LABEL}",
        "'time-slicing-4'",
    ),
    (
        "device-plugin-label-without-sharing",
        _plugin(_gpu_info(SharingSpec(), label="time-slicing-4")),
        f"NvidiaDevicePlugin(dp).pools[0].labels.{DEVICE_PLUGIN_CONFIG_LABEL}",
        "must be absent",
    ),
]

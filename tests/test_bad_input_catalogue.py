"""The bad-input catalogue: every invalid input fails before anything is registered.

Two entry points, one set of rules:

* every invalid stack config of ``tests/test_config.py`` (``INVALID``), run through the real
  program (``__main__.py``) on the recording mock runtime: ``pulumi up`` would fail with the same
  one-line ``ConfigError`` and, as recorded here, with no resource registered;
* invalid arguments handed straight to the components, the way library users call them: same
  message shape, and no resource of the component registered (for the Kubernetes components the
  only registration is the provider the test itself creates).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pulumi
import pulumi_kubernetes as k8s
import pytest
from gpupools.aws import ClusterAutoscaler, CpuNodeGroup, EksCluster, GpuNodeGroup
from gpupools.azure import AksCluster, CpuNodePool, GpuNodePool
from gpupools.conventions import CapacityType, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes import DcgmExporter, GpuSmokeTest, NvidiaDevicePlugin, PriorityExpander
from gpupools.pools import NodePoolInfo
from gpupools.specs import AutoscalerSpec, ClusterSpec, GpuPoolSpec, NetworkSpec, SystemPoolSpec
from gpupools.testing import PROJECT_ROOT, Run, run_program
from gpupools.xlang.convert import info_to_dict

from tests.automatic_cases import AUTOMATIC_INVALID
from tests.gpu_driver_cases import GPU_DRIVER_INVALID
from tests.k8s_schema import aks_gpu_pool
from tests.karpenter_cases import KARPENTER_INVALID, MAINTENANCE_INVALID, NAP_INVALID
from tests.multi_node_cases import MULTI_NODE_INVALID
from tests.queueing_cases import QUEUEING_INVALID
from tests.sharing_cases import SHARING_COMPONENT_CASES
from tests.test_config import INVALID
from tests.test_cpu_pools import BAD as CPU_POOL_BAD
from tests.test_cpu_pools import with_cpu
from tests.test_node_repair import NODE_REPAIR_INVALID
from tests.upgrade_cases import UPGRADE_INVALID
from tests.warm_cases import WARM_INVALID

MAIN = str(Path(PROJECT_ROOT) / "__main__.py")


def run_main(config: dict[str, Any]) -> Run:
    import runpy

    return run_program(lambda: runpy.run_path(MAIN, run_name="__main__"), config, raise_errors=False)


def example_stack(stack: str, **changes: Any) -> dict[str, Any]:
    """A committed example stack's config with ``changes`` (full keys, e.g. ``aws:region``)."""
    import yaml

    values = yaml.safe_load((Path(PROJECT_ROOT) / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {**values, **changes}


# An unknown region used to be accepted (Azure) or to fail on an internal argument after dozens of
# resources were registered (AWS): now one ConfigError naming the provider key, before anything.
REGION_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("aws-region-unknown", example_stack("aws-dev", **{"aws:region": "eu-west-9"}), "aws:region", "did you mean eu-west-1?"),
    (
        "aws-karpenter-region-unknown",
        example_stack("aws-karpenter-dev", **{"aws:region": "us-west-9"}),
        "aws:region",
        "must be a known AWS region",
    ),
    (
        "azure-location-unknown",
        example_stack("azure-dev", **{"azure-native:location": "eastus9"}),
        "azure-native:location",
        "did you mean eastus?",
    ),
    (
        "azure-nap-location-unknown",
        example_stack("azure-nap-dev", **{"azure-native:location": "westeuorpe"}),
        "azure-native:location",
        "did you mean westeurope?",
    ),
]


def _moved(stack: str, region_key: str, region: str, zones: list[str] | None = None, **pool_types: list[str]) -> dict[str, Any]:
    """An example stack moved to ``region`` (cluster zones replaced when given), with some pools'
    ``instanceTypes`` replaced (``pool_types``: pool name -> types)."""
    import copy

    values = copy.deepcopy(example_stack(stack))
    values[region_key] = region
    if zones is not None:
        values["gpupools:cluster"] = {**values["gpupools:cluster"], "zones": zones}
    for pool in values["gpupools:gpuPools"]:
        if pool["name"] in pool_types:
            pool["instanceTypes"] = pool_types[pool["name"]]
    return values


# Issue 39: what the region catalogs say is checked before anything is registered. The zones are
# DescribeAvailabilityZones' answers as moto records them (catalog.regions.AWS_ZONES: eu-central-1
# has a, b and c); the sizes are what the price catalog's source lists per region (francecentral
# lists no Standard_ND96isr_H100_v5, eu-central-1 no p5.48xlarge).
CATALOG_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "aws-zone-letter-the-region-lacks",
        _moved("aws-karpenter-dev", "aws:region", "eu-central-1", ["eu-central-1a", "eu-central-1b", "eu-central-1d"]),
        "gpupools:cluster.zones[2]",
        "must be an availability zone of eu-central-1 (eu-central-1a, eu-central-1b, eu-central-1c)",
    ),
    (
        "azure-size-not-offered-in-region",
        _moved("azure-dev", "azure-native:location", "francecentral", a100=["Standard_ND96isr_H100_v5"]),
        "gpupools:gpuPools[1].instanceTypes[0]",
        "must be a size offered in francecentral",
    ),
    (
        "aws-size-not-offered-in-region",
        _moved(
            "aws-karpenter-dev",
            "aws:region",
            "eu-central-1",
            ["eu-central-1a", "eu-central-1b", "eu-central-1c"],
            gpu4=["p5.48xlarge"],
        ),
        "gpupools:gpuPools[1].instanceTypes[0]",
        "regions that list it: eu-north-1, eu-west-2,",
    ),
    (
        "catalog-allow-unlisted-names-no-size-of-the-stack",
        example_stack("azure-dev", **{"gpupools:catalog": {"allowUnlisted": ["Standard_ND96isr_H100_v6"]}}),
        "gpupools:catalog.allowUnlisted[0]",
        "must name a size one of the stack's pools uses",
    ),
    (
        "catalog-unknown-key",
        example_stack("azure-dev", **{"gpupools:catalog": {"allowUnlised": []}}),
        "gpupools:catalog.allowUnlised",
        "did you mean",
    ),
]

GPU_METRICS_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "gpu-metrics-enabled-not-bool",
        example_stack("azure-dev", **{"gpupools:gpuMetrics": {"enabled": "yes"}}),
        "gpupools:gpuMetrics.enabled",
        "true or false",
    ),
    (
        "gpu-metrics-unknown-key",
        example_stack("aws-dev", **{"gpupools:gpuMetrics": {"servicemonitor": True}}),
        "gpupools:gpuMetrics.servicemonitor",
        "serviceMonitor",
    ),
    (
        "gpu-metrics-labels-without-service-monitor",
        example_stack("aws-karpenter-dev", **{"gpupools:gpuMetrics": {"serviceMonitorLabels": {"release": "kps"}}}),
        "gpupools:gpuMetrics.serviceMonitorLabels",
        "needs serviceMonitor: true",
    ),
]


def _renamed(stack: str, key: str, to: str) -> dict[str, Any]:
    """A committed example stack's config with the top-level key ``key`` spelt ``to``."""
    values = example_stack(stack)
    return {to if k == key else k: v for k, v in values.items()}


# A misspelt required top-level key used to be reported as missing ("gpupools:cloud: is required"):
# __main__.py reads the cloud before the keys were checked. Now the unknown key, with the near one.
TOP_LEVEL_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "top-level-cloud-wrong-case",
        _renamed("aws-dev", "gpupools:cloud", "gpupools:Cloud"),
        "gpupools:Cloud",
        "did you mean 'cloud'?",
    ),
    (
        "top-level-gpu-pools-misspelt",
        _renamed("azure-dev", "gpupools:gpuPools", "gpupools:gpuPool"),
        "gpupools:gpuPool",
        "did you mean 'gpuPools'?",
    ),
]

STACK_CASES = (
    INVALID
    + TOP_LEVEL_INVALID
    + KARPENTER_INVALID
    + NAP_INVALID
    + MAINTENANCE_INVALID
    + REGION_INVALID
    + MULTI_NODE_INVALID
    + GPU_DRIVER_INVALID
    + NODE_REPAIR_INVALID
    + GPU_METRICS_INVALID
    + CATALOG_INVALID
    + QUEUEING_INVALID
    + UPGRADE_INVALID
    + WARM_INVALID
    + AUTOMATIC_INVALID
)


@pytest.mark.parametrize(("case", "raw", "path", "rule"), STACK_CASES, ids=[c[0] for c in STACK_CASES])
def test_invalid_stack_config_registers_nothing(case: str, raw: dict[str, Any], path: str, rule: str) -> None:
    result = run_main(raw)
    assert isinstance(result.error, ConfigError), f"{case}: expected a ConfigError, got {result.error!r}"
    assert path in result.error.path and rule in str(result.error)
    assert result.registrations == [], f"{case}: registered {[r.name for r in result.registrations]}"


@pytest.mark.parametrize(("case", "base", "entry", "path", "words"), CPU_POOL_BAD, ids=[c[0] for c in CPU_POOL_BAD])
def test_invalid_cpu_pool_config_registers_nothing(
    case: str, base: dict[str, Any], entry: dict[str, Any], path: str, words: str
) -> None:
    result = run_main(with_cpu(base, entry))
    assert isinstance(result.error, ConfigError), f"{case}: expected a ConfigError, got {result.error!r}"
    assert result.error.path == f"gpupools:{path}" and words in str(result.error)
    assert result.registrations == [], f"{case}: registered {[r.name for r in result.registrations]}"


def test_cpu_components_refuse_gpu_pools_and_register_nothing() -> None:
    errors: list[ConfigError] = []

    def program() -> None:
        attempts: list[Callable[[], Any]] = [
            lambda: CpuNodePool("c", T4, resource_group_name="rg", cluster_name="ml"),
            lambda: CpuNodeGroup("c", G1, cluster_name="ml", node_role_arn="arn:x", subnet_ids_by_zone=SUBNETS),
        ]
        for attempt in attempts:
            try:
                attempt()
            except ConfigError as error:
                errors.append(error)

    run = run_program(program)
    assert [e.path for e in errors] == ["CpuNodePool(c).pool.instanceTypes[0]", "CpuNodeGroup(c).pool.instanceTypes[0]"]
    assert all("gpuPools" in str(e) for e in errors)
    assert run.registrations == []


# --- the components' own arguments ---------------------------------------------------------------

T4 = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}
G1 = {"name": "g1", "instanceTypes": ["g4dn.xlarge", "g5.xlarge"], "maxSize": 6}
SUBNETS = {
    "us-west-2a": "subnet-0aaaaaaaaaaaaaaaa",
    "us-west-2b": "subnet-0bbbbbbbbbbbbbbbb",
    "us-west-2c": "subnet-0cccccccccccccccc",
}
ROLE = "arn:aws:iam::123456789012:role/nodes"
AKS_CLUSTER = ClusterSpec(name="ml", kubernetes_version="1.35", zones=("1", "2", "3"))
AKS_SYSTEM = SystemPoolSpec(instance_types=("Standard_D4s_v5",))
EKS_CLUSTER = {"name": "ml", "zones": ["us-west-2a", "us-west-2b", "us-west-2c"]}


def aks_pool(**changes: Any) -> Callable[[], Any]:
    return lambda: GpuNodePool("t4", {**T4, **changes}, resource_group_name="rg", cluster_name="ml")


def eks_group(**changes: Any) -> Callable[[], Any]:
    return lambda: GpuNodeGroup("g1", {**G1, **changes}, cluster_name="ml", node_role_arn=ROLE, subnet_ids_by_zone=SUBNETS)


def provider() -> k8s.Provider:
    return k8s.Provider("k8s", kubeconfig="{}", cluster_identifier="test")


def with_provider(build: Callable[[pulumi.ResourceOptions], Any]) -> Callable[[], Any]:
    return lambda: build(pulumi.ResourceOptions(provider=provider()))


SYSTEM_INFO = NodePoolInfo(
    name="system",
    pool="system",
    role=Role.SYSTEM,
    capacity=CapacityType.ON_DEMAND,
    zones=("1",),
    instance_types=("Standard_D4s_v5",),
    min_size=2,
    max_size=4,
    autoscaler_group_regex="^aks-system-[0-9]+-vmss$",
)

SYSTEM_INFO_DICT = info_to_dict(SYSTEM_INFO)

COMPONENT_CASES: list[tuple[str, Callable[[], Any], str, str]] = [
    ("aks-pool-typo", aks_pool(maxSise=3), "GpuNodePool(t4).pool.maxSise", "did you mean 'maxSize'"),
    ("aks-pool-retired", aks_pool(instanceTypes=["Standard_NC24s_v3"]), "GpuNodePool(t4).pool.instanceTypes[0]", "retired"),
    ("aks-pool-non-gpu", aks_pool(instanceTypes=["Standard_D8s_v5"]), "GpuNodePool(t4).pool.instanceTypes[0]", "GPU VM size"),
    ("aks-pool-name", aks_pool(name="gputeslat4"), "GpuNodePool(t4).pool.name", "at most 7"),
    (
        "aks-pool-fallback",
        aks_pool(spot=False, onDemandFallback=True),
        "GpuNodePool(t4).pool.onDemandFallback",
        "already on-demand",
    ),
    ("aks-pool-zone", aks_pool(zones=["4"]), "GpuNodePool(t4).pool.zones[0]", '"1", "2" or "3"'),
    (
        "aks-pool-spec-object",
        lambda: GpuNodePool(
            "t4",
            GpuPoolSpec(name="t4", instance_types=("Standard_D4s_v5",), max_size=3),
            resource_group_name="rg",
            cluster_name="ml",
        ),
        "GpuNodePool(t4).pool.instanceTypes[0]",
        "GPU VM size",
    ),
    (
        "aks-pool-after",
        lambda: GpuNodePool("t4", T4, resource_group_name="rg", cluster_name="ml", after="previous"),  # type: ignore[arg-type]
        "GpuNodePool(t4).after",
        "Pulumi resource",
    ),
    (
        "aks-cluster-name",
        lambda: AksCluster("ml", cluster=ClusterSpec(name="ML", kubernetes_version="1.35"), system_pool=AKS_SYSTEM),
        "cluster.name",
        "lowercase",
    ),
    (
        "aks-cluster-version",
        lambda: AksCluster("ml", cluster=ClusterSpec(name="ml", kubernetes_version="1.27"), system_pool=AKS_SYSTEM),
        "kubernetesVersion",
        "supported",
    ),
    (
        "aks-system-one-node",
        lambda: AksCluster(
            "ml", cluster=AKS_CLUSTER, system_pool=SystemPoolSpec(instance_types=("Standard_D4s_v5",), min_size=1)
        ),
        "minSize",
        ">= 2",
    ),
    (
        "aks-network-public",
        lambda: AksCluster("ml", cluster=AKS_CLUSTER, system_pool=AKS_SYSTEM, network=NetworkSpec(cidr="20.0.0.0/16")),
        "cidr",
        "private",
    ),
    (
        "eks-mixed-shapes",
        eks_group(instanceTypes=["g5.xlarge", "g5.2xlarge"]),
        "GpuNodeGroup(g1).pool.instanceTypes[1]",
        "shape of g5.xlarge",
    ),
    ("eks-non-gpu", eks_group(instanceTypes=["m6i.xlarge"]), "GpuNodeGroup(g1).pool.instanceTypes[0]", "GPU"),
    ("eks-zone-format", eks_group(zones=["2"]), "GpuNodeGroup(g1).pool.zones[0]", "us-west-2a"),
    (
        "eks-taint-no-value",
        eks_group(taints=[{"key": "dedicated", "value": "", "effect": "NoSchedule"}]),
        "GpuNodeGroup(g1).pool.taints[0].value",
        "non-empty",
    ),
    (
        "eks-reserved-label",
        eks_group(labels={"kubernetes.io/role": "gpu"}),
        "GpuNodeGroup(g1).pool.labels.kubernetes.io/role",
        "reserved",
    ),
    ("eks-too-many-tags", eks_group(labels={f"team{i}": "x" for i in range(45)}), "GpuNodeGroup(g1).pool.labels", "50 tags"),
    ("eks-spot-price", eks_group(spotMaxPrice=0.5), "GpuNodeGroup(g1).pool.spotMaxPrice", "Azure only"),
    (
        "eks-cluster-name",
        lambda: GpuNodeGroup("g1", G1, cluster_name="ML_dev", node_role_arn=ROLE, subnet_ids_by_zone=SUBNETS),
        "GpuNodeGroup(g1).cluster_name",
        "lowercase",
    ),
    (
        "eks-one-zone",
        lambda: EksCluster("ml", {"name": "ml", "zones": ["us-west-2a"]}),
        "EksCluster(ml).cluster.zones",
        "at least 2",
    ),
    (
        "eks-vpc-without-subnets",
        lambda: EksCluster("ml", EKS_CLUSTER, network={"vpcId": "vpc-0123456789abcdef0"}),
        "EksCluster(ml).network",
        "go together",
    ),
    (
        "eks-system-gpu",
        lambda: EksCluster("ml", EKS_CLUSTER, system_pool={"instanceTypes": ["g5.xlarge"]}),
        "EksCluster(ml).system_pool.instanceTypes[0]",
        "GPU",
    ),
    (
        "autoscaler-version",
        lambda: ClusterAutoscaler("ca", "ml", "us-west-2", "1.20", "arn:aws:iam::123456789012:oidc-provider/x", "https://x"),
        "ClusterAutoscaler(ca).kubernetes_version",
        "pinned cluster-autoscaler image",
    ),
    (
        "autoscaler-seconds",
        lambda: ClusterAutoscaler(
            "ca", "ml", "us-west-2", "1.35", "arn:x", "https://x", autoscaler=AutoscalerSpec(max_node_provision_time="900s")
        ),
        "ClusterAutoscaler(ca)",
        "whole minutes",
    ),
    (
        "device-plugin-no-gpu-pool",
        with_provider(lambda o: NvidiaDevicePlugin("dp", [SYSTEM_INFO], opts=o)),
        "NvidiaDevicePlugin(dp).pools",
        "GPU",
    ),
    (
        "dcgm-exporter-no-gpu-pool",
        with_provider(lambda o: DcgmExporter("dcgm", [SYSTEM_INFO], opts=o)),
        "DcgmExporter(dcgm).pools",
        "GPU pool",
    ),
    (
        "dcgm-exporter-bad-version",
        with_provider(lambda o: DcgmExporter("dcgm", [aks_gpu_pool("t4")], version="repo/dcgm:4", opts=o)),
        "DcgmExporter(dcgm).version",
        "image tag",
    ),
    (
        "priority-expander-empty",
        with_provider(lambda o: PriorityExpander("pe", [], opts=o)),
        "PriorityExpander(pe)",
        "at least one",
    ),
    ("smoke-test-system-pool", with_provider(lambda o: GpuSmokeTest("st", SYSTEM_INFO, opts=o)), "GpuSmokeTest(st).pool", "GPU"),
]
COMPONENT_CASES += SHARING_COMPONENT_CASES
COMPONENT_CASES += [
    ("aks-pool-gpu-driver-managed", aks_pool(gpuDriver="managed"), "GpuNodePool(t4).pool.gpuDriver", "cluster autoscaler"),
    (
        "aks-pool-gpu-driver-none-mig",
        lambda: GpuNodePool(
            "a100",
            {
                "name": "a100",
                "instanceTypes": ["Standard_NC24ads_A100_v4"],
                "maxSize": 2,
                "gpuDriver": "none",
                "sharing": {"mig": {"profile": "MIG1g"}},
            },
            resource_group_name="rg",
            cluster_name="ml",
        ),
        "GpuNodePool(a100).pool.sharing",
        "needs gpuDriver install",
    ),
    ("eks-group-gpu-driver-managed", eks_group(gpuDriver="managed"), "GpuNodeGroup(g1).pool.gpuDriver", "AKS only"),
    (
        "eks-group-gpu-driver-none-bottlerocket",
        eks_group(gpuDriver="none", amiType="BOTTLEROCKET_x86_64_NVIDIA"),
        "GpuNodeGroup(g1).pool.gpuDriver",
        "Bottlerocket",
    ),
]


def _package(component: str, args: dict[str, Any], name: str = "x") -> Callable[[], Any]:
    """A component of the cross-language package (``gpupools.xlang``), called as the provider calls it."""
    from gpupools import xlang

    [cls] = [c for c in xlang.COMPONENTS if c.__name__ == component]
    return lambda: cls(name, args)  # type: ignore[call-arg]


def _served_unknown() -> Any:
    from tests.test_component_package import as_served

    return as_served(None, "urn:upstream", known=False)


_PKG_T4 = {"name": "t4", "instance_types": ["Standard_NC4as_T4_v3"], "max_size": 4}
COMPONENT_CASES += [
    (
        "package-pool-typo",
        _package("GpuNodePool", {"pool": {**_PKG_T4, "max_sise": 3}, "resource_group_name": "rg", "cluster_name": "c"}, "t4"),
        "GpuNodePool(t4).pool.maxSise",
        "did you mean 'maxSize'",
    ),
    (
        "package-pool-fractional-size",
        _package("GpuNodePool", {"pool": {**_PKG_T4, "max_size": 2.5}, "resource_group_name": "rg", "cluster_name": "c"}, "t4"),
        "GpuNodePool(t4).pool.maxSize",
        "integer",
    ),
    (
        "package-nat",
        _package("EksCluster", {"cluster": {"name": "ml"}, "nat": "two"}, "ml"),
        "EksCluster(ml).nat",
        "must be one of",
    ),
    (
        "package-pool-info-capacity",
        with_provider(lambda o: _package("NvidiaDevicePlugin", {"pools": [{**SYSTEM_INFO_DICT, "capacity": "cheap"}]}, "dp")()),
        "NvidiaDevicePlugin(dp).pools[0].capacity",
        "must be one of",
    ),
    (
        "package-pools-unknown",
        with_provider(lambda o: _package("NvidiaDevicePlugin", {"pools": _served_unknown()}, "dp")()),
        "NvidiaDevicePlugin(dp).pools",
        "must be known when the component is constructed",
    ),
]


@pytest.mark.parametrize(("case", "build", "path", "rule"), COMPONENT_CASES, ids=[c[0] for c in COMPONENT_CASES])
def test_invalid_component_args_register_nothing(case: str, build: Callable[[], Any], path: str, rule: str) -> None:
    result = run_program(build, {}, raise_errors=False)
    assert isinstance(result.error, ConfigError), f"{case}: expected a ConfigError, got {result.error!r}"
    assert path in str(result.error).split(": ", 1)[0], f"{case}: {result.error}"
    assert rule in str(result.error), f"{case}: {result.error}"
    assert ", got " in str(result.error)
    ours = [r for r in result.registrations if r.type != "pulumi:providers:kubernetes"]
    assert ours == [], f"{case}: registered {[(r.type, r.name) for r in ours]}"


def test_catalogue_size() -> None:
    assert len(INVALID) + len(COMPONENT_CASES) >= 60
    assert len(COMPONENT_CASES) >= 25


def test_a_valid_config_round_trips() -> None:
    """Loading the same stack config twice gives equal specs, through the real program's loader."""
    from gpupools import config
    from gpupools.testing import stack_config

    for stack in ("azure-dev", "aws-dev"):
        raw = stack_config(stack)
        region = raw.get("aws:region")
        first, second = config.parse(raw, region), config.parse(json.loads(json.dumps(raw)), region)
        assert first == second

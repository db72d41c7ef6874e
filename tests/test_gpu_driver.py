"""``gpuPools[].gpuDriver``: parsing, the cloud settings each mode sends, and where the device plugin lands.

Defaults (``install`` sends what every pool always sent), behaviour per cloud and provisioner (the
AKS ``gpuProfile.driver``, the AKSNodeClass ``gpu.mode``, EKS unchanged), the scheduler model (the
device plugin's affinity and tolerations, from the real components' ``NodePoolInfo``s, land on the
nodes of ``install`` pools and on no node of a ``none``, ``managed`` or Bottlerocket pool), and the
errors (one ``ConfigError`` each; the stack-level ones are also in the bad-input catalogue).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import pulumi
import pytest
from gpupools import config
from gpupools.aws import GpuNodeGroup
from gpupools.aws.karpenter_nodes import KarpenterNodePools
from gpupools.azure import GpuNodePool, NapNodePools
from gpupools.azure.nap_nodes import node_class_spec
from gpupools.azure.node_pool import GPU_PROFILE_DRIVER, plan_agent_pools
from gpupools.conventions import Role
from gpupools.errors import ConfigError
from gpupools.kubernetes import NvidiaDevicePlugin
from gpupools.kubernetes.device_plugin import is_served
from gpupools.pools import NodePoolInfo
from gpupools.specs import AmiType, GpuDriver
from gpupools.testing import run_program, run_stack, stack_config
from pulumi_azure_native import containerservice

from tests.crd_schema import validate_custom_resource
from tests.gpu_driver_cases import GPU_DRIVER_INVALID, azure, with_pools
from tests.k8s_schema import affinity_matches, node_labels, untolerated

ROLE_ARN = "arn:aws:iam::123456789012:role/ml-dev-nodes"
SUBNETS = {
    "us-west-2a": "subnet-0aaaaaaaaaaaaaaaa",
    "us-west-2b": "subnet-0bbbbbbbbbbbbbbbb",
    "us-west-2c": "subnet-0cccccccccccccccc",
}
AKS_T4 = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}
AKS_A100 = {"name": "a100", "instanceTypes": ["Standard_NC24ads_A100_v4"], "maxSize": 2}
EKS_T4 = {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "maxSize": 6}
EKS_A10 = {"name": "a10", "instanceTypes": ["g5.xlarge"], "maxSize": 6}
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"


# --- parsing --------------------------------------------------------------------------------------


def test_default_is_install_on_every_cloud() -> None:
    for stack in ("azure-dev", "azure-nap-dev", "aws-dev", "aws-karpenter-dev"):
        raw = stack_config(stack)
        spec = config.parse(raw, raw.get("aws:region"))
        assert [p.gpu_driver for p in spec.gpu_pools] == [GpuDriver.INSTALL] * len(spec.gpu_pools), stack
        assert all(p.needs_device_plugin for p in spec.gpu_pools if p.ami_type is not AmiType.BOTTLEROCKET_NVIDIA)


@pytest.mark.parametrize("value", ["none", "install"])
def test_parsed_from_gpu_pools(value: str) -> None:
    raw = with_pools(azure(), {"gpuDriver": value})
    spec = config.parse(raw, None)
    assert spec.gpu_pools[0].gpu_driver is GpuDriver(value)
    assert spec.gpu_pools[1].gpu_driver is GpuDriver.INSTALL
    assert spec.gpu_pools[0].needs_device_plugin is (value == "install")


def test_cpu_pools_do_not_take_it() -> None:
    raw = azure()
    raw["gpupools:cpuPools"] = [{**raw["gpupools:cpuPools"][0], "gpuDriver": "none"}]
    with pytest.raises(ConfigError) as caught:
        config.parse(raw, None)
    assert caught.value.path == "gpupools:cpuPools[0].gpuDriver" and "GPU pools only" in str(caught.value)


# --- AKS agent pools (cluster-autoscaler) -----------------------------------------------------------


def test_aks_install_plan_is_what_it_always_was() -> None:
    """``gpuDriver: install`` written out is the pool without the key: same gpuProfile, same name
    digest (the example stacks' snapshots pin that those did not change)."""
    spec = config.parse_gpu_pool(AKS_T4, config.Cloud.AZURE, "p")
    explicit = config.parse_gpu_pool({**AKS_T4, "gpuDriver": "install"}, config.Cloud.AZURE, "p")
    plans, same_plans = plan_agent_pools(spec, ("1", "2", "3")), plan_agent_pools(explicit, ("1", "2", "3"))
    assert len(plans) == len(same_plans) == 2
    for plan, same in zip(plans, same_plans, strict=True):
        assert plan.args["gpu_profile"] == {"driver": containerservice.GPUDriver.INSTALL.value}
        assert plan.args == same.args and plan.info.needs_device_plugin and plan.info.gpu_driver is GpuDriver.INSTALL


def test_aks_none_sends_driver_none_and_renames_the_pool() -> None:
    install = config.parse_gpu_pool(AKS_T4, config.Cloud.AZURE, "p")
    none = config.parse_gpu_pool({**AKS_T4, "gpuDriver": "none"}, config.Cloud.AZURE, "p")
    install_plans, none_plans = plan_agent_pools(install, ("1", "2", "3")), plan_agent_pools(none, ("1", "2", "3"))
    assert [p.capacity for p in none_plans] == [p.capacity for p in install_plans]
    for old, new in zip(install_plans, none_plans, strict=True):
        assert new.args["gpu_profile"] == {"driver": containerservice.GPUDriver.NONE.value}
        # gpuProfile is create-only: a new driver is a new agent pool name, never an in-place update.
        assert new.name != old.name and new.name[:-4] == old.name[:-4]
        rest = {k: v for k, v in new.args.items() if k not in ("gpu_profile", "agent_pool_name", "node_labels")}
        assert rest == {k: v for k, v in old.args.items() if k not in ("gpu_profile", "agent_pool_name", "node_labels")}
        # Its nodes say the plugin is someone else's: gpupools' plugin selects by label (issue 28).
        assert new.args["node_labels"] == {**old.args["node_labels"], "gpupools.io/device-plugin": "external"}
        assert not new.info.needs_device_plugin and new.info.gpu_driver is GpuDriver.NONE


def test_pinned_sdk_has_driver_only() -> None:
    """The facts the AKS rules rest on: ``GPUDriver`` is ``Install``/``None`` and ``GPUProfileArgs``
    takes only ``driver`` (no ``nvidia.managementMode``). When a provider bump adds the preview
    block, this fails, and ``gpuDriver: managed`` deserves a second look (docs/gpu-driver.md)."""
    import inspect

    assert {d.value for d in containerservice.GPUDriver} == {"Install", "None"}
    assert list(inspect.signature(containerservice.GPUProfileArgs).parameters) == ["driver"]
    assert set(GPU_PROFILE_DRIVER) == {GpuDriver.INSTALL, GpuDriver.NONE}
    assert set(GPU_PROFILE_DRIVER.values()) == {d.value for d in containerservice.GPUDriver}


def test_aks_component_registers_driver_none_with_replace_on_change() -> None:
    run = run_program(lambda: GpuNodePool("t4", {**AKS_T4, "gpuDriver": "none"}, resource_group_name="rg", cluster_name="ml"))
    pools = run.of_type("azure-native:containerservice:AgentPool")
    assert len(pools) == 2
    for registration in pools:
        assert registration.inputs["gpuProfile"] == {"driver": "None"}
        assert "gpuProfile" in registration.options["replaceOnChanges"]


# --- AKS Node Auto Provisioning --------------------------------------------------------------------


@pytest.mark.parametrize(("driver", "mode"), [("install", "Driver"), ("none", "None")])
def test_nap_node_class_gpu_mode(driver: str, mode: str) -> None:
    pool = config.parse_gpu_pool({**AKS_T4, "gpuDriver": driver}, config.Cloud.AZURE, "p")
    spec = node_class_spec(pool)
    assert spec["gpu"] == {"mode": mode}
    manifest = {"apiVersion": "karpenter.azure.com/v1beta1", "kind": "AKSNodeClass", "metadata": {"name": "t4"}, "spec": spec}
    assert validate_custom_resource(manifest, provider="azure") == []


def test_nap_node_class_refuses_a_mode_the_crd_lacks() -> None:
    """The pinned CRD's enum is Driver|None: a third value is what ``gpu_driver`` keeps out."""
    manifest = {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "t4"},
        "spec": {"imageFamily": "Ubuntu", "gpu": {"mode": "Managed"}},
    }
    assert validate_custom_resource(manifest, provider="azure") != []


# --- EKS --------------------------------------------------------------------------------------------


def test_eks_none_keeps_the_node_group_as_it_was() -> None:
    """EKS has no driver-less NVIDIA AMI: a none group is the install group, minus our device plugin."""

    def groups(pool: Mapping[str, Any]) -> Callable[[], Any]:
        return lambda: GpuNodeGroup("t4", pool, "ml-dev", ROLE_ARN, SUBNETS)

    install, none = run_program(groups(EKS_T4)), run_program(groups({**EKS_T4, "gpuDriver": "none"}))
    kind = "aws:eks/nodeGroup:NodeGroup"
    external = ("gpupools.io/device-plugin", "external")

    def without_external(inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The group minus the one label a none group adds (and the autoscaler template tag of it)."""
        labels = {k: v for k, v in inputs["labels"].items() if (k, v) != external}
        tags = {k: v for k, v in (inputs.get("tags") or {}).items() if not k.endswith("label/gpupools.io/device-plugin")}
        return {**inputs, "labels": labels, "tags": tags}

    by_name = [{r.inputs["nodeGroupName"]: without_external(r.inputs) for r in run.of_type(kind)} for run in (install, none)]
    assert by_name[0] == by_name[1] and len(by_name[0]) == 6
    assert all(dict(r.inputs["labels"]).get(external[0]) == external[1] for r in none.of_type(kind))
    assert {r.inputs["amiType"] for r in none.of_type(kind)} == {AmiType.AL2023_NVIDIA.value}


# --- the scheduler model: every valid mode on every cloud and provisioner ---------------------------

Builder = Callable[[Sequence[Mapping[str, Any]]], list[NodePoolInfo]]


def aks_agent_pools(pools: Sequence[Mapping[str, Any]]) -> list[NodePoolInfo]:
    return [info for pool in pools for info in GpuNodePool(pool["name"], pool, resource_group_name="rg", cluster_name="ml").pools]


def aks_nap(pools: Sequence[Mapping[str, Any]]) -> list[NodePoolInfo]:
    return NapNodePools("nap", pools, location="eastus", zones=["1", "2", "3"], consolidate_after="10m").pools


def eks_node_groups(pools: Sequence[Mapping[str, Any]]) -> list[NodePoolInfo]:
    return [group for pool in pools for group in GpuNodeGroup(pool["name"], pool, "ml-dev", ROLE_ARN, SUBNETS).groups]


def eks_karpenter(pools: Sequence[Mapping[str, Any]]) -> list[NodePoolInfo]:
    return KarpenterNodePools("kp", pools, "ml-dev", "ml-dev-nodes", zones=sorted(SUBNETS)).pools


PLATFORMS: list[tuple[str, Builder, Mapping[str, Any], Mapping[str, Any]]] = [
    ("aks-cluster-autoscaler", aks_agent_pools, AKS_T4, AKS_A100),
    ("aks-nap", aks_nap, AKS_T4, AKS_A100),
    ("eks-cluster-autoscaler", eks_node_groups, EKS_T4, EKS_A10),
    ("eks-karpenter", eks_karpenter, EKS_T4, EKS_A10),
]
"""(id, builder of the real component's pools, the pool under test, an install pool beside it)."""

VARIANTS: list[tuple[str, dict[str, Any], bool]] = [
    ("install", {}, True),
    ("install-explicit", {"gpuDriver": "install"}, True),
    ("none", {"gpuDriver": "none"}, False),
]
"""(id, keys of the pool under test, whether gpupools' device plugin serves it)."""

BOTTLEROCKET = ("bottlerocket", {"amiType": AmiType.BOTTLEROCKET_NVIDIA.value}, False)

CASES = [
    (f"{platform}-{variant}", build, {**pool, **keys}, other, served)
    for platform, build, pool, other in PLATFORMS
    for variant, keys, served in VARIANTS + ([BOTTLEROCKET] if platform.startswith("eks") else [])
]


def lands(plugin: NvidiaDevicePlugin, pool: NodePoolInfo) -> bool:
    """True when the plugin's pod would schedule onto a node of ``pool`` (affinity and taints)."""
    return affinity_matches(plugin.affinity, node_labels(pool)) and not untolerated(plugin.tolerations, pool.taints)


@pytest.mark.parametrize(("case", "build", "pool", "other", "served"), CASES, ids=[c[0] for c in CASES])
def test_device_plugin_lands_only_where_gpupools_owns_the_plugin(
    case: str, build: Builder, pool: dict[str, Any], other: Mapping[str, Any], served: bool
) -> None:
    seen: dict[str, Any] = {}

    def program() -> None:
        infos = build([pool, other])
        seen["infos"] = infos
        seen["plugin"] = NvidiaDevicePlugin("gpu", infos, opts=pulumi.ResourceOptions())

    run_program(program)
    infos: list[NodePoolInfo] = seen["infos"]
    plugin: NvidiaDevicePlugin = seen["plugin"]
    under_test = [i for i in infos if i.pool == pool["name"]]
    beside = [i for i in infos if i.pool == other["name"]]
    assert under_test and beside
    expected = GpuDriver(pool.get("gpuDriver", "install"))
    assert {i.gpu_driver for i in under_test} == {expected}, case
    for info in under_test:
        assert is_served(info) is served and lands(plugin, info) is served, f"{case}: {info.name}"
    for info in beside:
        assert is_served(info) and lands(plugin, info), f"{case}: {info.name}"


@pytest.mark.parametrize(("platform", "build", "pool", "other"), PLATFORMS, ids=[p[0] for p in PLATFORMS])
def test_a_managed_pool_is_never_served(platform: str, build: Builder, pool: Mapping[str, Any], other: Mapping[str, Any]) -> None:
    """The config refuses managed everywhere today; a NodePoolInfo that says so (and, since the plugin
    selects by label, carries ``gpupools.io/device-plugin=external``) is left out, whatever its
    ``needs_device_plugin`` (library users build these by hand). Without the label it is refused:
    ``test_a_none_pool_without_the_external_label_is_refused``."""
    seen: dict[str, Any] = {}

    def program() -> None:
        infos = build([pool, other])
        managed = [
            dataclasses.replace(i, gpu_driver=GpuDriver.MANAGED, labels={**i.labels, "gpupools.io/device-plugin": "external"})
            for i in infos
            if i.pool == pool["name"]
        ]
        assert all(m.needs_device_plugin for m in managed)
        seen["managed"] = managed
        seen["plugin"] = NvidiaDevicePlugin("gpu", [*managed, *(i for i in infos if i.pool != pool["name"])])

    run_program(program)
    assert seen["managed"]
    for info in seen["managed"]:
        assert not is_served(info) and not lands(seen["plugin"], info), f"{platform}: {info.name}"


def test_a_none_pool_without_the_external_label_is_refused() -> None:
    """The plugin selects by label: an unserved pool built by hand without
    ``gpupools.io/device-plugin=external`` would get a second plugin, so it is refused by name."""

    def program() -> None:
        infos = aks_agent_pools([AKS_T4])
        unlabelled = dataclasses.replace(infos[0], name="t4other", gpu_driver=GpuDriver.NONE, needs_device_plugin=False)
        NvidiaDevicePlugin("gpu", [*infos, unlabelled])

    run = run_program(program, raise_errors=False)
    assert isinstance(run.error, ConfigError) and "unserved GPU pool" in str(run.error)
    assert run.error.path == "NvidiaDevicePlugin(gpu).pools[2].labels.gpupools.io/device-plugin"


# --- the stacks -------------------------------------------------------------------------------------

STACKS = ["azure-dev", "azure-nap-dev", "aws-dev", "aws-karpenter-dev"]


def registered_node_labels(run: Any) -> list[dict[str, str]]:
    """The node labels of every pool the stack registered: AKS agent pools, EKS node groups, Karpenter
    and NAP NodePools."""
    found = [dict(r.inputs.get("nodeLabels") or {}) for r in run.of_type("azure-native:containerservice:AgentPool")]
    found += [dict(r.inputs.get("labels") or {}) for r in run.of_type("aws:eks/nodeGroup:NodeGroup")]
    found += [
        dict(r.inputs["spec"]["template"]["metadata"]["labels"]) for r in run.of_type("kubernetes:karpenter.sh/v1:NodePool")
    ]
    return found


def plugin_pools(run: Any) -> list[str]:
    """The pools whose nodes the plugin's affinity selects (it names no pool: issue 28)."""
    [daemon_set] = [r for r in run.of_type(DAEMON_SET) if r.inputs["metadata"]["name"] == "nvidia-device-plugin"]
    affinity = daemon_set.inputs["spec"]["template"]["spec"]["affinity"]
    return sorted({labels["gpupools.io/pool"] for labels in registered_node_labels(run) if affinity_matches(affinity, labels)})


def drop_sharing(pool: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pool.items() if k != "sharing"}


@pytest.mark.parametrize("stack", STACKS)
def test_stack_serves_install_pools_and_skips_the_smoke_test_of_none_pools(stack: str) -> None:
    raw = stack_config(stack)
    pools = [drop_sharing(p) for p in raw["gpupools:gpuPools"]]
    first, *rest = pools
    overrides = {"gpupools:gpuPools": [{**first, "gpuDriver": "none"}, *rest], "gpupools:smokeTest": {"enabled": True}}
    run = run_stack(stack, overrides=overrides)
    served = {p["name"] for p in rest if p.get("amiType") != AmiType.BOTTLEROCKET_NVIDIA.value}
    assert set(plugin_pools(run)) == served
    jobs = {r.inputs["metadata"]["name"] for r in run.of_type(JOB)}
    assert jobs and not any(first["name"] in name.split("-") for name in jobs), jobs


@pytest.mark.parametrize("stack", STACKS)
def test_stack_with_only_none_pools_has_no_device_plugin(stack: str) -> None:
    raw = stack_config(stack)
    pools = [{**drop_sharing(p), "gpuDriver": "none"} for p in raw["gpupools:gpuPools"]]
    pools = [p for p in pools if p.get("amiType") != AmiType.BOTTLEROCKET_NVIDIA.value]
    run = run_stack(stack, overrides={"gpupools:gpuPools": pools, "gpupools:smokeTest": {"enabled": True}})
    names = {r.inputs["metadata"]["name"] for r in run.of_type(DAEMON_SET)}
    assert "nvidia-device-plugin" not in names
    assert run.of_type(JOB) == []


# --- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "raw", "path", "rule"), GPU_DRIVER_INVALID, ids=[c[0] for c in GPU_DRIVER_INVALID])
def test_invalid_combinations_are_one_config_error(case: str, raw: dict[str, Any], path: str, rule: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config.parse(raw, raw.get("aws:region"))
    assert caught.value.path == path, case
    assert rule in str(caught.value), case


def test_every_managed_refusal_names_its_reason() -> None:
    """One refusal per cloud and provisioner, each saying why that path cannot do it."""
    messages = {}
    for case, raw, _path, _rule in GPU_DRIVER_INVALID:
        if case.startswith("managed-"):
            with pytest.raises(ConfigError) as caught:
                config.parse(raw, raw.get("aws:region"))
            messages[case] = str(caught.value)
    assert set(messages) == {"managed-aks", "managed-nap", "managed-eks", "managed-eks-karpenter"}
    assert "autoscaler" in messages["managed-aks"] and "3.29" in messages["managed-aks"]
    assert "AKSNodeClass" in messages["managed-nap"] and "v1.14.2" in messages["managed-nap"]
    assert "AKS only" in messages["managed-eks"] and "AKS only" in messages["managed-eks-karpenter"]


def test_library_cpu_pool_spec_with_a_driver_is_refused() -> None:
    from gpupools import rules
    from gpupools.specs import Cloud

    spec = dataclasses.replace(
        config.parse_cpu_pool({"name": "cpu", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 2}, Cloud.AZURE, "p"),
        gpu_driver=GpuDriver.NONE,
    )
    assert spec.role is Role.CPU
    with pytest.raises(ConfigError) as caught:
        rules.check_gpu_pool(spec, Cloud.AZURE, "p", ("1", "2", "3"))
    assert caught.value.path == "p.gpuDriver"

"""AKS Automatic (``gpupools:cluster.sku: Automatic``, issue 47), on the recording mock runtime.

What ``azure-automatic-dev`` registers, checked against sources nobody here wrote: the pinned
karpenter-provider-azure CRDs (``tests/crd_schema.py``), the baseline Pod Security Standard that AKS
Automatic enforces (kubernetes.io "Pod Security Standards", Baseline profile: the controls named in
``BASELINE``), pulumi-azure-native 3.29.0's ``ManagedClusterSKUName`` and the AKS REST example
``ManagedClustersGet.json`` (API 2025-09-01, ``tests/aks_rest``) as the live cluster. Every rule that
refuses what Automatic cannot do is checked with its path and value (``tests/automatic_cases.py``).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Iterator, Mapping

import pytest
from gpupools import config
from gpupools.azure import automatic
from gpupools.conventions import GPU_TAINT
from gpupools.errors import ConfigError
from gpupools.specs import GpuDriver
from gpupools.testing import Registration, Run, run_stack, stack_config

from tests.aks_model import example_body
from tests.automatic_cases import AUTOMATIC_INVALID, STACK
from tests.automatic_cases import automatic as automatic_config
from tests.crd_schema import validate_custom_resource
from tests.example_runs import example_run
from tests.test_bad_input_catalogue import run_main
from tests.test_karpenter_eks import custom_resource, node_pools

CLUSTER = "azure-native:containerservice:ManagedCluster"
NODECLASS = "kubernetes:karpenter.azure.com/v1beta1:AKSNodeClass"


@cache
def run() -> Run:
    return example_run(STACK)


def managed_cluster(result: Run) -> Registration:
    [cluster] = result.of_type(CLUSTER)
    return cluster


def node_classes(result: Run) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: custom_resource(r) for r in result.of_type(NODECLASS)}


# --- the cluster: what AKS Automatic sets is left to it ------------------------------------------


def test_the_cluster_is_automatic_on_the_standard_tier_and_states_none_of_what_aks_presets() -> None:
    cluster = managed_cluster(run())
    # pulumi-azure-native 3.29.0 containerservice._enums.ManagedClusterSKUName.AUTOMATIC; "Automatic SKU
    # clusters are preconfigured to use the Standard tier" (AKS free-standard-pricing-tiers.md).
    assert cluster.inputs["sku"] == {"name": "Automatic", "tier": "Standard"}
    for field in automatic.AUTOMATIC_IGNORED_FIELDS:
        assert field not in cluster.inputs, f"{field}: AKS Automatic sets it"
        assert field in cluster.ignore_changes, f"{field}: a refreshed value must not become a PUT"
    assert cluster.inputs["disableLocalAccounts"] is True
    assert cluster.inputs["aadProfile"]["enableAzureRBAC"] is True
    assert cluster.options["protect"] is True


def test_no_network_and_no_subnet_grant_is_created() -> None:
    types = {r.type for r in run().registrations}
    assert not {t for t in types if t.startswith("azure-native:network:")}
    grants = [r.inputs.get("description", "") for r in run().of_type("azure-native:authorization:RoleAssignment")]
    assert grants and not any("subnet" in g for g in grants)


def test_no_agent_pool_device_plugin_or_exporter_is_created() -> None:
    result = run()
    assert not result.of_type("azure-native:containerservice:AgentPool")
    daemon_sets = [r for r in result.kubernetes_objects() if r.inputs.get("kind") == "DaemonSet"]
    assert daemon_sets == []


# --- pools: NAP NodePools, managed GPU, a system NodePool ----------------------------------------


def test_every_node_class_and_nodepool_is_valid_against_the_pinned_crds() -> None:
    result = run()
    objects = [*node_classes(result).values(), *node_pools(result).values()]
    assert len(objects) == 2 * (len(stack_config(STACK)["gpupools:gpuPools"]) + len(stack_config(STACK)["gpupools:cpuPools"]) + 1)
    for obj in objects:
        assert validate_custom_resource(obj, "azure") == [], obj["metadata"]["name"]


def test_gpu_pools_are_aks_managed_gpu_pools_and_cpu_pools_are_not() -> None:
    classes = node_classes(run())
    for entry in stack_config(STACK)["gpupools:gpuPools"]:
        spec = classes[entry["name"]]["spec"]
        assert spec["tags"][automatic.MANAGED_GPU_TAG] == "true"
        assert spec["gpu"] == {"mode": "Driver"}
    for entry in stack_config(STACK)["gpupools:cpuPools"]:
        assert automatic.MANAGED_GPU_TAG not in classes[entry["name"]]["spec"]["tags"]


def test_gpu_pools_default_to_managed_and_buy_spot_then_on_demand() -> None:
    spec = config.parse(stack_config(STACK), "eastus")
    assert {pool.gpu_driver for pool in spec.gpu_pools} == {GpuDriver.MANAGED}
    pools = node_pools(run())
    t4 = pools["t4"]["spec"]["template"]
    [capacity] = [r for r in t4["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
    assert capacity["values"] == ["spot", "on-demand"]
    assert {"key": GPU_TAINT.key, "value": GPU_TAINT.value, "effect": GPU_TAINT.effect.value} in t4["spec"]["taints"]


def test_the_system_nodepool_is_on_demand_untainted_and_tried_last() -> None:
    pools = node_pools(run())
    system = pools.pop("system")["spec"]
    [capacity] = [r for r in system["template"]["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
    assert capacity["values"] == ["on-demand"]
    assert system["template"]["spec"].get("taints", []) == []
    assert system["limits"]["nodes"] == str(stack_config(STACK)["gpupools:systemPool"]["maxSize"])
    assert system["weight"] < min(pool["spec"]["weight"] for pool in pools.values())


def test_kueue_runs_on_the_system_nodepool() -> None:
    [release] = run().of_type("kubernetes:helm.sh/v3:Release")
    selector = release.inputs["values"]["controllerManager"]["nodeSelector"]
    labels = node_pools(run())["system"]["spec"]["template"]["metadata"]["labels"]
    assert selector and selector.items() <= labels.items()  # the system NodePool's nodes, and only they, match
    assert all(value != "system" for key, value in node_pools(run())["t4"]["spec"]["template"]["metadata"]["labels"].items()
               if key in selector)  # fmt: skip


# --- what the baseline Pod Security Standard would refuse: nothing of gpupools' -------------------

BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
"""Baseline "Capabilities": adding any other is refused (kubernetes.io Pod Security Standards)."""


def pod_specs(obj: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The pod specs a Kubernetes object creates (a Pod's own, a workload's template)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        yield spec
    template = spec.get("template") or (spec.get("jobTemplate") or {}).get("spec", {}).get("template")
    if template:
        yield template.get("spec") or {}


def baseline_violations(pod: Mapping[str, Any]) -> list[str]:
    """The Baseline controls a pod spec breaks: HostProcess/host namespaces, privileged containers,
    capabilities beyond the default set, hostPath volumes, host ports (kubernetes.io "Pod Security
    Standards", Baseline)."""
    found = [f"spec.{key}" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    found += [f"volumes[{v.get('name')}].hostPath" for v in pod.get("volumes") or [] if "hostPath" in v]
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{container.get('name')}.privileged")
        added = set((context.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES
        found += [f"{container.get('name')}.capabilities.add[{cap}]" for cap in sorted(added)]
        found += [f"{container.get('name')}.hostPort" for port in container.get("ports") or [] if port.get("hostPort")]
    return found


def stack_pods(result: Run) -> list[tuple[str, Mapping[str, Any]]]:
    return [(r.name, pod) for r in result.kubernetes_objects() for pod in pod_specs(r.inputs)]


def test_no_pod_of_the_automatic_stack_breaks_the_baseline_standard() -> None:
    result = run_stack(STACK, overrides={"gpupools:smokeTest": {"enabled": True}})
    pods = stack_pods(result)
    assert any(name.startswith("smoke-test-") for name, _ in pods)  # the check sees pods at all
    assert {name: baseline_violations(pod) for name, pod in pods if baseline_violations(pod)} == {}


def test_the_same_check_refuses_the_device_plugin_and_exporter_of_a_nap_stack() -> None:
    # What AKS Automatic would refuse, on the Base NAP stack: gpupools' own plugin and exporter.
    refused = {name for name, pod in stack_pods(example_run("azure-nap-dev")) if baseline_violations(pod)}
    assert any("nvidia-device-plugin" in name for name in refused)
    assert any("dcgm" in name for name in refused)


# --- rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "raw", "path", "rule"), AUTOMATIC_INVALID, ids=[c[0] for c in AUTOMATIC_INVALID])
def test_what_automatic_cannot_do_is_refused_by_path(case: str, raw: dict[str, Any], path: str, rule: str) -> None:
    result = run_main(raw)
    assert isinstance(result.error, ConfigError), f"{case}: {result.error!r}"
    assert result.error.path == path and rule in str(result.error)
    assert result.registrations == []


def test_an_explicit_managed_or_none_driver_is_kept() -> None:
    pools = [dict(p) for p in stack_config(STACK)["gpupools:gpuPools"]]
    pools[1]["gpuDriver"] = "none"
    spec = config.parse(automatic_config(**{"gpupools:gpuPools": pools}), "eastus")
    assert [p.gpu_driver for p in spec.gpu_pools] == [GpuDriver.MANAGED, GpuDriver.NONE]


def test_managed_stays_refused_on_a_base_nap_cluster() -> None:
    values = stack_config("azure-nap-dev")
    pools = [dict(p) for p in values["gpupools:gpuPools"]]
    pools[0]["gpuDriver"] = "managed"
    with pytest.raises(ConfigError) as error:
        config.parse({**values, "gpupools:gpuPools": pools}, "eastus")
    assert error.value.path == "gpupools:gpuPools[0].gpuDriver"


def live_cluster(sku: str) -> dict[str, Any]:
    """``Managed Clusters - Get`` as the REST example answers it (API 2025-09-01), with ``sku``: the
    example carries none; the field is the spec's ``ManagedClusterSKU`` (``name``, ``tier``)."""
    return {**example_body("ManagedClustersGet"), "sku": {"name": sku, "tier": "Standard"}}


def test_an_existing_base_cluster_is_not_switched_to_automatic() -> None:
    result = run_stack(
        STACK,
        calls={"azure-native:containerservice:getManagedCluster": lambda args: live_cluster("Base")},
        raise_errors=False,
    )
    assert isinstance(result.error, ConfigError)
    assert result.error.path == "gpupools:cluster.sku" and "isn't supported" in str(result.error)
    # Read at program start, under the AksCluster component: no cloud resource is registered.
    assert [r.type for r in result.registrations if r.custom] == []


def test_an_existing_automatic_cluster_is_not_switched_to_base() -> None:
    result = run_stack(
        "azure-nap-dev",
        calls={"azure-native:containerservice:getManagedCluster": lambda args: live_cluster("Automatic")},
        raise_errors=False,
    )
    assert isinstance(result.error, ConfigError)
    assert result.error.path == "gpupools:cluster.sku" and "--sku base" in str(result.error)


def test_aks_moves_the_minor_and_the_next_up_neither_downgrades_nor_stays_silent() -> None:
    # Automatic upgrades minors itself on its stable channel (AKS intro-aks-automatic.md: preconfigured).
    configured = stack_config(STACK)["gpupools:cluster"]["kubernetesVersion"]
    moved = {**live_cluster("Automatic"), "kubernetesVersion": "1.36.3"}
    result = run_stack(STACK, calls={"azure-native:containerservice:getManagedCluster": lambda args: moved})
    cluster = managed_cluster(result)
    assert "kubernetesVersion" in cluster.ignore_changes  # the configured minor is never sent as a downgrade
    assert any("1.36.3" in w and configured in w for w in result.warnings)
    same = {**live_cluster("Automatic"), "kubernetesVersion": f"{configured}.7"}
    quiet = run_stack(STACK, calls={"azure-native:containerservice:getManagedCluster": lambda args: same})
    assert not any("kubernetesVersion" in w for w in quiet.warnings)


def test_an_existing_automatic_cluster_keeps_its_stack() -> None:
    result = run_stack(STACK, calls={"azure-native:containerservice:getManagedCluster": lambda args: live_cluster("Automatic")})
    assert result.error is None
    assert managed_cluster(result).inputs["sku"]["name"] == "Automatic"


# --- costs -------------------------------------------------------------------------------------


def test_costs_cover_every_nodepool_and_the_system_nodepool_idles_at_zero() -> None:
    cost = run().outputs["cost"]
    pools = {p["name"] for p in stack_config(STACK)["gpupools:gpuPools"] + stack_config(STACK)["gpupools:cpuPools"]}
    assert set(cost["ceilingByPool"]) == pools | {"system"}
    assert cost["idlePerHour"] == 0.0  # no pool keeps a node: AKS's managed system nodes are not billed to you
    assert cost["ceilingPerHour"] <= stack_config(STACK)["gpupools:cost"]["budgetPerHour"]


def test_the_json_schema_refuses_what_the_program_refuses_on_automatic() -> None:
    # Every rule of check_automatic_keys but the pools' sharing (the NAP rule, program-only) is in the
    # schema editors read, at the path the program names.
    from tests.test_config_schema import schema_paths

    for case, raw, path, _ in AUTOMATIC_INVALID:
        if case != "automatic-sharing":
            assert path in schema_paths(raw), case
    assert schema_paths(stack_config(STACK)) == set()

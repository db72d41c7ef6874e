"""The policy pack on the committed example stacks: they pass, and deliberately broken copies fail.

Each stack is run on the recording mock runtime (``run_stack``); every registration becomes what
the engine would hand the pack (type, name, URN, inputs, ``ignoreChanges``). The pack runs twice
over it: the plain rules (``rules.check_stack``) and the analyzer protocol in-process
(``gpupools_policy.testing.analyze``, which also reports each diagnostic's enforcement level).
A broken copy changes one thing (a taint removed, ``httpTokens`` optional, a toleration dropped,
...) and must fire exactly the rule for it.

The engine hands stack policies the resources' *outputs*; here they are the inputs (the mocks
echo inputs as outputs), which is what a preview of a new stack sees too.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gpupools.testing import run_stack

POLICY_DIR = Path(__file__).resolve().parents[1] / "policy"
if str(POLICY_DIR) not in sys.path:
    sys.path.insert(0, str(POLICY_DIR))

from gpupools_policy import rules, shapes, testing  # noqa: E402

from tests.example_runs import example_run  # noqa: E402

Resources = list[rules.Resource]

AGENT_POOL = "azure-native:containerservice:AgentPool"
CLUSTER = "azure-native:containerservice:ManagedCluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"

ADVISORY = {"gpu-on-demand-has-spot-sibling", "gpu-pool-upper-bound"}

_RUNS: dict[str, Resources] = {}


def stack_resources(stack: str) -> Resources:
    """The stack's registrations as the pack sees them (run once per test session)."""
    if stack not in _RUNS:
        run = example_run(stack)
        _RUNS[stack] = [rules.Resource(r.type, r.name, r.inputs, r.urn, tuple(r.ignore_changes)) for r in run.registrations]
    return _RUNS[stack]


def broken(
    stack: str, select: Callable[[rules.Resource], bool], change: Callable[[rules.Resource], rules.Resource | None]
) -> Resources:
    """A copy of the stack with ``change`` applied to the first resource ``select`` picks (None removes it)."""
    resources = copy.deepcopy(stack_resources(stack))
    for index, resource in enumerate(resources):
        if select(resource):
            replacement = change(resource)
            if replacement is None:
                del resources[index]
            else:
                resources[index] = replacement
            return resources
    raise AssertionError(f"nothing in {stack} matched the selector")


def props_changed(edit: Callable[[dict[str, Any]], None]) -> Callable[[rules.Resource], rules.Resource]:
    def change(resource: rules.Resource) -> rules.Resource:
        props = copy.deepcopy(dict(resource.props))
        edit(props)
        return rules.Resource(resource.type, resource.name, props, resource.urn, resource.ignore_changes)

    return change


def ignore_changes_set(paths: tuple[str, ...]) -> Callable[[rules.Resource], rules.Resource]:
    return lambda r: rules.Resource(r.type, r.name, r.props, r.urn, paths)


def outside_gpupools(change: Callable[[rules.Resource], rules.Resource]) -> Callable[[rules.Resource], rules.Resource]:
    """``change``, then the resource moved out of gpupools' components (its URN's parent types
    dropped): the same resource as a program of one's own would register it."""

    def moved(resource: rules.Resource) -> rules.Resource:
        changed = change(resource)
        prefix, project, types, name = changed.urn.split("::", 3)
        own_type = types.split("$")[-1]
        return rules.Resource(
            changed.type, changed.name, changed.props, "::".join((prefix, project, own_type, name)), changed.ignore_changes
        )

    return moved


def fired(resources: Resources) -> dict[str, list[str]]:
    """{policy: messages} from the plain rules, checked to agree with the analyzer protocol."""
    direct = {policy: [m for m, _ in found] for policy, found in rules.check_stack(resources).items()}
    via_engine: dict[str, list[str]] = {}
    for diagnostic in testing.analyze(resources):
        assert diagnostic.enforcement == ("advisory" if diagnostic.policy in ADVISORY else "mandatory")
        via_engine.setdefault(diagnostic.policy, []).append(diagnostic.message)
    assert {p: sorted(m) for p, m in direct.items()} == {p: sorted(m) for p, m in via_engine.items()}
    return direct


def is_spot_gpu_agent_pool(resource: rules.Resource) -> bool:
    return resource.type == AGENT_POOL and resource.props.get("scaleSetPriority") == "Spot"


def is_device_plugin(resource: rules.Resource) -> bool:
    return shapes.is_device_plugin(resource.type, resource.props)


def is_gpu_node_group(capacity: str, taint_key: str | None = None) -> Callable[[rules.Resource], bool]:
    def select(resource: rules.Resource) -> bool:
        if resource.type != NODE_GROUP or resource.props.get("capacityType") != capacity:
            return False
        keys = {t.get("key") for t in resource.props.get("taints") or []}
        return "nvidia.com/gpu" in keys and (taint_key is None or taint_key in keys)

    return select


# --- the committed stacks pass -------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev", "azure-nap-dev", "aws-karpenter-dev"])
def test_committed_stack_passes_every_rule(stack: str) -> None:
    assert fired(stack_resources(stack)) == {}


def test_azure_stack_with_a_gpu_operator_pool_passes() -> None:
    """azure-dev with the tainted a100 pool on gpuDriver: none: gpupools' plugin does not tolerate
    its extra taint (it does not serve it), and the pack knows the pool's GPU stack is the user's."""
    from gpupools.testing import stack_config

    pools = [dict(p) for p in stack_config("azure-dev")["gpupools:gpuPools"]]
    assert pools[1]["name"] == "a100" and pools[1]["taints"]
    pools[1]["gpuDriver"] = "none"
    run = run_stack("azure-dev", overrides={"gpupools:gpuPools": pools})
    resources = [rules.Resource(r.type, r.name, r.inputs, r.urn, tuple(r.ignore_changes)) for r in run.registrations]
    none_pools = [r for r in resources if r.type == AGENT_POOL and r.props.get("gpuProfile") == {"driver": "None"}]
    assert len(none_pools) == 2
    assert fired(resources) == {}


def test_the_rules_have_something_to_check_on_azure() -> None:
    """Guards against a vacuous pass: the stack has the shapes the rules read."""
    resources = stack_resources("azure-dev")
    pools = [p for r in resources for p in shapes.pools(r.type, r.props, r.name)]
    assert sum(1 for p in pools if p.gpu and p.spot) == 2
    assert sum(1 for p in pools if p.gpu and not p.spot) == 2
    assert any(p.path == "agentPoolProfiles[0]" and p.autoscaled for p in pools)
    assert sum(1 for r in resources if is_device_plugin(r)) == 1


def test_the_rules_have_something_to_check_on_aws() -> None:
    resources = stack_resources("aws-dev")
    pools = [p for r in resources for p in shapes.pools(r.type, r.props, r.name)]
    assert sum(1 for p in pools if p.gpu and p.spot) >= 4
    assert sum(1 for p in pools if p.gpu and not p.spot) >= 4
    assert sum(1 for r in resources if r.type == LAUNCH_TEMPLATE) >= 2
    assert sum(1 for r in resources if is_device_plugin(r)) == 1


# --- broken copies of azure-dev -----------------------------------------------------------------


def test_azure_pool_without_gpu_taint() -> None:
    def drop(props: dict[str, Any]) -> None:
        props["nodeTaints"] = [t for t in props["nodeTaints"] if not t.startswith("nvidia.com/gpu=")]

    resources = broken("azure-dev", is_spot_gpu_agent_pool, props_changed(drop))
    found = fired(resources)
    assert set(found) == {"gpu-pool-taint"}
    [message] = found["gpu-pool-taint"]
    assert "is a GPU pool (vmSize Standard_NC" in message


TAINT_KEYS = ("nvidia.com/gpu", "kubernetes.azure.com/scalesetpriority", "dedicated")
"""Every taint key of the example stacks' GPU pools."""


def tolerating_keys_but(missing: str) -> list[dict[str, str]]:
    """A plugin that tolerates the example pools' taint keys one by one, except ``missing`` (gpupools'
    own plugin tolerates every taint with one ``operator: Exists``, so the rule is exercised on a
    narrower one, as a hand-edited or third-party plugin would have)."""
    return [{"key": key, "operator": "Exists"} for key in TAINT_KEYS if key != missing]


def test_azure_device_plugin_without_the_spot_toleration() -> None:
    def drop(props: dict[str, Any]) -> None:
        spec = props["spec"]["template"]["spec"]
        spec["tolerations"] = tolerating_keys_but("kubernetes.azure.com/scalesetpriority")

    found = fired(broken("azure-dev", is_device_plugin, props_changed(drop)))
    assert set(found) == {"device-plugin-tolerates-gpu-pools"}
    assert len(found["device-plugin-tolerates-gpu-pools"]) == 2  # the T4 and the A100 Spot pools
    assert all(
        "['kubernetes.azure.com/scalesetpriority=spot:NoSchedule']" in m for m in found["device-plugin-tolerates-gpu-pools"]
    )


def test_azure_device_plugin_without_the_extra_taint_toleration() -> None:
    def drop(props: dict[str, Any]) -> None:
        spec = props["spec"]["template"]["spec"]
        spec["tolerations"] = tolerating_keys_but("dedicated")

    found = fired(broken("azure-dev", is_device_plugin, props_changed(drop)))
    assert set(found) == {"device-plugin-tolerates-gpu-pools"}
    assert len(found["device-plugin-tolerates-gpu-pools"]) == 2  # the A100 Spot and on-demand pools
    assert all("['dedicated=training:NoSchedule']" in m for m in found["device-plugin-tolerates-gpu-pools"])


@pytest.mark.parametrize(("stack", "pool"), [("azure-nap-dev", "a100"), ("aws-karpenter-dev", "gpu4")])
def test_device_plugin_not_tolerating_a_gpu_nodepools_taint(stack: str, pool: str) -> None:
    """NodePools count as GPU pools the plugin must serve: their template's taints are the nodes'."""

    def drop(props: dict[str, Any]) -> None:
        spec = props["spec"]["template"]["spec"]
        spec["tolerations"] = tolerating_keys_but("dedicated")

    found = fired(broken(stack, is_device_plugin, props_changed(drop)))
    assert set(found) == {"device-plugin-tolerates-gpu-pools"}
    [message] = found["device-plugin-tolerates-gpu-pools"]
    assert f"Karpenter NodePool '{pool}'" in message and "['dedicated=training:NoSchedule']" in message


def test_azure_pool_count_not_ignored() -> None:
    found = fired(broken("azure-dev", is_spot_gpu_agent_pool, outside_gpupools(ignore_changes_set(()))))
    assert set(found) == {"autoscaled-count-ignored"}
    assert "does not cover 'count'" in found["autoscaled-count-ignored"][0]


def test_azure_inline_system_pool_count_not_ignored() -> None:
    found = fired(broken("azure-dev", lambda r: r.type == CLUSTER, outside_gpupools(ignore_changes_set(()))))
    assert set(found) == {"autoscaled-count-ignored"}
    assert "does not cover 'agentPoolProfiles[0].count'" in found["autoscaled-count-ignored"][0]


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_pools_of_gpupools_components_may_send_their_live_count_instead(stack: str) -> None:
    """What ``EksCluster``/``GpuNodeGroup``/``AksCluster``/``GpuNodePool`` register for an existing
    pool whose live size they read: the count without ``ignoreChanges``. The pack accepts that from
    them (they send the live size: tests/test_capacity_updates.py) and from nothing else."""
    is_pool = (lambda r: r.type in (AGENT_POOL, CLUSTER)) if stack == "azure-dev" else (lambda r: r.type == NODE_GROUP)
    assert not fired(broken(stack, is_pool, ignore_changes_set(())))
    assert set(fired(broken(stack, is_pool, outside_gpupools(ignore_changes_set(()))))) == {"autoscaled-count-ignored"}


def test_azure_spot_pool_with_a_floor() -> None:
    found = fired(broken("azure-dev", is_spot_gpu_agent_pool, props_changed(lambda p: p.update(minCount=1))))
    assert set(found) == {"gpu-spot-scale-to-zero"}


def test_azure_pool_with_public_node_ips() -> None:
    found = fired(broken("azure-dev", is_spot_gpu_agent_pool, props_changed(lambda p: p.update(enableNodePublicIP=True))))
    assert set(found) == {"no-public-node-ips"}


def test_azure_on_demand_pool_without_its_spot_pool() -> None:
    found = fired(broken("azure-dev", is_spot_gpu_agent_pool, lambda r: None))
    assert set(found) == {"gpu-on-demand-has-spot-sibling"}
    assert len(found["gpu-on-demand-has-spot-sibling"]) == 1


def test_azure_pool_without_a_sane_maximum() -> None:
    found = fired(broken("azure-dev", is_spot_gpu_agent_pool, props_changed(lambda p: p.update(maxCount=500))))
    assert set(found) == {"gpu-pool-upper-bound"}


# --- broken copies of aws-dev -------------------------------------------------------------------


def test_aws_launch_template_allows_imdsv1() -> None:
    def optional(props: dict[str, Any]) -> None:
        props["metadataOptions"]["httpTokens"] = "optional"

    found = fired(broken("aws-dev", lambda r: r.type == LAUNCH_TEMPLATE, props_changed(optional)))
    assert set(found) == {"launch-template-imdsv2-encrypted"}
    assert "metadataOptions.httpTokens must be 'required', got 'optional'" in found["launch-template-imdsv2-encrypted"][0]


def test_aws_launch_template_unencrypted_root_volume() -> None:
    def unencrypted(props: dict[str, Any]) -> None:
        props["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"

    found = fired(broken("aws-dev", lambda r: r.type == LAUNCH_TEMPLATE, props_changed(unencrypted)))
    assert set(found) == {"launch-template-imdsv2-encrypted"}
    assert "blockDeviceMappings[0].ebs.encrypted" in found["launch-template-imdsv2-encrypted"][0]


def test_aws_launch_template_with_public_ips() -> None:
    def public(props: dict[str, Any]) -> None:
        props["networkInterfaces"] = [{"deviceIndex": 0, "associatePublicIpAddress": "true"}]

    found = fired(broken("aws-dev", lambda r: r.type == LAUNCH_TEMPLATE, props_changed(public)))
    assert set(found) == {"no-public-node-ips"}


def test_aws_node_group_without_gpu_taint() -> None:
    def drop(props: dict[str, Any]) -> None:
        props["taints"] = [t for t in props["taints"] if t["key"] != "nvidia.com/gpu"]

    found = fired(broken("aws-dev", is_gpu_node_group("SPOT"), props_changed(drop)))
    assert set(found) == {"gpu-pool-taint"}
    assert "EKS node group" in found["gpu-pool-taint"][0]


def test_aws_device_plugin_without_the_extra_taint_toleration() -> None:
    def drop(props: dict[str, Any]) -> None:
        spec = props["spec"]["template"]["spec"]
        spec["tolerations"] = tolerating_keys_but("dedicated")

    found = fired(broken("aws-dev", is_device_plugin, props_changed(drop)))
    assert set(found) == {"device-plugin-tolerates-gpu-pools"}
    gpu4_groups = [
        r
        for r in stack_resources("aws-dev")
        if is_gpu_node_group("SPOT", "dedicated")(r) or is_gpu_node_group("ON_DEMAND", "dedicated")(r)
    ]
    assert len(found["device-plugin-tolerates-gpu-pools"]) == len(gpu4_groups) > 0


def test_aws_node_group_desired_size_not_ignored() -> None:
    found = fired(broken("aws-dev", is_gpu_node_group("SPOT"), outside_gpupools(ignore_changes_set(("scalingConfig.minSize",)))))
    assert set(found) == {"autoscaled-count-ignored"}
    assert "does not cover 'scalingConfig.desiredSize'" in found["autoscaled-count-ignored"][0]


def test_aws_spot_group_with_a_floor() -> None:
    def floor(props: dict[str, Any]) -> None:
        props["scalingConfig"]["minSize"] = 1

    found = fired(broken("aws-dev", is_gpu_node_group("SPOT"), props_changed(floor)))
    assert set(found) == {"gpu-spot-scale-to-zero"}
    assert "scalingConfig.minSize must be 0, got 1" in found["gpu-spot-scale-to-zero"][0]

"""gpupools.testing for consumers: ``GpupoolsMocks`` with plain ``pulumi.runtime.set_mocks``, and
what Pulumi's default echoing mocks do to the components that read computed outputs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
from gpupools import config
from gpupools.specs import Cloud
from gpupools.testing import GpupoolsMocks, RecordingMocks, fakes
from pulumi.runtime import settings

ROOT = Path(__file__).resolve().parents[1]


class EchoMocks(pulumi.runtime.Mocks):
    """Pulumi's testing guide's mocks: every resource's outputs are its inputs, invokes answer nothing."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


def _echo_failure(program: str) -> str:
    """``program`` (a function of this module) on ``EchoMocks``, in a subprocess: the failed run leaves
    the other registrations' futures unresolved and asyncio reports each at exit, which stays there.
    Returns what it printed: ``<exception type>: <message>``."""
    code = (
        "from tests.test_testing_mocks import EchoMocks, _run, " + program + "\n"
        "try:\n    _run(EchoMocks(), " + program + ")\nexcept Exception as error:\n"
        "    print(f'{type(error).__name__}: {error}', flush=True)\nelse:\n    print('no error', flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "components"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)
    return result.stdout


def _run(mocks: pulumi.runtime.Mocks, program: Any) -> list[Any]:
    """Run ``program`` (returning an Output) on plain set_mocks; the resolved value."""
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project="platform", stack="test", preview=False)
    seen: list[Any] = []

    @pulumi.runtime.test
    def test() -> Any:
        return program().apply(seen.append)

    test()
    return seen


def _aks_cluster() -> pulumi.Output[Any]:
    from gpupools.azure import AksCluster

    cluster = AksCluster(
        "ml",
        cluster=config.parse_cluster({"name": "ml-dev"}, Cloud.AZURE),
        system_pool=config.parse_system_pool({"instanceTypes": ["Standard_D4s_v5"], "minSize": 2, "maxSize": 3}, Cloud.AZURE),
        location="eastus",
    )
    return pulumi.Output.all(cluster.kubeconfig, cluster.oidc_issuer_url)


def _eks_node_group() -> pulumi.Output[Any]:
    from gpupools.aws import GpuNodeGroup

    group = GpuNodeGroup(
        "t4",
        {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "maxSize": 2},
        cluster_name="ml-dev",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        subnet_ids_by_zone={"us-west-2a": "subnet-0aaaaaaaaaaaaaaa1"},
    )
    return pulumi.Output.all(*[tag.autoscaling_group_name for tags in group.asg_tags.values() for tag in tags])


def test_aks_cluster_runs_on_gpupools_mocks_and_not_on_echoing_ones() -> None:
    [(kubeconfig, issuer)] = _run(GpupoolsMocks(), _aks_cluster)
    assert "command: kubelogin" in kubeconfig and issuer.startswith("https://eastus.oic.prod-aks.azure.com/")
    # The identity map: a list of IDs in, a map out; echoed back, pulumi-azure-native's output types
    # reject it before gpupools sees a value (documented in gpupools.testing).
    failure = _echo_failure("_aks_cluster")
    assert failure.startswith("AssertionError: "), failure
    assert re.search(r"Expected 'list' got 'typing.Mapping\[str, \S*UserAssignedIdentities\]'", failure), failure


def test_eks_node_group_names_its_asg_on_gpupools_mocks_and_says_why_on_echoing_ones() -> None:
    [names] = _run(GpupoolsMocks(), _eks_node_group)
    assert names and all(n.startswith("eks-ml-dev-t4-") for n in names), names
    failure = _echo_failure("_eks_node_group")
    pattern = r"MissingOutputError: aws\.eks\.NodeGroup\(t4-(spot|od)-us-west-2a\)\.resources\[0\]\.autoscalingGroups\[0\]\.name: .*GpupoolsMocks"
    assert re.match(pattern, failure), failure


def test_gpu_node_pool_by_names_needs_no_special_mocks() -> None:
    from gpupools.azure import GpuNodePool

    def program() -> pulumi.Output[Any]:
        pool = GpuNodePool(
            "t4",
            {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4},
            resource_group_name="rg",
            cluster_name="ml",
        )
        return pulumi.Output.all(*[p.scale_set_priority for p in pool.agent_pools])

    assert _run(EchoMocks(), program) == [["Spot", "Regular"]]


def test_gpupools_mocks_take_extra_fakes_and_name_unknown_invokes() -> None:
    mocks = GpupoolsMocks(outputs={"custom:index:Thing": lambda name, inputs: {"__id": "thing-1", "color": "blue"}})
    assert RecordingMocks is GpupoolsMocks
    assert mocks.outputs["aws:eks/nodeGroup:NodeGroup"] is fakes.OUTPUTS["aws:eks/nodeGroup:NodeGroup"]
    resource_id, state = mocks.new_resource(
        pulumi.runtime.MockResourceArgs(
            typ="custom:index:Thing", name="t", inputs={"size": 1}, provider="", resource_id="", custom=True
        )
    )
    assert (resource_id, state) == ("thing-1", {"size": 1, "color": "blue"})
    with pytest.raises(KeyError, match="no fake for invoke custom:index:getThing; pass one in GpupoolsMocks"):
        mocks.call(pulumi.runtime.MockCallArgs(token="custom:index:getThing", args={}, provider=""))

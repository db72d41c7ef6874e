"""cluster-autoscaler in the sim, its pure parts (no control plane): the build's source and chart
checks, the node groups and their cloud names, the flags from an AKS profile and from a rendered chart,
the KWOK provider's ConfigMaps. The running autoscaler is tested in ``tests/sim``."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
from pathlib import Path

import pytest
import yaml
from gpupools.conventions import CapacityType
from gpupools.kubernetes.priority_expander import CONFIG_MAP_KEY, CONFIG_MAP_NAME
from gpupools.sim import autoscaler, autoscaler_build, charts, node_shapes, objects, spot
from gpupools.sim.build import BuildError
from gpupools.sim.cluster import BadInputError
from gpupools.testing import PROJECT_ROOT

VENDORED_AUTOSCALER_FLAGS = {
    # config/flags/flags.go at tag cluster-autoscaler-1.36.1: every flag the AKS profile maps to.
    "balance-similar-node-groups", "daemonset-eviction-for-empty-nodes", "daemonset-eviction-for-occupied-nodes",
    "ignore-daemonsets-utilization", "max-graceful-termination-sec", "max-total-unready-percentage",
    "new-pod-scale-up-delay", "ok-total-unready-count", "scale-down-delay-after-add", "scale-down-delay-after-delete",
    "scale-down-delay-after-failure", "scale-down-unready-time", "scale-down-utilization-threshold", "scan-interval",
    "skip-nodes-with-local-storage", "skip-nodes-with-system-pods", "expander", "max-node-provision-time",
    "scale-down-unneeded-time", "max-node-startup-time",
}  # fmt: skip


@pytest.fixture(scope="module")
def azure_dev() -> objects.StackObjects:
    return objects.load("azure-dev")


@pytest.fixture(scope="module")
def aws_dev() -> objects.StackObjects:
    return objects.load("aws-dev")


def priority_regexes(stack_objects: objects.StackObjects) -> dict[int, list[str]]:
    [config_map] = [m for m in stack_objects.manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == CONFIG_MAP_NAME]
    return {int(k): list(v) for k, v in yaml.safe_load(config_map["data"][CONFIG_MAP_KEY]).items()}


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev", "aws-training-dev"])
def test_every_scaling_group_is_matched_by_the_stacks_own_expander_tier_for_its_pool(stack: str) -> None:
    """The group names the sim gives cluster-autoscaler are the cloud's (AKS VMSS, EKS ASG), so the
    stack's priority-expander regexes select exactly one tier per group, and Spot groups rank above
    their pool's on-demand groups."""
    stack_objects = objects.load(stack)
    tiers = priority_regexes(stack_objects)
    groups = autoscaler.scaling_groups(stack_objects)
    assert groups
    tier_of = {}
    for scaling in groups:
        matched = {p for p, regexes in tiers.items() if any(re.search(r, scaling.id) for r in regexes)}
        assert len(matched) == 1, (scaling.id, matched)
        tier_of[scaling.id] = matched.pop()
    for scaling in groups:
        if scaling.group.capacity is CapacityType.SPOT:
            fallbacks = [g for g in groups if g.group.pool == scaling.group.pool and g.group.capacity is CapacityType.ON_DEMAND]
            assert all(tier_of[scaling.id] > tier_of[f.id] for f in fallbacks)


def test_cloud_group_names_have_the_clouds_form(azure_dev: objects.StackObjects, aws_dev: objects.StackObjects) -> None:
    for scaling in autoscaler.scaling_groups(azure_dev):
        assert re.fullmatch(rf"aks-{re.escape(scaling.group.name)}-\d{{8}}-vmss", scaling.id)
    for scaling in autoscaler.scaling_groups(aws_dev):
        assert re.fullmatch(rf"eks-{re.escape(scaling.group.name)}-[0-9a-f-]{{36}}", scaling.id)


def test_templates_carry_the_registered_min_and_max(aws_dev: objects.StackObjects) -> None:
    registered = {
        str(r.inputs["nodeGroupName"]): r.inputs["scalingConfig"] for r in aws_dev.run.of_type("aws:eks/nodeGroup:NodeGroup")
    }
    for scaling in autoscaler.scaling_groups(aws_dev):
        node = autoscaler.template(scaling)
        annotations = node["metadata"]["annotations"]
        assert annotations[autoscaler.NG_NAME] == scaling.id
        assert int(annotations[autoscaler.NG_MIN]) == registered[scaling.group.name]["minSize"]
        assert int(annotations[autoscaler.NG_MAX]) == registered[scaling.group.name]["maxSize"]
        assert annotations["kwok.x-k8s.io/node"] == "fake"
        assert autoscaler.UNAVAILABLE_LABEL not in node["metadata"]["labels"]


def test_an_unavailable_pools_spot_templates_and_only_those_are_labelled(azure_dev: objects.StackObjects) -> None:
    [_, templates_map] = autoscaler.config_maps(azure_dev, ["t4"])
    items = yaml.safe_load(templates_map["data"]["templates"])["items"]
    labelled = {n["metadata"]["name"] for n in items if autoscaler.UNAVAILABLE_LABEL in n["metadata"]["labels"]}
    expected = {
        g.id for g in autoscaler.scaling_groups(azure_dev) if g.group.pool == "t4" and g.group.capacity is CapacityType.SPOT
    }
    assert labelled == expected and expected
    # Never Ready, so never schedulable: the taint, and the Ready=False condition without which the node
    # lifecycle controller lifts it (node_lifecycle_controller.go, doNoScheduleTaintingPass).
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    tainted = {n["metadata"]["name"] for n in items if not_ready in n["spec"].get("taints", [])}
    assert tainted == expected
    for node in items:
        ready = [c["status"] for c in (node.get("status") or {}).get("conditions", []) if c["type"] == "Ready"]
        assert ready == (["False"] if node["metadata"]["name"] in expected else [])


def test_a_node_the_sim_adds_is_an_instance_of_its_scaling_group(aws_dev: objects.StackObjects) -> None:
    """The KWOK provider lists instances as ``kwok:<node>`` (kwok_helpers.go getProviderID): a node with
    another providerID would be an instance that never registered, and its group would be unknown."""
    [scaling, *_] = autoscaler.scaling_groups(aws_dev)
    node = node_shapes.node_manifest(scaling.group, 0, ("kwok.x-k8s.io/node", "fake"))
    autoscaler.adopt(scaling.group, node)
    assert node["spec"]["providerID"] == f"kwok:{node['metadata']['name']}"
    assert node["metadata"]["annotations"][autoscaler.NG_NAME] == scaling.id


def test_the_provider_config_groups_by_the_name_annotation_and_skips_its_taint(aws_dev: objects.StackObjects) -> None:
    [config_map, _] = autoscaler.config_maps(aws_dev)
    config = yaml.safe_load(config_map["data"]["config"])
    assert config["readNodesFrom"] == "configmap"
    assert config["nodegroups"] == {"fromNodeAnnotationKey": autoscaler.NG_NAME}
    assert config["nodes"]["skipTaint"] is True
    assert config["nodes"]["gpuConfig"]["gpuLabelKey"] == "k8s.amazonaws.com/accelerator"


def test_the_aks_profile_becomes_the_flags_of_the_same_names(azure_dev: objects.StackObjects) -> None:
    flags, notes = autoscaler.aks_flags(azure_dev)
    profile = azure_dev.run.of_type("azure-native:containerservice:ManagedCluster")[0].inputs["autoScalerProfile"]
    by_name = dict(f.removeprefix("--").split("=", 1) for f in flags)
    assert by_name["cloud-provider"] == "kwok"
    assert by_name["expander"] == profile["expander"] == "priority"
    assert by_name["max-node-provision-time"] == profile["maxNodeProvisionTime"]
    assert by_name["daemonset-eviction-for-occupied-nodes"] == "true"
    # enable-provisioning-requests: the flag the EKS chart path passes the same binary (gpupools.aws.autoscaler).
    assert set(by_name) - {"cloud-provider", "namespace", "enable-provisioning-requests"} <= VENDORED_AUTOSCALER_FLAGS
    # As AKS runs it: serving ProvisioningRequests (issue 48, 4.), a flag of the pinned autoscaler.
    assert by_name["enable-provisioning-requests"] == "true"
    assert any("Azure/AKS PR #5867" in n for n in notes)
    assert "max-empty-bulk-delete" not in by_name
    assert any("max-empty-bulk-delete" in n for n in notes)
    # Nothing is added for the sim's Spot shortage (the autoscaler module docstring): the profile's flags only.
    assert "max-node-startup-time" not in by_name


def test_rendered_chart_flags_swap_the_cloud_provider_and_drop_discovery() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cluster-autoscaler"},
        "spec": {
            "template": {
                "spec": {
                    "serviceAccountName": "cluster-autoscaler",
                    "containers": [
                        {
                            "name": "aws-cluster-autoscaler",
                            "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0",
                            "command": ["./cluster-autoscaler", "--cloud-provider=aws", "--namespace=kube-system"],
                            "args": [
                                "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled",
                                "--expander=priority",
                            ],
                            "env": [{"name": "AWS_REGION", "value": "us-west-2"}],
                        }
                    ],
                }
            }
        },
    }
    rendered = charts.split("cluster-autoscaler", "kube-system", "cluster-autoscaler", [deployment])
    flags, notes = autoscaler.chart_flags(rendered)
    assert flags == ["--cloud-provider=kwok", "--namespace=kube-system", "--expander=priority"]
    assert len(notes) == 2
    assert rendered.service_account == "cluster-autoscaler"
    assert rendered.container().env == {"AWS_REGION": "us-west-2"}


def _archive(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "source.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_source_with_another_checksum_is_refused(tmp_path: Path) -> None:
    archive = _archive(tmp_path, {f"{autoscaler_build.SOURCE_PREFIX}go.mod": b"module k8s.io/autoscaler/cluster-autoscaler\n"})
    with pytest.raises(BuildError, match=f"is not the pinned {autoscaler_build.SOURCE_SHA256}"):
        autoscaler_build.unpack_source(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_source_member_outside_the_prefix_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _archive(tmp_path, {"../evil": b"x"})
    monkeypatch.setattr(autoscaler_build, "SOURCE_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest())
    with pytest.raises(BuildError, match="outside"):
        autoscaler_build.unpack_source(archive, tmp_path / "out")


def test_a_chart_with_another_checksum_or_none_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=autoscaler_build.CHART_ENV):
        autoscaler_build.checked_chart(None, tmp_path)
    other = tmp_path / "chart.tgz"
    other.write_bytes(b"not the chart")
    with pytest.raises(BuildError, match="is not the pinned"):
        autoscaler_build.checked_chart(other, tmp_path / "charts")


def test_the_source_path_comes_from_the_option_before_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(autoscaler_build.SOURCE_ENV, str(tmp_path / "env.tar.gz"))
    assert autoscaler_build.from_env(tmp_path / "opt.tar.gz", autoscaler_build.SOURCE_ENV) == tmp_path / "opt.tar.gz"
    assert autoscaler_build.from_env(None, autoscaler_build.SOURCE_ENV) == tmp_path / "env.tar.gz"
    monkeypatch.delenv(autoscaler_build.SOURCE_ENV)
    assert autoscaler_build.from_env(None, autoscaler_build.SOURCE_ENV) is None


def test_the_pin_is_the_tags_commit() -> None:
    """The pseudo-version names commit 35e8a280425c, the one tag cluster-autoscaler-1.36.1 points at."""
    version = autoscaler_build.pinned_version(PROJECT_ROOT / "sim")
    assert version.endswith("-35e8a280425c")


def test_spot_on_an_unknown_pool_says_unknown_pool(azure_dev: objects.StackObjects) -> None:
    with pytest.raises(BadInputError, match="unknown pool 'tt4'"):
        spot.set_spot(None, None, azure_dev, "tt4", available=False)  # type: ignore[arg-type]


def test_spot_on_a_pool_without_spot_names_the_pools_with_spot(azure_dev: objects.StackObjects) -> None:
    with pytest.raises(BadInputError, match=r"buys no Spot capacity \(pools with Spot: .*t4"):
        spot.set_spot(None, None, azure_dev, "system", available=False)  # type: ignore[arg-type]

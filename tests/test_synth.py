"""Offline synth on a small fixture project: the document, the manifests, the summary and the command line.

The fixture is a complete Pulumi project written into a temporary directory (its own
``Pulumi.yaml``, ``__main__.py`` and stack file), so these tests do not depend on the real stacks:
one component per GPU pool with a Spot and an on-demand ``AgentPool`` (options as the real ones
use them), a Kubernetes provider with a secret kubeconfig, a ConfigMap and a Namespace on it, and
the ``clusterName``/``kubeconfig``/``nodePools`` exports. Expected values come from the fixture's
config and from the VM size catalog, never from synth's own output.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.catalog.azure_vm_sizes import GPU_SIZES
from gpupools.synth import committed_stacks, config_error_in, main, stack_targets, synthesize, write
from gpupools.synth.document import addresses, desired_state, render_json, render_yaml
from gpupools.synth.summary import pool_rows, render, resource_tree, totals
from gpupools.testing import PROJECT_ROOT, REDACTED

FIXTURE_STACK = "fixture-dev"

FIXTURE_PROGRAM = '''
"""Fixture program for the synth tests: a trimmed AKS-shaped stack built from the validated config."""

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s

from gpupools import config
from gpupools.catalog.azure_vm_sizes import GPU_SIZES
from gpupools.conventions import CapacityType, Role, pool_labels
from gpupools.pools import NodePoolInfo

spec = config.load()
name = spec.cluster.name


class FixtureCluster(pulumi.ComponentResource):
    def __init__(self) -> None:
        super().__init__("gpupools:index:AksCluster", name)
        child = pulumi.ResourceOptions(parent=self)
        self.rg = azure_native.resources.ResourceGroup(f"{name}-rg", resource_group_name=f"{name}-rg", opts=child)
        system = spec.system_pool
        self.cluster = azure_native.containerservice.ManagedCluster(
            f"{name}-cluster",
            resource_group_name=self.rg.name,
            resource_name_=name,
            dns_prefix=name,
            agent_pool_profiles=[
                {
                    "name": "system",
                    "mode": "System",
                    "vm_size": system.instance_types[0],
                    "count": system.min_size,
                    "min_count": system.min_size,
                    "max_count": system.max_size,
                    "enable_auto_scaling": True,
                }
            ],
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["agentPoolProfiles[*].count"]),
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=pulumi.Output.secret("fixture-kubeconfig"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.cluster]),
        )
        self.register_outputs({})


class FixturePool(pulumi.ComponentResource):
    def __init__(self, pool, cluster, previous):
        super().__init__("gpupools:index:GpuNodePool", f"{name}-{pool.name}")
        size = GPU_SIZES[pool.instance_types[0]]
        zones = list(pool.zones or spec.cluster.zones)
        variants = [("spot", "s", CapacityType.SPOT, pool.max_size)]
        if pool.on_demand_fallback:
            variants.append(("ondemand", "o", CapacityType.ON_DEMAND, pool.fallback_max_size))
        self.infos = []
        for label, letter, capacity, max_size in variants:
            agent_pool = azure_native.containerservice.AgentPool(
                f"{name}-{pool.name}-{label}",
                agent_pool_name=f"{pool.name}{letter}",
                resource_group_name=cluster.rg.name,
                resource_name_=cluster.cluster.name,
                vm_size=size.name,
                count=pool.min_size,
                min_count=pool.min_size,
                max_count=max_size,
                enable_auto_scaling=True,
                availability_zones=zones,
                scale_set_priority="Spot" if capacity is CapacityType.SPOT else "Regular",
                node_labels={**pool_labels(pool.name, Role.GPU, capacity), **pool.labels},
                opts=pulumi.ResourceOptions(
                    parent=self,
                    ignore_changes=["count"],
                    replace_on_changes=["vmSize", "scaleSetPriority"],
                    delete_before_replace=True,
                    depends_on=previous,
                ),
            )
            previous = [agent_pool]
            self.infos.append(
                NodePoolInfo(
                    name=f"{pool.name}{letter}",
                    pool=pool.name,
                    role=Role.GPU,
                    capacity=capacity,
                    zones=tuple(zones),
                    instance_types=(size.name,),
                    min_size=pool.min_size,
                    max_size=max_size,
                    gpus_per_node=size.gpus,
                    gpu_model=size.gpu_model,
                )
            )
        self.last = previous
        self.register_outputs({})


cluster = FixtureCluster()
infos = [
    NodePoolInfo(
        name="system",
        pool="system",
        role=Role.SYSTEM,
        capacity=CapacityType.ON_DEMAND,
        zones=tuple(spec.cluster.zones),
        instance_types=spec.system_pool.instance_types,
        min_size=spec.system_pool.min_size,
        max_size=spec.system_pool.max_size,
    )
]
previous = [cluster.cluster]
for gpu_pool in spec.gpu_pools:
    component = FixturePool(gpu_pool, cluster, previous)
    previous = component.last
    infos += component.infos

on_provider = pulumi.ResourceOptions(provider=cluster.provider)
k8s.core.v1.Namespace("gpu-jobs", metadata={"name": "gpu-jobs"}, opts=on_provider)
k8s.core.v1.ConfigMap(
    "priority-expander",
    metadata={"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"},
    data={"priorities": "".join(f"10:\\n- ^aks-{i.name}-[0-9]+-vmss$\\n" for i in infos)},
    opts=on_provider,
)
pulumi.export("clusterName", name)
pulumi.export("kubeconfig", pulumi.Output.secret("fixture-kubeconfig"))
pulumi.export("nodePools", [i.to_output() for i in infos])
'''

FIXTURE_CONFIG: dict[str, Any] = {
    "gpupools:cloud": "azure",
    "azure-native:location": "eastus",
    "gpupools:cluster": {"name": "fx-dev", "zones": ["1", "2", "3"]},
    "gpupools:systemPool": {"instanceTypes": ["Standard_D4s_v5"], "minSize": 2, "maxSize": 3},
    "gpupools:gpuPools": [
        {"name": "t4", "instanceTypes": ["Standard_NC64as_T4_v3"], "maxSize": 6, "onDemandMaxSize": 2},
        {
            "name": "a100",
            "instanceTypes": ["Standard_NC48ads_A100_v4"],
            "minSize": 1,
            "maxSize": 3,
            "zones": ["1", "2"],
            "onDemandFallback": False,
        },
    ],
}


def make_project(root: Path, config: dict[str, Any] | None = None, stack: str = FIXTURE_STACK) -> Path:
    """Write the fixture project into ``root`` and return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text("name: gpupools\nruntime: python\n")
    (root / "__main__.py").write_text(FIXTURE_PROGRAM)
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config or FIXTURE_CONFIG}, sort_keys=False))
    return root


def with_pool(config: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    """A copy of ``config`` with ``changes`` applied to ``gpuPools[index]``."""
    changed = copy.deepcopy(config)
    changed["gpupools:gpuPools"][index].update(changes)
    return changed


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("fixture"))


@pytest.fixture(scope="module")
def synthesis(project: Path) -> Any:
    return synthesize(FIXTURE_STACK, project)


def by_address(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["address"]: r for r in document["resources"]}


# --- the desired-state document -------------------------------------------------------------------


def test_document_lists_every_registration_once_with_type_and_name(synthesis: Any) -> None:
    registered = {(r.type, r.name) for r in synthesis.run.registrations}
    listed = [(r["type"], r["name"]) for r in synthesis.document["resources"]]
    assert sorted(listed) == sorted(registered)
    assert len(listed) == len(set(listed))
    # 1 cluster component + rg + cluster + provider; t4 component + 2 pools; a100 component + 1 pool; 2 k8s objects
    assert len(listed) == 4 + 3 + 2 + 2


def test_resources_are_sorted_by_address(synthesis: Any) -> None:
    keys = [r["address"] for r in synthesis.document["resources"]]
    assert keys == sorted(keys)
    assert all(r["address"] == f"{r['type']}::{r['name']}" for r in synthesis.document["resources"])


def test_parent_is_an_address_not_a_urn(synthesis: Any) -> None:
    resources = by_address(synthesis.document)
    spot = resources["azure-native:containerservice:AgentPool::fx-dev-t4-spot"]
    assert spot["parent"] == "gpupools:index:GpuNodePool::fx-dev-t4"
    assert resources["gpupools:index:GpuNodePool::fx-dev-t4"]["parent"] is None
    assert "urn:pulumi" not in synthesis.document_json


def test_options_and_dependencies_are_recorded_as_addresses(synthesis: Any) -> None:
    resources = by_address(synthesis.document)
    spot = resources["azure-native:containerservice:AgentPool::fx-dev-a100-spot"]
    assert spot["options"]["ignoreChanges"] == ["count"]
    assert spot["options"]["replaceOnChanges"] == ["scaleSetPriority", "vmSize"]
    assert spot["options"]["deleteBeforeReplace"] is True
    # the a100 pool is chained after the t4 on-demand pool (explicit depends_on)
    assert "azure-native:containerservice:AgentPool::fx-dev-t4-ondemand" in spot["options"]["dependencies"]
    assert spot["options"]["dependencies"] == sorted(spot["options"]["dependencies"])


def test_provider_is_an_address(synthesis: Any) -> None:
    resources = by_address(synthesis.document)
    configmap = resources["kubernetes:core/v1:ConfigMap::priority-expander"]
    assert configmap["provider"] == "pulumi:providers:kubernetes::fx-dev-k8s"
    assert resources["azure-native:containerservice:AgentPool::fx-dev-t4-spot"]["provider"] is None


def test_inputs_come_from_the_config(synthesis: Any) -> None:
    inputs = by_address(synthesis.document)["azure-native:containerservice:AgentPool::fx-dev-t4-ondemand"]["inputs"]
    assert inputs["maxCount"] == FIXTURE_CONFIG["gpupools:gpuPools"][0]["onDemandMaxSize"]
    assert inputs["vmSize"] == "Standard_NC64as_T4_v3"
    assert inputs["nodeLabels"]["gpupools.io/pool"] == "t4"


def test_secrets_are_redacted_everywhere(synthesis: Any) -> None:
    provider = by_address(synthesis.document)["pulumi:providers:kubernetes::fx-dev-k8s"]
    assert provider["inputs"]["kubeconfig"] == REDACTED
    assert provider["secretPaths"] == ["kubeconfig"]
    assert synthesis.document["outputs"]["kubeconfig"] == REDACTED
    assert "fixture-kubeconfig" not in synthesis.document_json
    assert "fixture-kubeconfig" not in synthesis.manifests_yaml


def test_stack_outputs_are_in_the_document(synthesis: Any) -> None:
    outputs = synthesis.document["outputs"]
    assert outputs["clusterName"] == "fx-dev"
    assert {p["name"] for p in outputs["nodePools"]} == {"system", "t4s", "t4o", "a100s"}


def test_document_json_is_sorted_indented_and_ends_with_a_newline(synthesis: Any) -> None:
    text = synthesis.document_json
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_two_runs_give_identical_bytes(project: Path, synthesis: Any) -> None:
    again = synthesize(FIXTURE_STACK, project)
    assert again.document_json == synthesis.document_json
    assert again.manifests_yaml == synthesis.manifests_yaml


def test_addresses_are_qualified_only_when_type_and_name_collide() -> None:
    import pulumi
    from gpupools.testing import run_program

    def program() -> None:
        for parent_type in ("test:index:A", "test:index:B"):
            parent = pulumi.ComponentResource(parent_type, "p")
            pulumi.ComponentResource("test:index:Child", "same", opts=pulumi.ResourceOptions(parent=parent))
        pulumi.ComponentResource("test:index:Child", "unique")

    run = run_program(program)
    found = sorted(addresses(run.registrations).values())
    assert "test:index:Child::unique" in found
    assert "test:index:A$test:index:Child::same" in found
    assert "test:index:B$test:index:Child::same" in found
    assert "test:index:Child::same" not in found
    document = desired_state(run, "collide")
    assert len({r["address"] for r in document["resources"]}) == 5


# --- Kubernetes manifests -------------------------------------------------------------------------


def test_manifests_are_a_multi_document_stream_namespaces_first(synthesis: Any) -> None:
    documents = list(yaml.safe_load_all(synthesis.manifests_yaml))
    assert [d["kind"] for d in documents] == ["Namespace", "ConfigMap"]
    configmap = documents[1]
    assert configmap["apiVersion"] == "v1"
    assert configmap["metadata"] == {"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"}
    assert configmap["data"]["priorities"].count("-vmss$") == 4  # one regex per pool, system included


def test_multi_line_strings_are_literal_blocks() -> None:
    text = render_yaml([{"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "x: 1\ny: 2\n"}}])
    assert "a: |\n    x: 1\n    y: 2\n" in text
    assert yaml.safe_load(text)["data"]["a"] == "x: 1\ny: 2\n"


# --- summary --------------------------------------------------------------------------------------


def test_resource_tree_indents_children_under_their_parent(synthesis: Any) -> None:
    lines = resource_tree(synthesis.document)
    parent = lines.index("gpupools:index:GpuNodePool  fx-dev-t4")
    assert lines[parent + 1] == "  azure-native:containerservice:AgentPool  fx-dev-t4-ondemand"
    assert lines[parent + 2] == "  azure-native:containerservice:AgentPool  fx-dev-t4-spot"
    assert "kubernetes:core/v1:Namespace  gpu-jobs" in lines  # a root resource, no indent
    assert len(lines) == len(synthesis.document["resources"])


def test_pool_table_counts_gpus_from_the_catalog(synthesis: Any) -> None:
    rows = {r["NODE POOL/GROUP"]: r for r in pool_rows(synthesis.document["outputs"]["nodePools"])}
    t4_gpus = GPU_SIZES["Standard_NC64as_T4_v3"].gpus
    a100_gpus = GPU_SIZES["Standard_NC48ads_A100_v4"].gpus
    assert rows["t4s"]["GPUS/NODE"] == t4_gpus
    assert rows["t4s"]["GPUS AT MAX"] == 6 * t4_gpus
    assert rows["t4o"]["GPUS AT MAX"] == 2 * t4_gpus
    assert rows["t4s"]["IDLE GPUS"] == 0
    assert rows["a100s"]["IDLE GPUS"] == 1 * a100_gpus  # minSize 1
    assert rows["a100s"]["ZONES"] == "1,2"
    assert rows["system"]["GPUS AT MAX"] == 0
    # TOTAL is the fleet's ceiling: every row at max, t4's on-demand fallback (t4o, max 2) too.
    assert rows["t4o"]["CAPACITY"] == "on-demand fallback" and rows["t4s"]["CAPACITY"] == "spot"
    assert rows["system"]["CAPACITY"] == "on-demand"  # no Spot group in its pool: not a fallback
    total = totals(synthesis.document["outputs"]["nodePools"])
    assert total["GPUS AT MAX"] == 6 * t4_gpus + 2 * t4_gpus + 3 * a100_gpus
    assert total["IDLE GPUS"] == a100_gpus
    assert total["MAX"] == 3 + 6 + 2 + 3
    assert total["MIN"] == 2 + 0 + 0 + 1


def test_pool_table_puts_system_first_and_spot_before_on_demand(synthesis: Any) -> None:
    rows = pool_rows(synthesis.document["outputs"]["nodePools"])
    assert [r["NODE POOL/GROUP"] for r in rows] == ["system", "a100s", "t4s", "t4o"]


def test_summary_names_the_columns_and_shows_totals(synthesis: Any) -> None:
    text = render(synthesis.document)
    for column in ("ROLE", "CAPACITY", "ZONES", "INSTANCE TYPES", "MIN", "MAX", "GPUS/NODE", "GPUS AT MAX", "IDLE GPUS"):
        assert column in text
    total_line = next(line for line in text.splitlines() if line.strip().startswith("TOTAL"))
    # GPUS AT MAX and IDLE GPUS at the ceiling (t4's fallback too), then $/H AT MAX: this fixture
    # exports no cost output, so the sum over every row ("no price" when a price is unknown), to the cent.
    costs = [p.get("costPerHourAtMax") for p in synthesis.document["outputs"]["nodePools"]]
    figures = total_line.removesuffix("no price").split()
    assert (figures[-2:] if None in costs else figures[-3:-1]) == [str(6 * 4 + 2 * 4 + 3 * 2), "2"]
    if None in costs:
        assert total_line.endswith("  no price")
    else:
        assert abs(float(total_line.split()[-1].replace(",", "")) - sum(costs)) <= 0.01 * len(costs)
    assert "fx-dev-t4-spot" in text
    assert "fx-dev-t4-spot" not in render(synthesis.document, tree=False)


# --- command line ---------------------------------------------------------------------------------


def test_cli_writes_both_files_and_prints_the_summary(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([FIXTURE_STACK, "--root", str(project), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Node pools:" in printed and "GPUS AT MAX" in printed
    assert json.loads((out / "desired-state.json").read_text())["stack"] == FIXTURE_STACK
    assert [d["kind"] for d in yaml.safe_load_all((out / "kubernetes.yaml").read_text())] == ["Namespace", "ConfigMap"]


def test_cli_default_output_directory_is_synth_stack(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([FIXTURE_STACK, "--root", str(project), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert (project / "synth" / FIXTURE_STACK / "desired-state.json").exists()


def test_bad_config_exits_2_with_the_config_error_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path, with_pool(FIXTURE_CONFIG, 1, maxSzie=3))
    assert main([FIXTURE_STACK, "--root", str(root), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "gpupools:gpuPools[1].maxSzie: is not a known key, got 'maxSzie' (did you mean 'maxSize'?)\n"
    assert not (tmp_path / "out").exists()


def test_bad_config_message_is_the_config_error_from_the_loader(tmp_path: Path) -> None:
    from gpupools.config import parse
    from gpupools.errors import ConfigError

    bad = with_pool(FIXTURE_CONFIG, 0, minSize=9)
    with pytest.raises(ConfigError) as expected:
        parse(bad)
    root = make_project(tmp_path, bad)
    process = subprocess.run(
        [sys.executable, "-m", "gpupools.synth", FIXTURE_STACK, "--root", str(root)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert process.returncode == 2
    assert process.stderr == f"{expected.value}\n"
    assert "Traceback" not in process.stderr


def test_missing_stack_file_exits_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-stack", "--root", str(project)]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.no-such-stack.yaml" in err and FIXTURE_STACK in err


def test_list_prints_the_committed_stacks_with_cloud_and_region(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--root", str(project)]) == 0
    assert json.loads(capsys.readouterr().out) == [{"stack": FIXTURE_STACK, "cloud": "azure", "region": "eastus"}]
    assert committed_stacks(project) == [FIXTURE_STACK]
    assert stack_targets(project)[0]["cloud"] == "azure"


def test_config_error_is_found_behind_a_wrapping_exception() -> None:
    from gpupools.errors import ConfigError

    error = ConfigError("gpupools:cluster.name", "is required", None)
    try:
        try:
            raise error
        except ConfigError as inner:
            raise RuntimeError("program failed") from inner
    except RuntimeError as outer:
        assert config_error_in(outer) is error
    assert config_error_in(RuntimeError("other")) is None


def test_write_returns_the_paths_it_wrote(synthesis: Any, tmp_path: Path) -> None:
    paths = write(synthesis, tmp_path / "a" / "b")
    assert [p.name for p in paths] == ["desired-state.json", "kubernetes.yaml"]
    assert paths[0].read_text() == render_json(synthesis.document)


def test_gc_paused_restores_the_collector_state() -> None:
    import gc

    from gpupools.synth import gc_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: stays off
    finally:
        gc.enable()


def test_synth_with_and_without_the_gc_pause_is_identical(project: Path, synthesis: Any) -> None:
    assert synthesize(FIXTURE_STACK, project, pause_gc=False).document_json == synthesis.document_json

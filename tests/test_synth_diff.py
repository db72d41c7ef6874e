"""Synth diff: pure path and value diffing, the replace and capacity flags, the Markdown, the command line,
``--git-base``, and the acceptance check on the real stacks (a ``maxSize`` change of one pool shows
exactly that field on exactly that pool's resources)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gpupools.synth import synthesize
from gpupools.synth.diff import (
    COMMENT_LIMIT,
    COMMENT_MARKER,
    MISSING,
    Keyed,
    StackDiff,
    capacity_reason,
    changed_addresses,
    diff_against_ref,
    diff_documents,
    diff_values,
    format_path,
    main,
    parse_path,
    path_matches,
    render_markdown,
    replace_reason,
)
from gpupools.testing import PROJECT_ROOT, stack_config

from tests.test_synth import FIXTURE_CONFIG, FIXTURE_STACK, make_project, with_pool

# --- paths ----------------------------------------------------------------------------------------


def test_parse_path_reads_pulumi_property_paths() -> None:
    assert parse_path("vmSize") == ("vmSize",)
    assert parse_path("scalingConfig.maxSize") == ("scalingConfig", "maxSize")
    assert parse_path("agentPoolProfiles[*].count") == ("agentPoolProfiles", "*", "count")
    assert parse_path("tags[0]") == ("tags", 0)
    assert parse_path('nodeLabels["gpupools.io/pool"]') == ("nodeLabels", "gpupools.io/pool")


def test_format_path_quotes_keys_that_are_not_identifiers() -> None:
    assert format_path(("inputs", "nodeLabels", "gpupools.io/pool")) == 'inputs.nodeLabels["gpupools.io/pool"]'
    assert format_path(("inputs", "taints", 1, "key")) == "inputs.taints[1].key"
    assert format_path(("outputs", "nodePools", Keyed("name", "t4s"), "maxSize")) == "outputs.nodePools[name=t4s].maxSize"


def test_path_matches_wildcards_and_whole_objects() -> None:
    assert path_matches(("agentPoolProfiles", "*", "vmSize"), ("agentPoolProfiles", Keyed("name", "system"), "vmSize"))
    assert not path_matches(("agentPoolProfiles", "*", "vmSize"), ("agentPoolProfiles", 0, "count"))
    assert path_matches(("gpuProfile", "driver"), ("gpuProfile",))  # the whole object changed
    assert path_matches(("gpuProfile",), ("gpuProfile", "driver"))  # a field below it changed
    assert not path_matches(("vmSize",), ("vmSizeHint",))


# --- values ---------------------------------------------------------------------------------------


def test_diff_values_compares_scalar_lists_whole() -> None:
    changes = diff_values({"instanceTypes": ["g5.xlarge", "g6.xlarge"]}, {"instanceTypes": ["g6.xlarge"]})
    assert changes == [(("instanceTypes",), ["g5.xlarge", "g6.xlarge"], ["g6.xlarge"])]


def test_diff_values_matches_named_list_elements_by_name() -> None:
    old = {"pools": [{"name": "a", "max": 1}, {"name": "b", "max": 2}]}
    new = {"pools": [{"name": "z", "max": 9}, {"name": "a", "max": 1}, {"name": "b", "max": 3}]}
    changes = diff_values(old, new)
    assert changes == [
        (("pools", Keyed("name", "b"), "max"), 2, 3),
        (("pools", Keyed("name", "z")), MISSING, {"name": "z", "max": 9}),
    ]


def test_diff_values_falls_back_to_indexes_without_names() -> None:
    old = {"taints": [{"key": "a"}, {"key": "b"}]}
    new = {"taints": [{"key": "a"}, {"key": "c"}]}
    assert diff_values(old, new) == [(("taints", 1, "key"), "b", "c")]


def test_diff_values_reports_type_changes_and_missing_keys() -> None:
    assert diff_values({"a": 1}, {"a": True}) == [(("a",), 1, True)]
    assert diff_values({"a": 1}, {"b": 1}) == [(("a",), 1, MISSING), (("b",), MISSING, 1)]
    assert diff_values({"a": {"b": 1}}, {"a": {"b": 1}}) == []


# --- flags ----------------------------------------------------------------------------------------


def _resource(type_: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {
        "address": f"{type_}::r",
        "type": type_,
        "name": "r",
        "custom": True,
        "parent": None,
        "provider": None,
        "inputs": inputs,
        "secretPaths": [],
        "options": options,
    }


def test_replace_on_changes_option_flags_a_replacement() -> None:
    pool = _resource("azure-native:containerservice:AgentPool", {}, replaceOnChanges=["scaleSetPriority"])
    assert "replaceOnChanges" in replace_reason(pool, pool, ("inputs", "scaleSetPriority"))
    assert replace_reason(pool, pool, ("inputs", "maxCount")) == ""


def test_provider_force_new_fields_flag_a_replacement_without_the_option() -> None:
    group = _resource("aws:eks/nodeGroup:NodeGroup", {})
    assert replace_reason(group, group, ("inputs", "instanceTypes")) == "the provider replaces on this field"
    assert replace_reason(group, group, ("inputs", "capacityType")) != ""
    assert replace_reason(group, group, ("inputs", "scalingConfig", "maxSize")) == ""
    assert replace_reason(group, group, ("inputs", "labels", "team")) == ""


def test_name_like_fields_and_kubernetes_identity_flag_a_replacement() -> None:
    group = _resource("aws:eks/nodeGroup:NodeGroup", {})
    assert replace_reason(group, group, ("inputs", "nodeGroupName")) != ""
    configmap = _resource("kubernetes:core/v1:ConfigMap", {})
    assert replace_reason(configmap, configmap, ("inputs", "metadata", "name")) == "identifies the Kubernetes object"
    assert replace_reason(configmap, configmap, ("inputs", "metadata", "labels", "x")) == ""
    assert replace_reason(configmap, configmap, ("parent",)).startswith("new parent")


def test_capacity_fields_are_flagged_wherever_they_appear() -> None:
    assert capacity_reason(("inputs", "scalingConfig", "maxSize")) == "maxSize"
    assert capacity_reason(("inputs", "agentPoolProfiles", 0, "vmSize")) == "vmSize"
    assert capacity_reason(("inputs", "scaleSetPriority")) == "scaleSetPriority"
    assert capacity_reason(("inputs", "capacityType")) == "capacityType"
    assert capacity_reason(("inputs", "labels", "team")) == ""
    assert capacity_reason(("options", "ignoreChanges")) == ""
    # a whole inline pool added carries its counts
    assert (
        capacity_reason(("inputs", "agentPoolProfiles", Keyed("name", "gpu")), MISSING, {"name": "gpu", "maxCount": 3})
        == "maxCount"
    )


# --- on the fixture project -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synthesize(FIXTURE_STACK, make_project(tmp_path_factory.mktemp("base"))).document


def _synth(tmp_path: Path, config: dict[str, Any]) -> dict[str, Any]:
    return synthesize(FIXTURE_STACK, make_project(tmp_path, config)).document


def _pool_children(document: dict[str, Any], component: str) -> set[str]:
    return {r["address"] for r in document["resources"] if r["parent"] == component}


def test_identical_documents_have_an_empty_diff(base: dict[str, Any]) -> None:
    diff = diff_documents(base, json.loads(json.dumps(base)))
    assert diff.empty
    assert "No changes" in render_markdown([diff])


def test_max_size_of_one_pool_changes_exactly_that_field_on_that_pool(base: dict[str, Any], tmp_path: Path) -> None:
    # a100 has no onDemandMaxSize, so only its Spot pool exists; t4's fallback keeps onDemandMaxSize 2
    new = _synth(tmp_path, with_pool(FIXTURE_CONFIG, 0, maxSize=9))
    diff = diff_documents(base, new)
    assert not diff.added and not diff.removed
    assert [c.address for c in diff.changed] == ["azure-native:containerservice:AgentPool::fx-dev-t4-spot"]
    [change] = diff.changed
    assert [(f.path, f.old, f.new) for f in change.fields] == [("inputs.maxCount", 6, 9)]
    assert change.capacity and not change.replaces
    assert [f.path for f in diff.outputs] == ["outputs.nodePools[name=t4s].maxSize"]


def test_max_size_without_on_demand_max_changes_both_pools_of_that_pool_only(tmp_path: Path) -> None:
    config = with_pool(FIXTURE_CONFIG, 0, onDemandMaxSize=None)
    config["gpupools:gpuPools"][0].pop("onDemandMaxSize")
    old = _synth(tmp_path / "old", config)
    new = _synth(tmp_path / "new", with_pool(config, 0, maxSize=10))
    diff = diff_documents(old, new)
    assert {c.address for c in diff.changed} == _pool_children(old, "gpupools:index:GpuNodePool::fx-dev-t4")
    for change in diff.changed:
        assert [(f.path, f.old, f.new) for f in change.fields] == [("inputs.maxCount", 6, 10)]
    assert diff.fleet is not None
    before, after = diff.fleet
    assert after["ceiling GPUs"] - before["ceiling GPUs"] == 2 * 4 * 4  # 2 pools x 4 more nodes x 4 T4s per node


def test_vm_size_change_is_flagged_as_replacement_and_cost(base: dict[str, Any], tmp_path: Path) -> None:
    new = _synth(tmp_path, with_pool(FIXTURE_CONFIG, 1, instanceTypes=["Standard_NC24ads_A100_v4"]))
    diff = diff_documents(base, new)
    [change] = [c for c in diff.changed if c.type == "azure-native:containerservice:AgentPool"]
    assert change.address.endswith("fx-dev-a100-spot")
    [vm_size] = [f for f in change.fields if f.path == "inputs.vmSize"]
    assert vm_size.replaces == "in replaceOnChanges (vmSize)"
    assert vm_size.capacity == "vmSize"
    assert diff.replacements == 1
    markdown = render_markdown([diff])
    assert "⚠️ **replaces**" in markdown and "💰 **capacity/cost**" in markdown


def test_added_pool_is_listed_with_its_size_and_counted_as_capacity(base: dict[str, Any], tmp_path: Path) -> None:
    config = with_pool(FIXTURE_CONFIG, 0)
    config["gpupools:gpuPools"].append({"name": "h100", "instanceTypes": ["Standard_NC40ads_H100_v5"], "maxSize": 2})
    diff = diff_documents(base, _synth(tmp_path, config))
    added = {r["address"] for r in diff.added}
    assert added == {
        "gpupools:index:GpuNodePool::fx-dev-h100",
        "azure-native:containerservice:AgentPool::fx-dev-h100-spot",
        "azure-native:containerservice:AgentPool::fx-dev-h100-ondemand",
    }
    assert diff.capacity_changes >= 2
    markdown = render_markdown([diff])
    assert "#### Added" in markdown
    assert 'vmSize=`"Standard_NC40ads_H100_v5"`' in markdown
    assert "ceiling GPUs" in markdown


def test_removed_stack_and_new_stack_are_explained(base: dict[str, Any]) -> None:
    assert len(diff_documents(None, base).added) == len(base["resources"])
    assert "new stack" in diff_documents(None, base).notes[0]
    assert len(diff_documents(base, None).removed) == len(base["resources"])


def test_markdown_starts_with_the_comment_marker_and_stays_under_the_limit(base: dict[str, Any]) -> None:
    old, huge = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    for before, after in zip(old["resources"], huge["resources"], strict=True):
        before["inputs"]["notes"] = "\n".join(f"old line {i}" for i in range(400))
        after["inputs"]["notes"] = "\n".join(f"new line {i}" for i in range(400))
    text = render_markdown([diff_documents(old, huge)] * 5, base="main")
    assert text.startswith(COMMENT_MARKER + "\n## Synth diff against `main`")
    assert len(text) <= COMMENT_LIMIT + 200
    assert "cut to fit" in text


def test_multi_line_strings_are_shown_as_a_unified_diff(base: dict[str, Any]) -> None:
    new = json.loads(json.dumps(base))
    [configmap] = [r for r in new["resources"] if r["type"] == "kubernetes:core/v1:ConfigMap"]
    configmap["inputs"]["data"]["priorities"] = configmap["inputs"]["data"]["priorities"].replace("t4o", "t4x")
    markdown = render_markdown([diff_documents(base, new)])
    assert "~~~diff" in markdown
    assert "-- ^aks-t4o-[0-9]+-vmss$" in markdown and "+- ^aks-t4x-[0-9]+-vmss$" in markdown


# --- command line ---------------------------------------------------------------------------------


def test_cli_compares_two_files(base: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = _synth(tmp_path / "new", with_pool(FIXTURE_CONFIG, 0, maxSize=7))
    old_path, new_path = tmp_path / "old.json", tmp_path / "new.json"
    old_path.write_text(json.dumps(base))
    new_path.write_text(json.dumps(new))
    assert main([str(old_path), str(new_path)]) == 0
    out = capsys.readouterr().out
    assert "`inputs.maxCount`: `6` → `7`" in out
    assert main([str(old_path), str(new_path), "--exit-code"]) == 1
    assert main([str(old_path), str(old_path), "--exit-code"]) == 0
    assert main([str(old_path), str(new_path), "--output", str(tmp_path / "d.md")]) == 0
    assert (tmp_path / "d.md").read_text().startswith(COMMENT_MARKER)


def test_module_entry_points_run(base: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(base))
    for module in ("gpupools.synth.diff", "gpupools.synth"):
        args = [sys.executable, "-m", module] + (["diff"] if module == "gpupools.synth" else []) + [str(path), str(path)]
        process = subprocess.run(args, cwd=PROJECT_ROOT, capture_output=True, text=True)
        assert process.returncode == 0, process.stderr
        assert "No changes to the desired state." in process.stdout


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=synth-test", "-c", "user.email=synth-test@example.invalid", "-C", str(repo), *args],
        check=True,
        capture_output=True,
    )


def test_git_base_synthesizes_the_base_tree_with_its_own_code(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "repo")
    shutil.copytree(PROJECT_ROOT / "components", repo / "components", ignore=shutil.ignore_patterns("__pycache__", "synth"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    # the working tree: one pool bigger, and a second stack that does not exist at the base
    make_project(repo, with_pool(FIXTURE_CONFIG, 1, maxSize=5))
    make_project(repo, FIXTURE_CONFIG, stack="fixture-new")
    diffs = diff_against_ref("HEAD", None, repo)
    assert [d.stack for d in diffs] == [FIXTURE_STACK, "fixture-new"]
    existing, new_stack = diffs
    assert [c.address for c in existing.changed] == ["azure-native:containerservice:AgentPool::fx-dev-a100-spot"]
    assert [(f.path, f.old, f.new) for f in existing.changed[0].fields] == [("inputs.maxCount", 3, 5)]
    assert "new stack" in new_stack.notes[0]
    assert changed_addresses([existing]) == {"azure-native:containerservice:AgentPool::fx-dev-a100-spot"}


def test_git_base_reports_a_base_that_cannot_be_synthesized(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "repo", with_pool(FIXTURE_CONFIG, 0, maxSzie=1))
    shutil.copytree(PROJECT_ROOT / "components", repo / "components", ignore=shutil.ignore_patterns("__pycache__"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "broken base")
    make_project(repo)
    [diff] = diff_against_ref("HEAD", [FIXTURE_STACK], repo)
    assert isinstance(diff, StackDiff) and diff.empty
    assert "could not synthesize" in diff.notes[0] and "maxSzie" in diff.notes[0]


# --- the real stacks ------------------------------------------------------------------------------

REAL_STACKS = [s for s in ("azure-dev", "aws-dev") if (PROJECT_ROOT / f"Pulumi.{s}.yaml").exists()]


@pytest.mark.parametrize("stack", REAL_STACKS)
def test_real_stack_max_size_change_shows_exactly_that_field_on_exactly_that_pools_resources(stack: str) -> None:
    config = stack_config(stack)
    pools = [dict(p) for p in config["gpupools:gpuPools"]]
    pool = pools[0]
    pools[0] = {**pool, "maxSize": pool["maxSize"] + 3}
    old = synthesize(stack).document
    new = synthesize(stack, overrides={"gpupools:gpuPools": pools}).document
    diff = diff_documents(old, new, stack)
    assert not diff.added and not diff.removed
    assert diff.changed, "a bigger maxSize must change at least one node pool"
    by_address = {r["address"]: r for r in old["resources"]}
    # the pool's component (AKS GpuNodePool "<cluster>-<pool>", EKS GpuNodeGroup "<pool>")
    [component] = [
        a
        for a, r in by_address.items()
        if r["type"] in ("gpupools:index:GpuNodePool", "gpupools:index:GpuNodeGroup")
        and (r["name"] == pool["name"] or r["name"].endswith(f"-{pool['name']}"))
    ]

    def ancestors(address: str) -> set[str]:
        found: set[str] = set()
        while by_address[address]["parent"]:
            address = by_address[address]["parent"]
            found.add(address)
        return found

    for change in diff.changed:
        assert component in ancestors(change.address), f"{change.address} is not part of pool {pool['name']}"
        # An AKS agent pool's update deadline follows its upgrade estimate, which grows with its
        # max count (gpupools.azure.upgrade.operation_timeout): an option, never a replacement.
        options = [f for f in change.fields if f.segments[:2] == ("options", "customTimeouts")]
        inputs = [f for f in change.fields if f.segments[:2] != ("options", "customTimeouts")]
        assert {f.segments[-1] for f in inputs} <= {"maxCount", "maxSize"}, [f.path for f in change.fields]
        assert all(f.capacity and not f.replaces for f in inputs)
        assert all(not f.replaces for f in options) and (not options or stack.startswith("azure"))
        assert all(f.new > f.old for f in inputs)
    counts = [f for c in diff.changed for f in c.fields if f.segments[0] == "inputs"]
    assert sum(f.new - f.old for f in counts) == 3 + (
        3 if pool.get("onDemandMaxSize") is None and pool.get("onDemandFallback", True) else 0
    )


def test_changes_to_ignored_fields_are_marked_create_only() -> None:
    old = _resource("azure-native:containerservice:AgentPool", {"count": 0, "maxCount": 3}, ignoreChanges=["count"])
    new = _resource("azure-native:containerservice:AgentPool", {"count": 2, "maxCount": 3}, ignoreChanges=["count"])
    diff = diff_documents({"resources": [old]}, {"resources": [new]})
    [field] = diff.changed[0].fields
    assert (field.path, field.ignored, field.capacity) == ("inputs.count", "count", "count")
    assert "sent on create only" in render_markdown([diff])
    other = _resource("azure-native:containerservice:AgentPool", {"count": 0, "maxCount": 4}, ignoreChanges=["count"])
    [field] = diff_documents({"resources": [old]}, {"resources": [other]}).changed[0].fields
    assert field.path == "inputs.maxCount" and field.ignored == ""


def test_long_lists_show_what_was_removed_and_added() -> None:
    deps = [f"azure-native:containerservice:AgentPool::pool-{i}" for i in range(4)]
    old = _resource("azure-native:containerservice:AgentPool", {}, dependencies=deps)
    new = _resource("azure-native:containerservice:AgentPool", {}, dependencies=[*deps[1:], "kubernetes:core/v1:ConfigMap::x"])
    markdown = render_markdown([diff_documents({"resources": [old]}, {"resources": [new]})])
    line = next(line for line in markdown.splitlines() if "options.dependencies" in line)
    assert line == (
        '  - `options.dependencies`: removed `"azure-native:containerservice:AgentPool::pool-0"`; '
        'added `"kubernetes:core/v1:ConfigMap::x"`'
    )


@pytest.mark.parametrize("stack", ["azure-nap-dev", "aws-karpenter-dev"])
def test_nodepool_max_size_change_shows_its_limits_as_a_capacity_change(stack: str) -> None:
    """Under Karpenter ``maxSize`` is the NodePool's ``spec.limits``: the diff shows exactly those
    fields on exactly that NodePool, flagged as capacity, and adding a NodePool counts as capacity."""
    config = stack_config(stack)
    pools = [dict(p) for p in config["gpupools:gpuPools"]]
    pool = pools[0]
    pools[0] = {**pool, "maxSize": pool["maxSize"] + 2}
    old = synthesize(stack).document
    new = synthesize(stack, overrides={"gpupools:gpuPools": pools}).document
    diff = diff_documents(old, new, stack)
    [change] = diff.changed
    assert change.type == "kubernetes:karpenter.sh/v1:NodePool" and change.name.endswith(f"-{pool['name']}")
    assert {f.segments[:3] for f in change.fields} == {("inputs", "spec", "limits")}
    assert all(f.capacity == "spec.limits" and not f.replaces for f in change.fields)
    nodes = next(f for f in change.fields if f.segments[-1] == "nodes")
    assert (int(nodes.old), int(nodes.new)) == (pool["maxSize"], pool["maxSize"] + 2)
    assert diff.capacity_changes == 1

    added = [*pools, {"name": "extra", "instanceTypes": pool["instanceTypes"], "maxSize": 1}]
    grown = diff_documents(old, synthesize(stack, overrides={"gpupools:gpuPools": added}).document, stack)
    assert any(r["type"] == "kubernetes:karpenter.sh/v1:NodePool" for r in grown.added)
    assert grown.capacity_changes >= 1

"""A capacity change after the autoscaler moved a pool sends the pool's live size, on both clouds.

Each test plays one sequence on the committed example stacks:

1. ``pulumi up`` creates the stack: the real program on the recording runtime, nothing exists yet;
   the state then holds what was registered, and the provider's read after create;
2. the autoscaler changes every pool's live size (the "world" below answers the reads with it);
3. the config changes (``maxSize``, or ``minSize`` raised above the live size);
4. ``pulumi up`` again: the real program runs a second time, with the data-source reads answered
   by the world (or failing); ``gpupools.testing.update_model`` then plays the engine (refresh or
   not, ``ignoreChanges``) and the provider (what goes on the wire) over the two runs'
   registrations, and the test asserts on what EKS (``UpdateNodegroupConfig``) and AKS (the agent
   pool / managed cluster PUT) would receive: every EKS node group (GPU and system), every AKS
   agent pool and the inline system pool's ``agentPoolProfiles[0].count``.

Expected sizes come from the world each test sets up, never from the program's output.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pytest
import yaml
from gpupools.testing import PROJECT_ROOT, Registration, Run, fakes, run_stack, stack_config
from gpupools.testing import update_model as model

from tests.aks_model import ModelledAks

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
PROJECT = yaml.safe_load((PROJECT_ROOT / "Pulumi.yaml").read_text())
WORKFLOWS = PROJECT_ROOT / ".github" / "workflows"

Calls = dict[str, fakes.CallFake]


# --- the pools of a run, by their cloud name -----------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """One autoscaled pool as registered: its resource, and where its count lives in the inputs."""

    name: str
    registration: Registration
    count_path: str

    @property
    def count(self) -> int:
        return int(model.get_path(self.registration.inputs, self.count_path))

    def bound(self, key: str) -> int:
        inputs = self.registration.inputs
        if self.registration.type == NODE_GROUP:
            return int(inputs["scalingConfig"][key])
        profile = (
            model.get_path(inputs, self.count_path.rsplit(".", 1)[0]) if self.registration.type == MANAGED_CLUSTER else inputs
        )
        return int(profile[{"minSize": "minCount", "maxSize": "maxCount"}[key]])


def pools(run: Run) -> dict[str, Pool]:
    found: dict[str, Pool] = {}
    for r in run.of_type(NODE_GROUP):
        found[r.inputs["nodeGroupName"]] = Pool(r.inputs["nodeGroupName"], r, "scalingConfig.desiredSize")
    for r in run.of_type(AGENT_POOL):
        found[r.inputs["agentPoolName"]] = Pool(r.inputs["agentPoolName"], r, "count")
    for r in run.of_type(MANAGED_CLUSTER):
        profiles = r.inputs["agentPoolProfiles"]
        index = next(i for i, p in enumerate(profiles) if p["name"] == "system")
        found["system"] = Pool("system", r, f"agentPoolProfiles[{index}].count")
    return found


# --- the world: what the clouds answer the program's reads --------------------------------------


def aws_world(created: Run, live: Mapping[str, int], versions: Mapping[str, str] | None = None) -> Calls:
    """EKS and Auto Scaling as they stand after the autoscaler moved: the cluster and its groups
    exist, each group's ASG has the ``live`` desired capacity, and the node group's own
    ``desiredSize`` lags one behind (EKS: it "can be out-of-date for short periods of time").
    The control plane and every group run the version they were created with, except the groups
    named in ``versions`` (a group held at an older minor)."""
    groups = {r.inputs["nodeGroupName"]: r for r in created.of_type(NODE_GROUP)}
    cluster = next(iter(groups.values())).inputs["clusterName"]
    asg = {name: f"eks-{name}-asg" for name in groups}
    [control_plane] = created.of_type("eks:index:Cluster")

    def node_group(args: Mapping[str, Any]) -> dict[str, Any]:
        name = args["nodeGroupName"]
        scaling = groups[name].inputs["scalingConfig"]
        return {
            "clusterName": cluster,
            "nodeGroupName": name,
            "version": (versions or {}).get(name, groups[name].inputs["version"]),
            "scalingConfigs": [{**scaling, "desiredSize": max(live[name] - 1, 0)}],
            "resources": [{"autoscalingGroups": [{"name": asg[name]}], "remoteAccessSecurityGroupId": ""}],
        }

    def eks_cluster(args: Mapping[str, Any]) -> dict[str, Any]:
        assert args["name"] == cluster
        return {"name": cluster, "version": control_plane.inputs["version"], "status": "ACTIVE"}

    def group(args: Mapping[str, Any]) -> dict[str, Any]:
        [name] = [n for n, a in asg.items() if a == args["name"]]
        return {"name": args["name"], "desiredCapacity": live[name]}

    return {
        "aws:eks/getClusters:getClusters": lambda _: {"names": ["another", cluster]},
        "aws:eks/getNodeGroups:getNodeGroups": lambda args: {"clusterName": args["clusterName"], "names": sorted(groups)},
        "aws:eks/getNodeGroup:getNodeGroup": node_group,
        "aws:eks/getCluster:getCluster": eks_cluster,
        "aws:autoscaling/getGroup:getGroup": group,
    }


def aks_model(created: Run, live: Mapping[str, int]) -> ModelledAks:
    """AKS after the first ``up`` applied what the program created (the cluster, then every pool),
    with each pool at its ``live`` count (``tests/aks_model.py``: answers shaped like the AKS REST
    spec's example responses, ``orchestratorVersion`` on every pool)."""
    [cluster] = created.of_type(MANAGED_CLUSTER)
    aks = ModelledAks(cluster.inputs["kubernetesVersion"], {})
    aks.create_cluster(cluster.inputs)
    for r in created.of_type(AGENT_POOL):
        aks.put_agent_pool(r.inputs["agentPoolName"], r.inputs)
    for name, count in live.items():
        if name in aks.pools:
            aks.pools[name]["count"] = count
    return aks


def aks_pools(created: Run, live: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Every agent pool as AKS's GETs answer after the autoscaler moved (``aks_model``)."""
    aks = aks_model(created, live)
    return {name: aks.pool_answer(name) for name in aks.pools}


def model_world(aks: ModelledAks) -> Calls:
    """``Agent Pools - Get`` and ``Managed Clusters - Get`` answered by ``aks``."""

    def agent_pool(args: Mapping[str, Any]) -> dict[str, Any]:
        name = args["agentPoolName"]
        if name not in aks.pools:
            raise fakes.InvokeError(fakes.arm_not_found(args, f"/agentPools/{name}"))
        return aks.pool_answer(name)

    return {
        "azure-native:containerservice:getAgentPool": agent_pool,
        "azure-native:containerservice:getManagedCluster": lambda args: aks.cluster_answer(args["resourceName"]),
    }


def azure_world(created: Run, live: Mapping[str, int]) -> Calls:
    """AKS as it stands after the autoscaler moved: every pool exists with its ``live`` count;
    ``Agent Pools - Get`` answers one, ``Managed Clusters - Get`` lists them all."""
    return model_world(aks_model(created, live))


def unreadable(stack: str) -> Calls:
    """Every live-size read is denied (a deployer without the read permissions)."""

    def deny(_: Mapping[str, Any]) -> dict[str, Any]:
        raise fakes.InvokeError("403 Forbidden: AccessDenied / AuthorizationFailed")

    if stack == "aws-dev":
        return {"aws:eks/getClusters:getClusters": deny}
    return {"azure-native:containerservice:getAgentPool": deny}


def world(stack: str, created: Run, live: Mapping[str, int]) -> Calls:
    return aws_world(created, live) if stack == "aws-dev" else azure_world(created, live)


# --- the engine and the providers over two runs --------------------------------------------------


def created_state(pool: Pool) -> model.Stored:
    """The state after create: the registered inputs, and the provider's read right after create
    (the count as created)."""
    return model.Stored(inputs=copy.deepcopy(pool.registration.inputs), outputs=copy.deepcopy(pool.registration.inputs))


def sent_count(stack: str, created: Pool, updated: Pool, live: int, *, refresh: bool) -> int | None:
    """The count the cloud receives for the pool on the second ``pulumi up`` (None: no update call)."""
    stored = created_state(created)
    read = model.set_path(stored.outputs, created.count_path, live)
    if refresh:
        stored = model.bridge_refresh(stored, read) if stack == "aws-dev" else model.azure_native_refresh(stored, read)
    new_inputs = model.reset_ignored(updated.registration.inputs, stored.inputs, updated.registration.ignore_changes)
    if stack == "aws-dev":
        request = model.eks_update_request(stored, new_inputs)
        if request is None:
            return None
        model.eks_check(request)
        return int(request["desiredSize"])
    body = model.azure_native_put(stored, new_inputs)
    return None if body is None else int(model.get_path(body, created.count_path))


def live_sizes(created: dict[str, Pool]) -> dict[str, int]:
    """Where the autoscaler took each pool: above its create-time size, inside its bounds, and
    different from pool to pool."""
    sizes = {}
    for index, (name, pool) in enumerate(sorted(created.items())):
        low, high = pool.bound("minSize"), pool.bound("maxSize")
        assert high > low, f"{name} cannot move"
        sizes[name] = low + 1 + index % (high - low)
    return sizes


def bigger(stack: str) -> dict[str, Any]:
    """Every pool's maximum raised: each pool gets a scaling-config update."""
    config = stack_config(stack)
    gpu = [
        {**p, "maxSize": p["maxSize"] + 3, "onDemandMaxSize": p.get("onDemandMaxSize", p["maxSize"]) + 3}
        for p in config["gpupools:gpuPools"]
    ]
    cpu = [
        {**p, "maxSize": p["maxSize"] + 3, "onDemandMaxSize": p.get("onDemandMaxSize", p["maxSize"]) + 3}
        for p in config.get("gpupools:cpuPools", [])
    ]
    system = {**config["gpupools:systemPool"], "maxSize": config["gpupools:systemPool"]["maxSize"] + 2}
    return {"gpupools:gpuPools": gpu, "gpupools:cpuPools": cpu, "gpupools:systemPool": system}


def play(stack: str, overrides: Mapping[str, Any], reads: Callable[[Run, Mapping[str, int]], Calls], *, refresh: bool | None):
    """Create, move every pool, change the config, update: ``(created pools, live sizes, {pool: sent})``."""
    first = run_stack(stack)
    created = pools(first)
    live = live_sizes(created)
    second = pools(run_stack(stack, overrides=overrides, calls=reads(first, live)))
    assert set(second) == set(created), "a capacity change must never rename (replace) a pool"
    refreshing = model.refresh_requested(PROJECT, refresh)
    sent = {name: sent_count(stack, created[name], second[name], live[name], refresh=refreshing) for name in created}
    return created, live, sent


STACKS = ("aws-dev", "azure-dev")


# --- the sequences -------------------------------------------------------------------------------


@pytest.mark.parametrize("refresh", [None, False], ids=["project-default", "refresh=false"])
@pytest.mark.parametrize("stack", STACKS)
def test_a_max_change_after_the_autoscaler_moved_sends_the_live_size(stack: str, refresh: bool | None) -> None:
    """With the live size readable, the update carries it, whether or not the update refreshed."""
    created, live, sent = play(stack, bigger(stack), lambda first, live: world(stack, first, live), refresh=refresh)
    assert any(p.registration.type in (NODE_GROUP, AGENT_POOL) and "system" not in n for n, p in created.items())
    assert any("system" in n for n in created), "the system pool is covered too"
    assert sent == live


@pytest.mark.parametrize("stack", STACKS)
def test_when_the_live_size_cannot_be_read_ignore_changes_and_the_refresh_send_it(stack: str) -> None:
    """Reads denied: the program falls back to ``ignoreChanges``, and the refresh the project runs
    before every update (``options.refresh: always``) makes the stored value the live one."""
    assert model.refresh_requested(PROJECT), "Pulumi.yaml must set options.refresh: always"
    _, live, sent = play(stack, bigger(stack), lambda first, live: unreadable(stack), refresh=None)
    if stack == "azure-dev":
        # The AKS System pool cannot be compared with the cluster's, so the inline array stays
        # ignored whole: no managed-cluster PUT at all (the systemPool change waits for a readable up).
        assert sent.pop("system") is None
        live = {name: size for name, size in live.items() if name != "system"}
    assert sent == live


@pytest.mark.parametrize("stack", STACKS)
def test_without_a_read_and_without_a_refresh_the_stale_size_is_sent(stack: str) -> None:
    """The one unprotected case (docs/safety.md): reads denied *and* ``--refresh=false``. The
    stored create-time size goes out and the cloud resizes the pool back to it."""
    created, live, sent = play(stack, bigger(stack), lambda first, live: unreadable(stack), refresh=False)
    if stack == "azure-dev":
        # Not the AKS System pool: its inline array is ignored whole, so nothing is sent for it.
        assert sent.pop("system") is None
        created = {name: pool for name, pool in created.items() if name != "system"}
    assert sent == {name: pool.count for name, pool in created.items()}
    assert all(sent[name] != live[name] for name in created)


def raised_minimums(stack: str) -> dict[str, Any]:
    """The system pool's minimum raised to its maximum, and the first GPU pool's to 3 (1 per zone on
    EKS, 3 on the AKS Spot pool): above the live sizes the tests set."""
    config = stack_config(stack)
    system = {**config["gpupools:systemPool"], "minSize": config["gpupools:systemPool"]["maxSize"]}
    gpu = copy.deepcopy(config["gpupools:gpuPools"])
    gpu[0]["minSize"] = 3
    return {"gpupools:systemPool": system, "gpupools:gpuPools": gpu}


def test_eks_min_raised_above_the_live_size_sends_the_new_minimum() -> None:
    """EKS rejects ``minSize > desiredSize``; the update sends the live size brought up to the new
    minimum instead (a group already above it keeps its live size)."""
    first = run_stack("aws-dev")
    created = pools(first)
    live = {name: pool.bound("minSize") for name, pool in created.items()}  # the autoscaler scaled every group down
    second = pools(run_stack("aws-dev", overrides=raised_minimums("aws-dev"), calls=aws_world(first, live)))
    raised = {name for name in second if second[name].bound("minSize") > created[name].bound("minSize")}
    assert {n for n in raised if "system" in n} and {n for n in raised if "system" not in n}
    for name, pool in second.items():
        sent = sent_count("aws-dev", created[name], pool, live[name], refresh=model.refresh_requested(PROJECT))
        if name in raised:
            assert sent == pool.bound("minSize") > live[name], name
        else:
            assert sent is None, f"{name}: nothing changed, nothing sent"


def test_eks_would_reject_the_raise_if_the_desired_size_were_left_to_ignore_changes() -> None:
    """Why the live read matters for a raised minimum: under ``ignoreChanges`` the refreshed live
    size goes out with the new minimum, and EKS rejects it."""
    first = run_stack("aws-dev")
    created = pools(first)
    live = {name: pool.bound("minSize") for name, pool in created.items()}
    second = pools(run_stack("aws-dev", overrides=raised_minimums("aws-dev"), calls=unreadable("aws-dev")))
    system = next(n for n in second if "system" in n)
    with pytest.raises(model.EksRejectedError, match="Minimum capacity 4 can't be greater than desired size 2"):
        sent_count("aws-dev", created[system], second[system], live[system], refresh=True)


def test_aks_min_raised_above_the_live_count_keeps_the_live_count() -> None:
    """AKS takes a live count below a raised ``minCount`` (what ``az aks nodepool update`` sends); a
    different count would resize the pool, so the live one goes out."""
    first = run_stack("azure-dev")
    created = pools(first)
    live = {name: pool.bound("minSize") + 1 for name, pool in created.items()}
    second = pools(run_stack("azure-dev", overrides=raised_minimums("azure-dev"), calls=azure_world(first, live)))
    raised = {name for name in second if second[name].bound("minSize") > live[name]}
    assert {n for n in raised if n == "system"} and {n for n in raised if n != "system"}
    for name in raised:
        assert sent_count("azure-dev", created[name], second[name], live[name], refresh=False) == live[name], name


@pytest.mark.parametrize("stack", STACKS)
def test_the_live_size_never_changes_a_name_or_a_create_only_field(stack: str) -> None:
    """Reading the live size changes the count and whether it is ignored, nothing else: no pool is
    renamed or replaced, and the creation run registers what it always did."""
    first = run_stack(stack)
    created = pools(first)
    live = live_sizes(created)
    second = pools(run_stack(stack, calls=world(stack, first, live)))
    assert set(second) == set(created)
    if stack == "azure-dev":
        # The AKS inline array: unchanged System pool, so the program registers what it created
        # and ignores the whole array (tests/test_inline_pools.py).
        before, after = created.pop("system").registration, second.pop("system").registration
        # On the existing cluster also the force-new network fields (equal to AKS's, or refused) and the
        # empty allow-list (gpupools.azure.cluster.cluster_ignore_changes).
        assert after.inputs == before.inputs and before.ignore_changes == ["agentPoolProfiles"]
        assert sorted(after.ignore_changes) == [
            "agentPoolProfiles",
            "apiServerAccessProfile",
            "networkProfile.networkDataplane",
            "networkProfile.networkPolicy",
        ]
    for name, pool in second.items():
        before, after = created[name].registration, pool.registration
        assert model.set_path(after.inputs, pool.count_path, 0) == model.set_path(before.inputs, pool.count_path, 0), name
        assert after.replace_on_changes == before.replace_on_changes, name
        assert pool.count == live[name] and created[name].count == created[name].bound("minSize"), name
        assert before.ignore_changes == [pool.count_path] and after.ignore_changes == [], name


def test_gpu_groups_are_still_created_empty_and_the_system_pool_at_its_minimum() -> None:
    for stack in STACKS:
        for name, pool in pools(run_stack(stack)).items():
            assert pool.count == pool.bound("minSize"), name
            expected = ["agentPoolProfiles"] if pool.registration.type == MANAGED_CLUSTER else [pool.count_path]
            assert pool.registration.ignore_changes == expected, name


# --- the project and the workflows refresh before every update -----------------------------------


def test_the_project_refreshes_before_every_update() -> None:
    """``options.refresh: always`` (Pulumi project file reference; pulumi/pulumi
    ``sdk/go/common/workspace/project.json``: ``"const": "always"``)."""
    assert PROJECT["options"]["refresh"] == "always"
    assert model.refresh_requested(PROJECT) is True
    assert model.refresh_requested(PROJECT, False) is False
    assert model.refresh_requested({"name": "p"}) is False


@pytest.mark.parametrize("workflow, command", [("preview.yml", "preview"), ("deploy.yml", "up")])
def test_the_workflows_refresh_before_preview_and_up(workflow: str, command: str) -> None:
    document = yaml.safe_load((WORKFLOWS / workflow).read_text())
    steps = [
        step
        for job in document["jobs"].values()
        for step in job.get("steps", [])
        if str(step.get("uses", "")).startswith("pulumi/actions@")
    ]
    assert [s["with"]["command"] for s in steps] == [command]
    assert all(str(s["with"].get("refresh")).lower() == "true" for s in steps)


# --- the model itself, on the sources' own examples ----------------------------------------------


def test_ignore_changes_copies_the_old_value_and_drops_what_the_old_inputs_lack() -> None:
    new = {"scalingConfig": {"minSize": 0, "maxSize": 9, "desiredSize": 0}, "agentPoolProfiles": [{"count": 2}]}
    old = {"scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 5}, "agentPoolProfiles": [{"name": "x"}]}
    result = model.reset_ignored(new, old, ["scalingConfig.desiredSize", "agentPoolProfiles[0].count"])
    assert result["scalingConfig"] == {"minSize": 0, "maxSize": 9, "desiredSize": 5}
    assert result["agentPoolProfiles"] == [{}]


def test_refresh_takes_the_read_size_into_the_stored_inputs_on_both_providers() -> None:
    stored = model.Stored(
        inputs={"scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 0}, "tags": {"a": "b"}},
        outputs={"scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 0}, "tags": {"a": "b"}, "arn": "x"},
    )
    read = {"scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 4}, "tags": {"a": "b"}, "arn": "x"}
    assert model.bridge_refresh(stored, read).inputs == {
        "scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 4},
        "tags": {"a": "b"},
    }
    pool = model.Stored(inputs={"count": 0, "maxCount": 4}, outputs={"count": 0, "maxCount": 4, "powerState": "Running"})
    assert model.azure_native_refresh(pool, {"count": 3, "maxCount": 4, "powerState": "Running"}).inputs == {
        "count": 3,
        "maxCount": 4,
    }
    cluster = model.Stored(
        inputs={"agentPoolProfiles": [{"name": "system", "count": 2}]},
        outputs={"agentPoolProfiles": [{"name": "system", "count": 2, "vmSize": "D4"}]},
    )
    read_cluster = {"agentPoolProfiles": [{"name": "system", "count": 3, "vmSize": "D4"}]}
    assert model.azure_native_refresh(cluster, read_cluster).inputs == {"agentPoolProfiles": [{"name": "system", "count": 3}]}


def test_eks_model_sends_scaling_config_whole_only_when_it_changed() -> None:
    stored = model.Stored(inputs={}, outputs={"scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 2}})
    assert model.eks_update_request(stored, {"scalingConfig": {"minSize": 0, "maxSize": 6, "desiredSize": 2}}) is None
    request = model.eks_update_request(stored, {"scalingConfig": {"minSize": 0, "maxSize": 9, "desiredSize": 2}})
    assert request == {"minSize": 0, "maxSize": 9, "desiredSize": 2}
    with pytest.raises(model.EksRejectedError):
        model.eks_check({"minSize": 3, "maxSize": 9, "desiredSize": 2})
    with pytest.raises(model.EksRejectedError):
        model.eks_check({"minSize": 0, "maxSize": 1, "desiredSize": 2})

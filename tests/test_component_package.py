"""The cross-language component package (``gpupools.xlang``, ``package/``), without the Pulumi CLI.

* The schema: the Python SDK's own analyzer (``pulumi.provider.experimental``, in-process) infers it
  from ``gpupools.xlang.COMPONENTS``. Every public component is in it, every input and output is
  typed (no ``pulumi.json#/Any``) and described, and the whole document validates against Pulumi's
  package metaschema (pinned in ``tests/schemas/``).
* Construction: each component is built through ``ComponentProvider.construct``, the method the
  provider runs when another language's SDK asks for ``gpupools:index:<Name>``, on the recording
  mock runtime, with camelCase inputs as the engine sends them (integers as floats, as on the
  wire). It must register exactly what the Python API registers for the same input.
* The docs' YAML example uses only properties the schema has.

Adding a component: one line in ``gpupools.xlang.COMPONENTS`` and one ``Case`` in ``CASES``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pulumi
import pytest
import yaml
from google.protobuf import json_format
from gpupools import config, xlang
from gpupools import warm as warm_rules
from gpupools.aws.auto_mode import AutoModeNodePools
from gpupools.aws.autoscaler import ClusterAutoscaler
from gpupools.aws.cluster import EksCluster
from gpupools.aws.karpenter import Karpenter
from gpupools.aws.karpenter_nodes import KarpenterNodePools
from gpupools.aws.node_group import CpuNodeGroup, GpuNodeGroup, plan_gpu_groups
from gpupools.azure.cluster import AksCluster
from gpupools.azure.maintenance import NodeImageMaintenance
from gpupools.azure.nap_nodes import NapNodePools
from gpupools.azure.node_pool import CpuNodePool, GpuNodePool, plan_agent_pools
from gpupools.errors import ConfigError
from gpupools.kubernetes.dcgm_exporter import DcgmExporter
from gpupools.kubernetes.device_plugin import NvidiaDevicePlugin
from gpupools.kubernetes.efa_device_plugin import EfaDevicePlugin
from gpupools.kubernetes.priority_expander import PriorityExpander
from gpupools.kubernetes.smoke_test import GpuSmokeTest
from gpupools.kubernetes.warm import WarmCapacity
from gpupools.pools import NodePoolInfo
from gpupools.queueing import Kueue, KueueQueues, flavours
from gpupools.specs import ClusterSpec, MaintenanceSpec, SystemPoolSpec, TeamQueueSpec, WeekDay
from gpupools.testing import Registration, run_program
from gpupools.xlang import convert
from pulumi.runtime import rpc

from tests.k8s_schema import aks_system_pool

ROOT = Path(__file__).resolve().parents[1]
METASCHEMA = ROOT / "tests" / "schemas" / "pulumi-package-metaschema.json"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return xlang.schema()


# -- schema -----------------------------------------------------------------------------------

PUBLIC = {
    "gpupools.azure": ["AksCluster", "GpuNodePool", "CpuNodePool", "NapNodePools", "NodeImageMaintenance"],
    "gpupools.aws": [
        "EksCluster",
        "GpuNodeGroup",
        "CpuNodeGroup",
        "KarpenterNodePools",
        "AutoModeNodePools",
        "Karpenter",
        "ClusterAutoscaler",
    ],
    "gpupools.kubernetes": ["NvidiaDevicePlugin", "DcgmExporter", "EfaDevicePlugin", "PriorityExpander", "GpuSmokeTest"],
    "gpupools.kubernetes.warm": ["WarmCapacity"],
    "gpupools.queueing": ["Kueue", "KueueQueues"],
}


def library_components() -> set[str]:
    """Every ``ComponentResource`` subclass the library's modules define (found, not listed)."""
    import importlib
    import inspect
    import pkgutil

    import gpupools

    found = set()
    for module_info in pkgutil.walk_packages(gpupools.__path__, "gpupools."):
        if ".xlang" in module_info.name or ".testing" in module_info.name or module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, pulumi.ComponentResource) and obj.__module__ == module.__name__:
                found.add(obj.__name__)
    return found


def test_every_public_component_is_in_the_schema(schema: dict[str, Any]) -> None:
    tokens = {f"gpupools:index:{name}" for name in library_components()}
    assert tokens, "no component found"
    assert tokens == set(schema["resources"]), "a component of the library is missing from gpupools.xlang.COMPONENTS"
    assert all(schema["resources"][t]["isComponent"] for t in tokens)


def test_the_package_is_named_and_versioned_like_the_library(schema: dict[str, Any]) -> None:
    from gpupools._version import __version__

    assert (schema["name"], schema["version"]) == ("gpupools", __version__)


def _properties(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    rows = []
    for token, resource in schema["resources"].items():
        rows += [(f"{token} input", k, v) for k, v in resource.get("inputProperties", {}).items()]
        rows += [(f"{token} output", k, v) for k, v in resource.get("properties", {}).items()]
    for token, type_ in schema.get("types", {}).items():
        rows += [(token, k, v) for k, v in type_.get("properties", {}).items()]
    return rows


def test_every_property_is_typed_and_described(schema: dict[str, Any]) -> None:
    rows = _properties(schema)
    assert len(rows) > 100
    untyped = [(where, k) for where, k, v in rows if "Any" in json.dumps(v) or not ("type" in v or "$ref" in v)]
    undescribed = [(where, k) for where, k, v in rows if not v.get("description")]
    assert untyped == []
    assert undescribed == []
    for token, resource in schema["resources"].items():
        assert resource.get("description"), token


def test_inputs_are_the_python_api_in_camel_case(schema: dict[str, Any]) -> None:
    pool = schema["types"]["gpupools:index:PoolArgs"]
    assert set(pool["properties"]) == set(config.GPU_POOL_KEYS), "PoolArgs must mirror the gpuPools config keys"
    assert sorted(pool["required"]) == ["instanceTypes", "maxSize", "name"]
    assert set(schema["types"]["gpupools:index:ClusterArgs"]["properties"]) == set(config.CLUSTER_KEYS)
    assert set(schema["types"]["gpupools:index:NetworkArgs"]["properties"]) == set(config.NETWORK_KEYS)
    assert set(schema["types"]["gpupools:index:SystemPoolArgs"]["properties"]) == set(config.SYSTEM_POOL_KEYS)
    assert set(schema["types"]["gpupools:index:MaintenanceArgs"]["properties"]) == set(config.MAINTENANCE_KEYS)
    assert set(schema["types"]["gpupools:index:AutoscalerArgs"]["properties"]) == set(config.AUTOSCALER_KEYS)
    gpu = schema["resources"]["gpupools:index:GpuNodePool"]
    assert sorted(gpu["requiredInputs"]) == ["clusterName", "pool", "resourceGroupName"]
    assert gpu["inputProperties"]["pool"]["$ref"] == "#/types/gpupools:index:PoolArgs"


def test_python_only_arguments_are_not_in_the_schema(schema: dict[str, Any]) -> None:
    from pulumi.provider.experimental.util import camel_case

    for name, python_only in convert.PYTHON_ONLY.items():
        inputs = schema["resources"][f"gpupools:index:{name}"]["inputProperties"]
        assert not {camel_case(k) for k in python_only} & set(inputs), name
    assert set(convert.PYTHON_ONLY) == {c.__name__ for c in xlang.COMPONENTS}


def load_metaschema() -> dict[str, Any]:
    """The pinned metaschema, its regexes in Python syntax: it writes named groups the ECMA-262 way
    (``(?<major>...)``), which Python's ``re`` (what ``jsonschema`` runs ``pattern`` with) spells
    ``(?P<major>...)``. Nothing else changes."""
    text = METASCHEMA.read_text().replace("(?<", "(?P<")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_the_schema_validates_against_the_pulumi_package_metaschema(schema: dict[str, Any]) -> None:
    metaschema = load_metaschema()
    jsonschema.Draft202012Validator.check_schema(metaschema)
    jsonschema.Draft202012Validator(metaschema).validate(schema)


def test_the_metaschema_check_can_fail(schema: dict[str, Any]) -> None:
    metaschema = load_metaschema()
    broken = json.loads(json.dumps(schema))
    broken["resources"]["gpupools:index:GpuNodePool"]["inputProperties"]["clusterName"]["type"] = "text"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(metaschema).validate(broken)


# -- construct --------------------------------------------------------------------------------

T4 = {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4, "labels": {"team.example.com/owner": "vision"}}
AKS_CPU = {"name": "general", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 6}
G5 = {"name": "g5", "instanceTypes": ["g5.xlarge"], "maxSize": 4, "zones": ["us-west-2a"]}
G6 = {"name": "g6", "instanceTypes": ["g6.xlarge", "g5.xlarge"], "maxSize": 8, "sharing": {"timeSlicing": {"replicas": 4}}}
G6_WHOLE = {"name": "g6", "instanceTypes": ["g6.xlarge", "g5.xlarge"], "maxSize": 8}
EKS_CPU = {"name": "general", "instanceTypes": ["m6i.xlarge"], "maxSize": 6, "zones": ["us-west-2a"]}
P5 = {"name": "p5", "instanceTypes": ["p5.48xlarge"], "maxSize": 2, "efa": True, "zones": ["us-west-2a"]}
SUBNETS = {"us-west-2a": "subnet-a", "us-west-2b": "subnet-b"}
MAINTENANCE = {"day": "Saturday", "startTime": "03:00", "durationHours": 6}
OIDC = {"oidcProviderArn": "arn:aws:iam::123456789012:oidc-provider/oidc.eks", "oidcProviderUrl": "https://oidc.eks"}


def aks_infos() -> list[NodePoolInfo]:
    return [p.info for p in plan_agent_pools(config.parse_gpu_pool(T4, config.Cloud.AZURE, "t"), ("1", "2"))]


def efa_infos() -> list[NodePoolInfo]:
    spec = config.parse_gpu_pool(P5, config.Cloud.AWS, "p")
    return [plan.info(spec) for plan in plan_gpu_groups(spec, "ml-dev", ["us-west-2a"])]


def snake_info(info: NodePoolInfo) -> dict[str, Any]:
    """The package's input form of a pool info: camelCase keys, as a TS/YAML program sends it."""
    return convert.to_config(convert.info_to_dict(info))


@dataclass(frozen=True)
class Case:
    """One component: the package's inputs (camelCase, as the engine sends them) and the same input
    through the Python API."""

    name: str
    inputs: dict[str, Any]
    python: Callable[[], Any]
    outputs: tuple[str, ...] = ()


CASES = [
    Case(
        "AksCluster",
        {
            "cluster": {"name": "ml-dev", "kubernetesVersion": "1.35"},
            "systemPool": {"minSize": 3},
            "location": "eastus",
            "nodeAutoProvisioning": False,
        },
        lambda: AksCluster(
            "ml-dev",
            cluster=ClusterSpec(name="ml-dev", kubernetes_version="1.35", zones=("1", "2", "3")),
            system_pool=SystemPoolSpec(instance_types=("Standard_D4s_v5",), min_size=3),
            location="eastus",
        ),
        ("clusterName", "kubeconfig", "systemNodePool", "resourceGroupName"),
    ),
    Case(
        "GpuNodePool",
        {
            "pool": T4,
            "resourceGroupName": "rg-ml",
            "clusterName": "ml-dev",
            "clusterZones": ["1", "2"],
            "kubernetesVersion": "1.35",
        },
        lambda: GpuNodePool(
            "ml-dev", T4, resource_group_name="rg-ml", cluster_name="ml-dev", cluster_zones=("1", "2"), kubernetes_version="1.35"
        ),
        ("poolNames", "nodePools"),
    ),
    Case(
        "CpuNodePool",
        {"pool": AKS_CPU, "resourceGroupName": "rg-ml", "clusterName": "ml-dev"},
        lambda: CpuNodePool("ml-dev", AKS_CPU, resource_group_name="rg-ml", cluster_name="ml-dev"),
        ("poolNames", "nodePools"),
    ),
    Case(
        "NapNodePools",
        {"pools": [T4], "location": "eastus", "maintenance": MAINTENANCE},
        lambda: NapNodePools(
            "ml-dev", [T4], "eastus", maintenance=MaintenanceSpec(day=WeekDay.SATURDAY, start_time="03:00", duration_hours=6)
        ),
        ("poolNames", "nodePools"),
    ),
    Case(
        "NodeImageMaintenance",
        {"resourceGroupName": "rg-ml", "clusterName": "ml-dev", "maintenance": MAINTENANCE},
        lambda: NodeImageMaintenance(
            "ml-dev", "rg-ml", "ml-dev", maintenance=MaintenanceSpec(day=WeekDay.SATURDAY, start_time="03:00", duration_hours=6)
        ),
    ),
    Case(
        "EksCluster",
        {
            "cluster": {"name": "ml-dev", "kubernetesVersion": "1.35", "zones": ["us-west-2a", "us-west-2b"]},
            "nat": "one-per-zone",
        },
        lambda: EksCluster(
            "ml-dev",
            {"name": "ml-dev", "kubernetesVersion": "1.35", "zones": ["us-west-2a", "us-west-2b"]},
            nat=__import__("gpupools.aws.network", fromlist=["NatStrategy"]).NatStrategy.ONE_PER_ZONE,
        ),
        ("clusterName", "kubeconfig", "nodeRoleArn", "systemNodePool", "privateSubnetIdsByZone"),
    ),
    Case(
        "GpuNodeGroup",
        {"pool": G5, "clusterName": "ml-dev", "nodeRoleArn": "arn:aws:iam::123456789012:role/node", "subnetIdsByZone": SUBNETS},
        lambda: GpuNodeGroup("ml-dev", G5, "ml-dev", "arn:aws:iam::123456789012:role/node", SUBNETS),
        ("poolNames", "nodePools"),
    ),
    Case(
        "CpuNodeGroup",
        {
            "pool": EKS_CPU,
            "clusterName": "ml-dev",
            "nodeRoleArn": "arn:aws:iam::123456789012:role/node",
            "subnetIdsByZone": SUBNETS,
        },
        lambda: CpuNodeGroup("ml-dev", EKS_CPU, "ml-dev", "arn:aws:iam::123456789012:role/node", SUBNETS),
        ("poolNames", "nodePools"),
    ),
    Case(
        "KarpenterNodePools",
        {"pools": [G6], "clusterName": "ml-dev", "nodeRoleName": "ml-dev-node", "zones": ["us-west-2a", "us-west-2b"]},
        lambda: KarpenterNodePools("ml-dev", [G6], "ml-dev", "ml-dev-node", ["us-west-2a", "us-west-2b"]),
        ("poolNames", "nodePools"),
    ),
    Case(
        "AutoModeNodePools",
        {"pools": [G6_WHOLE], "clusterName": "ml-dev", "nodeRoleName": "ml-dev-auto-node", "zones": ["us-west-2a", "us-west-2b"]},
        lambda: AutoModeNodePools("ml-dev", [G6_WHOLE], "ml-dev", "ml-dev-auto-node", ["us-west-2a", "us-west-2b"]),
        ("poolNames", "nodePools"),
    ),
    Case(
        "Karpenter",
        {
            "clusterName": "ml-dev",
            "region": "us-west-2",
            "nodeRoleArn": "arn:aws:iam::123456789012:role/node",
            **OIDC,
            "subnetIds": ["subnet-a", "subnet-b"],
            "securityGroupId": "sg-0123",
            "nodeOverlay": True,
        },
        lambda: Karpenter(
            "ml-dev",
            "ml-dev",
            "us-west-2",
            "arn:aws:iam::123456789012:role/node",
            OIDC["oidcProviderArn"],
            OIDC["oidcProviderUrl"],
            ["subnet-a", "subnet-b"],
            "sg-0123",
            node_overlay=True,
        ),
        ("interruptionQueueName", "roleArn"),
    ),
    Case(
        "ClusterAutoscaler",
        {"clusterName": "ml-dev", "region": "us-west-2", "kubernetesVersion": "1.35", **OIDC},
        lambda: ClusterAutoscaler("ml-dev", "ml-dev", "us-west-2", "1.35", OIDC["oidcProviderArn"], OIDC["oidcProviderUrl"]),
        ("roleArn", "imageTag"),
    ),
    Case(
        "NvidiaDevicePlugin",
        {"pools": [snake_info(i) for i in aks_infos()]},
        lambda: NvidiaDevicePlugin("ml-dev", aks_infos()),
        ("servedPoolNames", "image"),
    ),
    Case(
        "DcgmExporter",
        {"pools": [snake_info(i) for i in aks_infos()], "serviceMonitor": True, "serviceMonitorLabels": {"release": "kps"}},
        lambda: DcgmExporter("ml-dev", aks_infos(), service_monitor=True, service_monitor_labels={"release": "kps"}),
        ("servedPoolNames", "image"),
    ),
    Case(
        "EfaDevicePlugin",
        {"pools": [snake_info(i) for i in efa_infos()]},
        lambda: EfaDevicePlugin("ml-dev", efa_infos()),
        ("servedPoolNames", "image"),
    ),
    Case(
        "PriorityExpander",
        {"pools": [snake_info(i) for i in aks_infos()]},
        lambda: PriorityExpander("ml-dev", aks_infos()),
        ("priorities",),
    ),
    Case(
        "GpuSmokeTest",
        {"pool": snake_info(aks_infos()[0])},
        lambda: GpuSmokeTest("ml-dev", aks_infos()[0]),
        ("jobName",),
    ),
    Case(
        "WarmCapacity",
        {
            "pools": [snake_info(i) for i in aks_infos()],
            "warm": {
                "t4": {
                    "nodes": 1,
                    "schedule": {"days": ["Monday"], "start": "08:00", "end": "18:00", "timeZone": "Europe/Berlin"},
                }
            },
            "mechanism": "placeholder pods",
            "systemPool": snake_info(aks_system_pool()),
        },
        lambda: WarmCapacity(
            "ml-dev",
            [
                dataclasses.replace(
                    config.parse_gpu_pool(T4, config.Cloud.AZURE, "t"),
                    warm=config.parse_warm(
                        {
                            "nodes": 1,
                            "schedule": {"days": ["Monday"], "start": "08:00", "end": "18:00", "timeZone": "Europe/Berlin"},
                        },
                        "w",
                    ),
                )
            ],
            aks_infos(),
            warm_rules.Mechanism.PLACEHOLDER_PODS,
            aks_system_pool(),
        ),
        (),
    ),
    Case(
        "Kueue",
        {"systemPool": snake_info(aks_system_pool()), "namespaces": ["ml", "research"]},
        lambda: Kueue("ml-dev", aks_system_pool(), ["ml", "research"]),
        ("namespaces",),
    ),
    Case(
        "KueueQueues",
        {
            "pools": [snake_info(i) for i in aks_infos()],
            "namespaces": ["ml"],
            "teams": [{"name": "vision", "namespaces": ["vision"], "gpus": 2}],
            "atomicScaleUp": True,
            "prices": {i.name: 0.2 + n for n, i in enumerate(aks_infos())},
        },
        lambda: KueueQueues(
            "ml-dev",
            flavours(aks_infos(), prices={i.name: 0.2 + n for n, i in enumerate(aks_infos())}),
            namespaces=["ml"],
            teams=[TeamQueueSpec(name="vision", namespaces=("vision",), gpus=2)],
            atomic_scale_up=True,
        ),
        ("flavourNames",),
    ),
]


def test_every_component_has_a_case() -> None:
    assert [c.name for c in CASES] == [c.__name__ for c in xlang.COMPONENTS]


def as_wire(value: Any) -> Any:
    """Integers as floats, the way the engine sends numbers (the provider casts them back)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: as_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_wire(v) for v in value]
    return value


def shape(registrations: list[Registration]) -> list[tuple[str, str, str, str, str, str]]:
    """Every registration whole (type, name, URN with its parent chain, parent, inputs, options),
    sorted: children register from concurrent applies, so their order is not part of the contract."""
    return sorted(
        (
            r.type,
            r.name,
            r.urn,
            r.parent,
            json.dumps(r.inputs, sort_keys=True, default=str),
            json.dumps(r.options, sort_keys=True, default=str),
        )
        for r in registrations
    )


WIRE = "__serialized_state"


def construct(case: Case) -> tuple[list[Registration], dict[str, Any], list[str]]:
    provider = xlang.provider()
    state: dict[str, Any] = {}

    def program() -> None:
        result = provider.construct("ml-dev", f"gpupools:index:{case.name}", as_wire(case.inputs), None)
        for key, value in result.state.items():
            pulumi.export(key, value)
        state["urn"] = result.urn
        # What the provider server sends back to the engine (``_construct_response``): the state
        # through ``rpc.serialize_properties``, so every output must serialize.
        wire = asyncio.ensure_future(rpc.serialize_properties(dict(result.state), {}))
        pulumi.export(WIRE, pulumi.Output.from_input(wire).apply(json_format.MessageToDict))

    run = run_program(program)
    outputs = dict(run.outputs)
    wire = outputs.pop(WIRE)
    assert set(wire) == set(outputs), "every output reaches the engine"
    # A secret crosses as the SDK's secret envelope (``rpc._special_secret_sig``), never bare.
    wire_secrets = sorted(
        k for k, v in wire.items() if isinstance(v, dict) and v.get(rpc._special_sig_key) == rpc._special_secret_sig
    )
    assert wire_secrets == sorted(k for k in run.secret_outputs if k != WIRE)
    return run.registrations, outputs, run.secret_outputs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_construct_registers_what_the_python_api_registers(case: Case) -> None:
    hosted, outputs, secret = construct(case)
    direct = run_program(case.python).registrations
    assert hosted, case.name
    assert hosted[0].type == f"gpupools:index:{case.name}" and hosted[0].name == "ml-dev"
    assert shape(hosted) == shape(direct)
    assert set(case.outputs) <= set(outputs), sorted(outputs)
    if "kubeconfig" in case.outputs:
        assert "kubeconfig" in secret


def test_pool_outputs_describe_the_created_pools() -> None:
    _, outputs, _ = construct(CASES[1])
    [spot, on_demand] = outputs["nodePools"]
    assert outputs["poolNames"] == [spot["name"], on_demand["name"]]
    assert (spot["capacity"], on_demand["capacity"]) == ("spot", "on-demand")
    assert spot["labels"]["team.example.com/owner"] == "vision", "user label keys are data, not renamed"
    assert spot["instanceTypes"] == ["Standard_NC4as_T4_v3"] and spot["gpusPerNode"] == 1


def test_a_single_pool_info_output_is_renamed_to_schema_names() -> None:
    _, outputs, secret = construct(CASES[0])
    system = outputs["systemNodePool"]
    assert (system["pool"], system["role"], system["minSize"]) == ("system", "system", 3)
    assert "instance_types" not in system and system["instanceTypes"] == ["Standard_D4s_v5"]
    assert secret == ["kubeconfig"]


@pytest.mark.parametrize("info", aks_infos() + efa_infos(), ids=lambda i: i.name)
def test_pool_infos_survive_the_round_trip(info: NodePoolInfo) -> None:
    assert convert.info_from_dict(convert.info_to_dict(info), "p") == info


def as_served(value: Any, urn: str, known: bool = True) -> pulumi.Output[Any]:
    """An input the way the provider server hands it to ``construct`` when another component's
    output was passed: a settled ``Output`` with the value and the upstream URN as dependency
    (``ProviderServicer._select_value``, ``pulumi/provider/server.py``)."""
    import asyncio

    from pulumi.output import _OutputData
    from pulumi.resource import DependencyResource

    data: asyncio.Future[Any] = asyncio.Future()
    data.set_result(_OutputData(resources={DependencyResource(urn)}, value=value, is_known=known, is_secret=False))
    return pulumi.Output._from_data(data)


def test_pool_outputs_feed_the_add_ons_as_another_language_wires_them() -> None:
    """``new NvidiaDevicePlugin("gpu", {pools: t4.nodePools})`` in TypeScript: the plugin gets the
    pool component's published ``nodePools`` (schema names) as a settled output."""
    provider = xlang.provider()
    upstream = {"pool": T4, "resourceGroupName": "rg-ml", "clusterName": "ml-dev", "clusterZones": ["1", "2"]}
    fed = [snake_info(i) for i in aks_infos()]

    def program() -> None:
        result = provider.construct("t4", "gpupools:index:GpuNodePool", as_wire(upstream), None)
        pulumi.export("nodePools", result.state["nodePools"])
        provider.construct("gpu", "gpupools:index:NvidiaDevicePlugin", {"pools": as_served(fed, "urn:upstream")}, None)

    run = run_program(program)
    assert run.outputs["nodePools"] == fed, "the test feeds exactly what GpuNodePool publishes"
    hosted = run.registrations
    direct = run_program(
        lambda: (
            GpuNodePool("t4", T4, resource_group_name="rg-ml", cluster_name="ml-dev", cluster_zones=("1", "2")),
            NvidiaDevicePlugin("gpu", aks_infos()),
        )
    ).registrations
    plugin = [r for r in hosted if r.type == "gpupools:index:NvidiaDevicePlugin"]
    assert len(plugin) == 1 and "urn:upstream" in plugin[0].dependencies
    strip = [(t, n, u, p, i) for t, n, u, p, i, _ in shape(hosted)]
    assert strip == [(t, n, u, p, i) for t, n, u, p, i, _ in shape(direct)]


def test_an_unknown_pool_output_is_one_clear_error() -> None:
    provider = xlang.provider()
    run = run_program(
        lambda: provider.construct(
            "gpu", "gpupools:index:NvidiaDevicePlugin", {"pools": as_served(None, "urn:upstream", known=False)}, None
        ),
        raise_errors=False,
    )
    assert run.registrations == []
    assert str(run.error).startswith("NvidiaDevicePlugin(gpu).pools: must be known when the component is constructed")


def test_bad_input_through_construct_is_the_python_api_error() -> None:
    provider = xlang.provider()
    bad = {"pool": {**T4, "minSize": 9}, "resourceGroupName": "rg", "clusterName": "ml-dev"}
    run = run_program(lambda: provider.construct("t4", "gpupools:index:GpuNodePool", as_wire(bad), None), raise_errors=False)
    assert run.registrations == []
    # ComponentInitError (pulumi.provider.server) carries the ConfigError's message to the engine.
    assert str(run.error) == str(ConfigError("GpuNodePool(t4).pool.maxSize", "must be >= minSize (9)", 4))


def test_a_missing_required_input_is_refused_by_the_provider() -> None:
    provider = xlang.provider()
    with pytest.raises(Exception, match="Missing required input 'clusterName'"):
        provider.construct("t4", "gpupools:index:GpuNodePool", {"pool": T4, "resourceGroupName": "rg"}, None)


def test_the_package_folder_runs_the_host_with_the_library_pins() -> None:
    manifest = yaml.safe_load((ROOT / "package" / "PulumiPlugin.yaml").read_text())
    assert manifest == {"runtime": "python"}
    main = (ROOT / "package" / "__main__.py").read_text()
    assert "from gpupools.xlang import host" in main and '"components"' in main

    def pins(path: Path) -> dict[str, str]:
        lines = [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith(("#", "-"))]
        return dict(re.match(r"([A-Za-z0-9_.-]+)(.*)", line).groups() for line in lines)  # type: ignore[union-attr]

    package, library = pins(ROOT / "package" / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert {k: v for k, v in package.items() if k != "pulumi"} == {k: v for k, v in library.items() if k != "pulumi"}
    assert package["pulumi"].startswith(">=3.249.0")


# -- docs -------------------------------------------------------------------------------------


def yaml_example() -> dict[str, Any]:
    text = (ROOT / "docs" / "other-languages.md").read_text()
    [block] = re.findall(r"```yaml\n(name: gpupools-yaml-example.*?)```", text, re.S)
    loaded: dict[str, Any] = yaml.safe_load(block)
    return loaded


def test_the_yaml_example_uses_only_schema_properties(schema: dict[str, Any]) -> None:
    resources = yaml_example()["resources"]
    assert resources
    for logical, resource in resources.items():
        token = resource["type"]
        if not token.startswith("gpupools:"):
            continue
        spec = schema["resources"][token]
        props = resource.get("properties", {})
        assert set(spec.get("requiredInputs", [])) <= set(props), logical
        for key, value in props.items():
            assert key in spec["inputProperties"], f"{logical}.{key}"
            ref = spec["inputProperties"][key].get("$ref", "")
            if ref.startswith("#/types/") and isinstance(value, dict):
                type_props = schema["types"][ref.removeprefix("#/types/")]["properties"]
                assert set(value) <= set(type_props), f"{logical}.{key}: {sorted(set(value) - set(type_props))}"


def test_the_typescript_example_names_components_and_outputs_of_the_schema(schema: dict[str, Any]) -> None:
    text = (ROOT / "docs" / "other-languages.md").read_text()
    [block] = re.findall(r"```typescript\n(.*?)```", text, re.S)
    used = re.findall(r"new gpupools\.(\w+)\(", block)
    assert used and {f"gpupools:index:{name}" for name in used} <= set(schema["resources"])
    variables = dict(re.findall(r"const (\w+) = new gpupools\.(\w+)\(", block))
    for variable, component in variables.items():
        outputs = schema["resources"][f"gpupools:index:{component}"]["properties"]
        for prop in re.findall(rf"\b{variable}\.(\w+)", block):
            assert prop in outputs, f"{variable}.{prop}"
    assert "kubeconfig" in block and "nodePools" in block


def test_pulumi_package_add_names_the_package_version() -> None:
    from gpupools._version import __version__

    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    found = [v for page in pages for v in re.findall(r"\.git/package@v(\d+\.\d+\.\d+)", page.read_text())]
    assert found and set(found) == {__version__}

"""The policy pack as the engine sees it: policy metadata, the SDK adapters, and the entry point.

- the pack's policies and their enforcement levels (six mandatory, two advisory);
- the adapters, driven through real ``pulumi_policy`` argument objects (unknown-checking proxies,
  ``opts.ignore_changes``, policy config);
- the engine's analyzer protocol, in-process (``gpupools_policy.testing``) and for real: the
  entry point started the way the CLI starts it (``python -m pulumi.policy <engine> policy``),
  queried over gRPC.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

ROOT = Path(__file__).resolve().parents[1]
POLICY_DIR = ROOT / "policy"
if str(POLICY_DIR) not in sys.path:
    sys.path.insert(0, str(POLICY_DIR))

from gpupools_policy import pack, rules, testing  # noqa: E402

MANDATORY = {
    "gpu-pool-taint",
    "gpu-spot-scale-to-zero",
    "autoscaled-count-ignored",
    "launch-template-imdsv2-encrypted",
    "no-public-node-ips",
    "device-plugin-tolerates-gpu-pools",
    "karpenter-gpu-nodepool",
}
ADVISORY = {"gpu-on-demand-has-spot-sibling", "gpu-pool-upper-bound", "cpu-spot-scale-to-zero"}

AGENT_POOL = "azure-native:containerservice:AgentPool"
SPOT_T4 = {
    "agentPoolName": "t4spot",
    "vmSize": "Standard_NC4as_T4_v3",
    "scaleSetPriority": "Spot",
    "enableAutoScaling": True,
    "minCount": 0,
    "maxCount": 8,
    "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"],
}


def options(ignore_changes: list[str] | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=False,
        ignore_changes=ignore_changes or [],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
    )


def run_resource_policy(
    policy: ResourceValidationPolicy,
    resource_type: str,
    props: dict[str, Any],
    *,
    ignore_changes: list[str] | None = None,
    config: dict[str, Any] | None = None,
) -> list[str]:
    """Call a policy's validate as the SDK does: props behind the unknown-checking proxy."""
    args = ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(props),
        f"urn:pulumi:dev::gpupools::{resource_type}::x",
        "x",
        options(ignore_changes),
        None,
        config,
    )
    violations: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        violations.append(message)

    policy.validate(args, report)
    return violations


def by_name(name: str) -> Any:
    [policy] = [p for p in pack.POLICIES if p.name == name]
    return policy


# --- the pack's shape ---------------------------------------------------------------------------


def test_policies_and_enforcement_levels() -> None:
    levels = {p.name: p.enforcement_level for p in pack.POLICIES}
    assert len(levels) == len(pack.POLICIES) == 10
    assert {n for n, level in levels.items() if level is EnforcementLevel.MANDATORY} == MANDATORY
    assert {n for n, level in levels.items() if level is EnforcementLevel.ADVISORY} == ADVISORY


def test_stack_policies_are_stack_policies() -> None:
    stack = {p.name for p in pack.POLICIES if isinstance(p, StackValidationPolicy)}
    assert stack == {"device-plugin-tolerates-gpu-pools", "gpu-on-demand-has-spot-sibling"}
    assert set(rules.STACK_CHECKS) == stack
    assert set(rules.RESOURCE_CHECKS) == {p.name for p in pack.POLICIES} - stack


def test_pulumi_policy_yaml_matches_the_pack() -> None:
    document = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert document["runtime"]["name"] == "python"
    assert document["version"] == pack.PACK_VERSION
    requirements = (POLICY_DIR / "requirements.txt").read_text()
    assert "pulumi-policy>=1.21" in requirements


# --- adapters -----------------------------------------------------------------------------------


def test_adapter_reports_the_rule_messages() -> None:
    props = {**SPOT_T4, "nodeTaints": []}
    [message] = run_resource_policy(by_name("gpu-pool-taint"), AGENT_POOL, props)
    assert message == rules.check_gpu_taint(AGENT_POOL, props, name="x")[0]


def test_adapter_passes_ignore_changes_from_the_resource_options() -> None:
    policy = by_name("autoscaled-count-ignored")
    assert run_resource_policy(policy, AGENT_POOL, SPOT_T4, ignore_changes=["count"]) == []
    [message] = run_resource_policy(policy, AGENT_POOL, SPOT_T4, ignore_changes=[])
    assert "does not cover 'count'" in message


def test_adapter_passes_policy_config() -> None:
    policy = by_name("gpu-pool-upper-bound")
    assert run_resource_policy(policy, AGENT_POOL, SPOT_T4) == []
    [message] = run_resource_policy(policy, AGENT_POOL, SPOT_T4, config={"maxNodesPerPool": 4})
    assert "above this pack's advisory bound of 4" in message


def test_adapter_treats_unknown_values_as_unknown() -> None:
    """Reading an unknown through the SDK proxy raises; the adapter turns it into UNKNOWN instead,
    so the rule neither crashes nor reports during preview."""
    props = {**SPOT_T4, "vmSize": UNKNOWN_STRING_VALUE, "nodeTaints": []}
    with pytest.raises(UnknownValueError) as raised:
        unknown_checking_proxy(props)["vmSize"]
    assert "can't be known during preview" in raised.value.message
    assert run_resource_policy(by_name("gpu-pool-taint"), AGENT_POOL, props) == []
    props = {**SPOT_T4, "nodeTaints": [UNKNOWN_STRING_VALUE]}
    assert run_resource_policy(by_name("gpu-pool-taint"), AGENT_POOL, props) == []


def test_stack_adapter() -> None:
    daemonset = {
        "metadata": {"name": "nvidia-device-plugin"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                }
            }
        },
    }
    resources = [
        PolicyResource(AGENT_POOL, unknown_checking_proxy(SPOT_T4), "urn:pool", "pool", options(), None, None, [], {}),
        PolicyResource(
            "kubernetes:apps/v1:DaemonSet", unknown_checking_proxy(daemonset), "urn:ds", "ds", options(), None, None, [], {}
        ),
    ]
    found: list[tuple[str, str | None]] = []
    by_name("device-plugin-tolerates-gpu-pools").validate(
        StackValidationArgs(resources), lambda m, urn=None: found.append((m, urn))
    )
    [(message, urn)] = found
    assert urn == "urn:ds"
    assert "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in message


# --- the engine protocol, in-process ------------------------------------------------------------


def test_in_process_analyzer_reports_enforcement_levels() -> None:
    bad = rules.Resource(AGENT_POOL, "t4", {**SPOT_T4, "nodeTaints": [], "maxCount": 80}, "urn:t4", ())
    found = {(d.policy, d.enforcement, d.urn) for d in testing.analyze([bad])}
    assert ("gpu-pool-taint", "mandatory", "urn:t4") in found
    assert ("autoscaled-count-ignored", "mandatory", "urn:t4") in found
    assert ("gpu-pool-upper-bound", "advisory", "urn:t4") in found
    assert ("gpu-on-demand-has-spot-sibling", "advisory", "urn:t4") not in found  # it is a Spot pool
    assert ("device-plugin-tolerates-gpu-pools", "mandatory", "") in found  # no device plugin at all


def test_in_process_analyzer_config_and_unknowns() -> None:
    pool = rules.Resource(AGENT_POOL, "t4", {**SPOT_T4, "maxCount": 80, "vmSize": testing.UNKNOWN_STRING}, "urn:t4", ("count",))
    config: dict[str, dict[str, Any]] = {
        "gpu-pool-upper-bound": {"maxNodesPerPool": 100},
        "device-plugin-tolerates-gpu-pools": {"devicePluginOutsideStack": True},
    }
    assert testing.analyze([pool], config=config) == []


# --- the real entry point, over gRPC -------------------------------------------------------------


@pytest.fixture(scope="module")
def analyzer() -> Iterator[Any]:
    """``policy/__main__.py`` run the way the CLI runs a Python pack, from an unrelated directory and
    without the repository on PYTHONPATH (the entry point must find ``gpupools`` itself)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(POLICY_DIR)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd="/",
        env=env,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        line = process.stdout.readline().decode().strip() if ready else ""
        if not line.isdigit():
            process.kill()
            _, err = process.communicate(timeout=30)
            pytest.fail(f"policy pack did not start: {line!r}\n{err.decode()[-3000:]}")
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


def test_entry_point_serves_the_pack(analyzer: Any) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=60)
    assert info.name == "gpupools"
    levels = {p.name: analyzer_pb2.EnforcementLevel.Name(p.enforcementLevel).lower() for p in info.policies}
    assert levels == {**dict.fromkeys(MANDATORY, "mandatory"), **dict.fromkeys(ADVISORY, "advisory")}


def test_entry_point_analyzes_a_resource(analyzer: Any) -> None:
    request = analyzer_pb2.AnalyzeRequest(
        type=AGENT_POOL,
        properties=testing.engine_struct({**SPOT_T4, "nodeTaints": []}),
        urn="urn:pulumi:dev::gpupools::azure-native:containerservice:AgentPool::t4",
        name="t4",
        options=analyzer_pb2.AnalyzerResourceOptions(ignoreChanges=["count"]),
    )
    response = analyzer.Analyze(request, timeout=60)
    assert [(d.policyName, d.enforcementLevel) for d in response.diagnostics] == [
        ("gpu-pool-taint", analyzer_pb2.EnforcementLevel.Value("MANDATORY"))
    ]
    assert "AKS agent pool 't4spot' is a GPU pool" in response.diagnostics[0].message

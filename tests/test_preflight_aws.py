"""The AWS preflight against moto's server (real per-zone offerings) and botocore's Stubber (the
calls moto does not serve: Service Quotas for EC2, DescribeClusterVersions, SimulatePrincipalPolicy).

moto serves ``DescribeInstanceTypeOfferings`` from the per-zone data it ships
(``moto/ec2/resources/instance_type_offerings/availability-zone/<region>.json.gz``, collected from
real accounts); the test reads that file to pick a type that is really missing in a zone, rather
than trusting a literal. moto 5 answers Service Quotas only for ``vpc`` (``servicequotas/models.py``
raises ``NoSuchResource`` for any other service code) and lacks ``GetAWSDefaultServiceQuota``,
``DescribeClusterVersions`` and ``SimulatePrincipalPolicy``: those rows must come back ``?``.
"""

from __future__ import annotations

import gzip
import json
import logging
import socket
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import moto
import pytest
import yaml
from botocore.stub import Stubber
from gpupools.conventions import CapacityType
from gpupools.preflight import aws as preflight_aws
from gpupools.preflight.aws import (
    DEFAULT_ZONE_COUNT,
    G_VT_ON_DEMAND,
    G_VT_SPOT,
    P5_SPOT,
    P_SPOT,
    STANDARD_ON_DEMAND,
    STANDARD_SPOT,
    AwsPreflight,
    principal_arn,
    quota_for,
    quota_needs,
    required_actions,
)
from gpupools.preflight.cli import main
from gpupools.preflight.demand import stack_demands
from gpupools.preflight.report import Check, CheckKind, Status, exit_status
from gpupools.preflight.stack import Target, engine_values, target_from_values
from gpupools.testing import PROJECT_ROOT, stack_config
from gpupools.versions import EKS_CORE_ADDONS, NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_ADDON_VERSION
from moto.server import ThreadedMotoServer

REGION = "us-west-2"
ACCOUNT = "123456789012"


def moto_offerings(region: str) -> dict[str, set[str]]:
    """``instance type -> zones`` from the data file moto serves."""
    path = Path(moto.__file__).parent / "ec2/resources/instance_type_offerings/availability-zone" / f"{region}.json.gz"
    zones: dict[str, set[str]] = {}
    for row in json.loads(gzip.decompress(path.read_bytes())):
        zones.setdefault(row["InstanceType"], set()).add(row["Location"])
    return zones


def aws_dev() -> Target:
    return target_from_values("aws-dev", engine_values("aws-dev", PROJECT_ROOT), environ={})


def aws_karpenter_dev(**overrides: Any) -> Target:
    values = engine_values("aws-karpenter-dev", PROJECT_ROOT)
    values.update({k: json.dumps(v) for k, v in overrides.items()})
    return target_from_values("aws-karpenter-dev", values, environ={})


def write_stack(root: Path, config: dict[str, Any], stack: str = "probe") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text("name: gpupools\nruntime: python\n")
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return root


def aws_dev_config() -> dict[str, Any]:
    return dict(yaml.safe_load((PROJECT_ROOT / "Pulumi.aws-dev.yaml").read_text())["config"])


# --- moto in server mode ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # moto logs every unimplemented call as a traceback
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def moto_env(moto_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """boto3's default chain pointed at moto with fake credentials, nothing read from the user's profile."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # moto answers the calls it lacks with 500; do not retry them
    return moto_server


def test_moto_really_lacks_an_offering_the_test_relies_on() -> None:
    offered = moto_offerings(REGION)
    assert {"us-west-2a", "us-west-2b", "us-west-2c"} <= offered["g4dn.xlarge"]
    assert "us-west-2d" not in offered["g4dn.xlarge"]
    assert "us-west-2d" in offered["g6.xlarge"]


def test_aws_dev_against_moto_offers_everything_and_leaves_what_moto_lacks_unknown(
    moto_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["aws-dev", "--root", str(PROJECT_ROOT)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("offered", "quota", "version", "permissions"))]
    offered = [r for r in rows if r[0] == "offered"]
    # system + gpu1 + gpu4 + general, each in the three zones of the stack.
    assert len(offered) == 12 and all(r[-1] == "✓" for r in offered)
    assert {r[2] for r in offered} == {"us-west-2a", "us-west-2b", "us-west-2c"}
    others = [r for r in rows if r[0] != "offered"]
    assert others and all(r[-1] == "?" for r in others)
    assert "GetAWSDefaultServiceQuota" in out and "DescribeClusterVersions" in out


def test_strict_turns_unanswered_checks_into_a_failure(moto_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["aws-dev", "--root", str(PROJECT_ROOT), "--strict"]) == 1
    assert "--strict" in capsys.readouterr().err


def test_instance_type_missing_in_a_zone_fails_the_run(moto_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offered = moto_offerings(REGION)
    config = aws_dev_config()
    config["gpupools:cluster"]["zones"] = ["us-west-2a", "us-west-2c", "us-west-2d"]
    root = write_stack(tmp_path / "project", config)
    assert main(["probe", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if line.startswith("offered") and " gpu1 " in line and "us-west-2d" in line]
    missing = sorted(t for t in config["gpupools:gpuPools"][0]["instanceTypes"] if "us-west-2d" not in offered[t])
    assert row.endswith("✗")
    assert "not offered: " + ", ".join(missing) in row
    [ok] = [line for line in out.splitlines() if line.startswith("offered") and " gpu1 " in line and "us-west-2c" in line]
    assert ok.endswith("✓")


def test_simulation_moto_lacks_is_unknown_for_a_real_iam_user(moto_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    iam = boto3.client("iam", region_name=REGION)
    iam.create_user(UserName="deployer")
    key = iam.create_access_key(UserName="deployer")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
    checks = AwsPreflight(aws_dev()).permissions()
    assert checks and all(c.status is Status.UNKNOWN for c in checks)
    # The caller resolved to the IAM user, so the row's reason is the failed simulation, not the ARN.
    assert all("SimulatePrincipalPolicy" in c.found or "ResponseParserError" in c.found for c in checks)


def test_default_zones_are_the_regions_first_three_as_the_stack_resolves_them(moto_env: str) -> None:
    values = engine_values("aws-dev", PROJECT_ROOT)
    cluster = json.loads(values["gpupools:cluster"])
    del cluster["zones"]
    values["gpupools:cluster"] = json.dumps(cluster)
    target = target_from_values("aws-dev", values, environ={})
    checks = AwsPreflight(target).run()
    zones = sorted({c.zone for c in checks if c.check is CheckKind.OFFERED})
    # The query of gpupools.aws.cluster.default_zones: available zones that need no opt-in, sorted.
    listed = boto3.client("ec2", region_name=REGION).describe_availability_zones(
        Filters=[{"Name": "state", "Values": ["available"]}, {"Name": "opt-in-status", "Values": ["opt-in-not-required"]}]
    )
    assert zones == sorted(z["ZoneName"] for z in listed["AvailabilityZones"])[:DEFAULT_ZONE_COUNT]
    assert zones == ["us-west-2a", "us-west-2b", "us-west-2c"]


# --- the EC2 Spot service-linked role (Karpenter) ---------------------------------------------------

SPOT_ROLE_PATH = "/aws-service-role/spot.amazonaws.com/"
"""Where IAM puts ``AWSServiceRoleForEC2Spot`` (service-linked roles live under
``/aws-service-role/<service>/``). moto's ``CreateServiceLinkedRole`` names the role from the
service principal (``AWSServiceRoleForSpot``), not as EC2 does, so the test creates the role
under its real name and path with ``CreateRole``."""


def test_karpenter_with_spot_pools_and_no_spot_role_fails_with_the_fix(moto_env: str) -> None:
    target = aws_karpenter_dev()
    [check] = AwsPreflight(target).spot_role()
    assert check.check is CheckKind.SPOT_ROLE and check.status is Status.FAILED
    assert "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com" in check.found
    assert check.pool == ", ".join(p.name for p in target.spec.pools if p.spot)
    assert "AWSServiceRoleForEC2Spot" in check.needed


def test_karpenter_with_the_spot_role_present_passes(moto_env: str) -> None:
    iam = boto3.client("iam", region_name=REGION)
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "spot.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
    iam.create_role(RoleName="AWSServiceRoleForEC2Spot", Path=SPOT_ROLE_PATH, AssumeRolePolicyDocument=json.dumps(trust))
    try:
        [check] = AwsPreflight(aws_karpenter_dev()).spot_role()
    finally:
        iam.delete_role(RoleName="AWSServiceRoleForEC2Spot")
    assert check.status is Status.OK
    assert SPOT_ROLE_PATH in check.found


def test_spot_role_unreadable_is_unknown_not_a_failure() -> None:
    target = aws_karpenter_dev()
    with StubbedAws() as aws:
        aws.stubs["iam"].add_client_error("get_role", service_error_code="AccessDenied", service_message="not authorized")
        [check] = AwsPreflight(target, clients=aws).spot_role()
        aws.done()
    assert check.status is Status.UNKNOWN and "AccessDenied" in check.found


def test_no_spot_role_row_without_karpenter_or_without_spot_pools(moto_env: str) -> None:
    # cluster-autoscaler: EKS managed node groups, no Karpenter Spot launch to fall back silently.
    assert AwsPreflight(aws_dev()).spot_role() == []
    config = stack_config("aws-karpenter-dev")
    on_demand = [{**p, "spot": False, "onDemandFallback": False} for p in config["gpupools:gpuPools"]]
    cpu_on_demand = [{**p, "spot": False, "onDemandFallback": False} for p in config.get("gpupools:cpuPools", [])]
    target = aws_karpenter_dev(**{"gpupools:gpuPools": on_demand, "gpupools:cpuPools": cpu_on_demand})
    assert not any(p.spot for p in target.spec.pools)
    assert AwsPreflight(target).spot_role() == []


# --- Stubber: what moto does not serve ------------------------------------------------------------


class StubbedAws:
    """Real botocore clients with a Stubber each, handed to ``AwsPreflight`` as its client factory."""

    def __init__(self) -> None:
        session = boto3.session.Session(region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
        self.clients = {n: session.client(n) for n in ("ec2", "service-quotas", "eks", "iam", "sts")}
        self.stubs = {n: Stubber(c) for n, c in self.clients.items()}

    def __call__(self, name: str) -> Any:
        return self.clients[name]

    def __enter__(self) -> StubbedAws:
        for stub in self.stubs.values():
            stub.activate()
        return self

    def __exit__(self, *exc: Any) -> None:
        for stub in self.stubs.values():
            stub.deactivate()

    def done(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()

    # canned answers, computed from the stack rather than copied

    def offerings(self, target: Target, missing: tuple[str, str] | None = None) -> None:
        demands = stack_demands(target.spec, target.spec.cluster.zones)
        pairs = sorted({(t, z) for d in demands for t in d.instance_types for z in d.zones} - ({missing} if missing else set()))
        types = sorted({t for d in demands for t in d.instance_types})
        self.stubs["ec2"].add_response(
            "describe_instance_type_offerings",
            {
                "InstanceTypeOfferings": [
                    {"InstanceType": t, "LocationType": "availability-zone", "Location": z} for t, z in pairs
                ]
            },
            {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": types}]},
        )

    def instance_types(self, target: Target) -> None:
        types = sorted({t for d in stack_demands(target.spec, target.spec.cluster.zones) for t in d.instance_types})
        facts = preflight_aws.INSTANCE_TYPES
        self.stubs["ec2"].add_response(
            "describe_instance_types",
            {"InstanceTypes": [{"InstanceType": t, "VCpuInfo": {"DefaultVCpus": facts[t].vcpus}} for t in types]},
            {"InstanceTypes": types},
        )

    def quota(self, code: str, value: float, name: str = "") -> None:
        self.stubs["service-quotas"].add_response(
            "get_service_quota",
            {"Quota": {"QuotaCode": code, "QuotaName": name or code, "Value": value, "ServiceCode": "ec2"}},
            {"ServiceCode": "ec2", "QuotaCode": code},
        )

    def versions(self, *versions: tuple[str, str]) -> None:
        self.stubs["eks"].add_response(
            "describe_cluster_versions",
            {
                "clusterVersions": [
                    {"clusterVersion": v, "versionStatus": status, "releaseDate": datetime(2025, 1, 1, tzinfo=timezone.utc)}
                    for v, status in versions
                ]
            },
            {},
        )

    def no_cluster(self, target: Target) -> None:
        """``DescribeCluster`` of a cluster that does not exist yet (a first ``up``)."""
        self.stubs["eks"].add_client_error(
            "describe_cluster",
            service_error_code="ResourceNotFoundException",
            service_message=f"No cluster found for name: {target.spec.cluster.name}.",
            http_status_code=404,
            expected_params={"name": target.spec.cluster.name},
        )

    def addon_versions(
        self, kubernetes_version: str, *versions: str, token: str | None = None, addon: str = NODE_MONITORING_AGENT_ADDON
    ) -> None:
        """One ``DescribeAddonVersions`` page of an add-on (default the node monitoring agent)."""
        self.stubs["eks"].add_response(
            "describe_addon_versions",
            {
                "addons": [
                    {
                        "addonName": addon,
                        "addonVersions": [
                            {"addonVersion": v, "compatibilities": [{"clusterVersion": kubernetes_version}]} for v in versions
                        ],
                    }
                ],
                **({"nextToken": token} if token else {}),
            },
            None,
        )

    def caller(self, arn: str) -> None:
        self.stubs["sts"].add_response("get_caller_identity", {"Account": ACCOUNT, "Arn": arn, "UserId": "AIDA"}, {})

    def simulate(self, principal: str, actions: tuple[str, ...], spec: Any, denied: tuple[str, ...] = ()) -> None:
        """One ``SimulatePrincipalPolicy`` per resource group, as ``AwsPreflight.simulate`` asks: the
        role- and policy-scoped IAM actions on an ARN of the stack's (``simulation_resources``)."""
        groups: dict[tuple[str, ...], list[str]] = {}
        for action in actions:
            groups.setdefault(preflight_aws.simulation_resources(action, spec, ACCOUNT, "aws", REGION), []).append(action)
        for resources, group in groups.items():
            results = [
                {"EvalActionName": a, "EvalResourceName": "*", "EvalDecision": "implicitDeny" if a in denied else "allowed"}
                for a in group
            ]
            expected: dict[str, Any] = {"PolicySourceArn": principal, "ActionNames": group}
            if resources:
                expected["ResourceArns"] = list(resources)
                expected["ContextEntries"] = preflight_aws.simulation_context("aws", ACCOUNT, spec.cluster.name)
            self.stubs["iam"].add_response(
                "simulate_principal_policy", {"EvaluationResults": results, "IsTruncated": False}, expected
            )


def needs_of(target: Target) -> dict[str, int]:
    demands = stack_demands(target.spec, target.spec.cluster.zones)
    vcpus = {t: preflight_aws.INSTANCE_TYPES[t].vcpus for d in demands for t in d.instance_types}
    needs, unmapped = quota_needs(demands, vcpus)
    assert unmapped == []
    return {code: need.vcpus for code, need in needs.items()}


def good_account(aws: StubbedAws, target: Target, quota: dict[str, int] | None = None) -> None:
    """Every call answered as an account with enough of everything would answer it."""
    role = f"arn:aws:iam::{ACCOUNT}:role/platform/deployer"
    aws.offerings(target)
    aws.instance_types(target)
    names = {q.code: q.name for q in (STANDARD_ON_DEMAND, G_VT_SPOT, G_VT_ON_DEMAND, P_SPOT, P5_SPOT)}
    for code, vcpus in needs_of(target).items():
        aws.quota(code, (quota or {}).get(code, vcpus), names.get(code, ""))
    aws.versions(("1.33", "STANDARD_SUPPORT"), (target.spec.cluster.kubernetes_version, "STANDARD_SUPPORT"))
    aws.no_cluster(target)
    minor = target.spec.cluster.kubernetes_version
    if target.spec.node_repair.enabled:
        aws.addon_versions(minor, NODE_MONITORING_AGENT_ADDON_VERSION)
    pins = EKS_CORE_ADDONS[minor]
    for addon, version in (("kube-proxy", pins.kube_proxy), ("vpc-cni", pins.vpc_cni), ("coredns", pins.coredns)):
        aws.addon_versions(minor, version, addon=addon)
    aws.stubs["service-quotas"].add_response(
        "get_service_quota",
        {
            "Quota": {
                "QuotaCode": "L-6D54EA21",
                "QuotaName": "Managed node groups per cluster",
                "Value": 30.0,
                "ServiceCode": "eks",
            }
        },
        {"ServiceCode": "eks", "QuotaCode": "L-6D54EA21"},
    )
    aws.caller(f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/ci-session")
    aws.stubs["iam"].add_response("get_role", {"Role": role_body(role)}, {"RoleName": "deployer"})
    aws.simulate(role, required_actions(target.spec), target.spec)


def green_but_open(checks: list[Check]) -> bool:
    """Every row ✓, but the access row's ``?``: the example stacks keep the API endpoint open
    (``apiAllowedCidrs`` empty: no one's address is known in advance), which the preflight flags."""
    access = [c for c in checks if c.check is CheckKind.ACCESS]
    assert len(access) == 1 and access[0].status is Status.UNKNOWN and "0.0.0.0/0" in access[0].found
    return all(c.status is Status.OK for c in checks if c.check is not CheckKind.ACCESS)


def role_body(arn: str) -> dict[str, Any]:
    return {
        "Path": "/platform/",
        "RoleName": arn.rsplit("/", 1)[-1],
        "RoleId": "AROAEXAMPLEEXAMPLE1",
        "Arn": arn,
        "CreateDate": datetime(2025, 1, 1, tzinfo=timezone.utc),
    }


def test_aws_dev_with_an_account_that_has_everything_is_all_green() -> None:
    target = aws_dev()
    with StubbedAws() as aws:
        good_account(aws, target)
        checks = AwsPreflight(target, clients=aws).run()
        aws.done()
    assert checks and green_but_open(checks), [c for c in checks if c.status is not Status.OK]
    # Every kind but the Spot service-linked role's, which only Karpenter stacks check.
    assert {c.check for c in checks} == set(CheckKind) - {
        CheckKind.SPOT_ROLE,
        CheckKind.RESERVATION,
        CheckKind.RESERVATION_GRANT,
        CheckKind.FEATURE,
    }
    assert exit_status(checks, strict=False) == 0 and exit_status(checks, strict=True) != 0  # the open endpoint


def test_aws_karpenter_dev_with_an_account_that_has_everything_is_all_green() -> None:
    target = aws_karpenter_dev()
    with StubbedAws() as aws:
        good_account(aws, target)
        aws.stubs["iam"].add_response(
            "get_role",
            {
                "Role": {
                    **role_body(f"arn:aws:iam::{ACCOUNT}:role{SPOT_ROLE_PATH}AWSServiceRoleForEC2Spot"),
                    "Path": SPOT_ROLE_PATH,
                }
            },
            {"RoleName": "AWSServiceRoleForEC2Spot"},
        )
        checks = AwsPreflight(target, clients=aws).run()
        aws.done()
    assert checks and green_but_open(checks), [c for c in checks if c.status is not Status.OK]
    assert {c.check for c in checks} == set(CheckKind) - {CheckKind.RESERVATION, CheckKind.RESERVATION_GRANT, CheckKind.FEATURE}
    permissions = [c for c in checks if c.check is CheckKind.PERMISSIONS]
    # The Karpenter resources' services are simulated too (required_actions of the stack).
    assert {c.needed.split(":")[0] for c in permissions} >= {"sqs", "events", "iam", "ec2"}
    assert "autoscaling" not in {c.needed.split(":")[0] for c in permissions}


def test_quota_exactly_at_the_need_passes_and_one_vcpu_less_fails() -> None:
    target = aws_dev()
    spot_need = needs_of(target)[G_VT_SPOT.code]
    with StubbedAws() as aws:
        good_account(aws, target, quota={G_VT_SPOT.code: spot_need - 1})
        checks = AwsPreflight(target, clients=aws).run()
    quota = {c.found.split("(")[-1].split(")")[0]: c for c in checks if c.check is CheckKind.QUOTA}
    assert quota[G_VT_SPOT.code].status is Status.FAILED
    assert quota[G_VT_SPOT.code].needed.startswith(f"{spot_need} vCPU")
    assert quota[G_VT_ON_DEMAND.code].status is Status.OK
    assert quota[STANDARD_ON_DEMAND.code].status is Status.OK
    assert exit_status(checks) == 1


def test_spot_and_on_demand_quota_are_summed_separately_at_max() -> None:
    target = aws_dev()
    pools = {p.name: p for p in target.spec.gpu_pools}
    cpu_pools = {p.name: p for p in target.spec.cpu_pools}
    vcpus = {t: preflight_aws.INSTANCE_TYPES[t].vcpus for p in (*pools.values(), *cpu_pools.values()) for t in p.instance_types}
    spot = sum(p.max_size * max(vcpus[t] for t in p.instance_types) for p in pools.values() if p.spot)
    on_demand = sum(p.fallback_max_size * max(vcpus[t] for t in p.instance_types) for p in pools.values() if p.on_demand_fallback)
    cpu_spot = sum(p.max_size * max(vcpus[t] for t in p.instance_types) for p in cpu_pools.values() if p.spot)
    cpu_on_demand = sum(
        p.fallback_max_size * max(vcpus[t] for t in p.instance_types) for p in cpu_pools.values() if p.on_demand_fallback
    )
    assert cpu_spot and cpu_on_demand, "aws-dev has a Spot CPU pool with a fallback"
    needs = needs_of(target)
    assert needs[G_VT_SPOT.code] == spot
    assert needs[G_VT_ON_DEMAND.code] == on_demand
    assert needs[STANDARD_SPOT.code] == cpu_spot
    assert needs[STANDARD_ON_DEMAND.code] == target.spec.system_pool.max_size * vcpus.get("m6i.xlarge", 4) + cpu_on_demand


def test_no_applied_quota_value_falls_back_to_the_default() -> None:
    target = aws_dev()
    with StubbedAws() as aws:
        aws.stubs["service-quotas"].add_client_error("get_service_quota", service_error_code="NoSuchResourceException")
        aws.stubs["service-quotas"].add_response(
            "get_aws_default_service_quota",
            {"Quota": {"QuotaCode": G_VT_SPOT.code, "QuotaName": G_VT_SPOT.name, "Value": 0.0}},
            {"ServiceCode": "ec2", "QuotaCode": G_VT_SPOT.code},
        )
        preflight = AwsPreflight(target, clients=aws)
        assert preflight.quota_value(G_VT_SPOT) == (0.0, G_VT_SPOT.name)
        aws.done()


def test_eks_version_not_offered_fails_and_names_what_is() -> None:
    target = aws_dev()
    with StubbedAws() as aws:
        aws.versions(("1.36", "STANDARD_SUPPORT"), ("1.37", "STANDARD_SUPPORT"))
        [check] = AwsPreflight(target, clients=aws).version()
    assert check.status is Status.FAILED
    assert "offered: 1.36, 1.37" in check.found
    assert check.needed == f"EKS {target.spec.cluster.kubernetes_version}"


@pytest.mark.parametrize(
    ("support", "status"), [("STANDARD_SUPPORT", Status.OK), ("EXTENDED_SUPPORT", Status.OK), ("UNSUPPORTED", Status.FAILED)]
)
def test_eks_version_support_status(support: str, status: Status) -> None:
    target = aws_dev()
    with StubbedAws() as aws:
        aws.versions((target.spec.cluster.kubernetes_version, support))
        [check] = AwsPreflight(target, clients=aws).version()
    assert check.status is status
    assert support.lower().replace("_", " ") in check.found


def test_eks_versions_are_read_across_pages() -> None:
    target = aws_dev()
    wanted = target.spec.cluster.kubernetes_version
    with StubbedAws() as aws:
        aws.stubs["eks"].add_response(
            "describe_cluster_versions", {"clusterVersions": [{"clusterVersion": "1.30"}], "nextToken": "t1"}, {}
        )
        aws.stubs["eks"].add_response(
            "describe_cluster_versions",
            {"clusterVersions": [{"clusterVersion": wanted, "versionStatus": "STANDARD_SUPPORT"}]},
            {"nextToken": "t1"},
        )
        [check] = AwsPreflight(target, clients=aws).version()
        aws.done()
    assert check.status is Status.OK


def test_node_monitoring_agent_version_is_checked_for_the_minor_across_pages() -> None:
    """With nodeRepair on (aws-dev's default), ``DescribeAddonVersions`` must list the pinned
    version for the cluster's minor; otherwise ``CreateAddon`` would fail after the node groups exist."""
    target = aws_dev()
    wanted = target.spec.cluster.kubernetes_version
    with StubbedAws() as aws:
        aws.addon_versions(wanted, "v1.6.7-eksbuild.1", token="t1")
        aws.addon_versions(wanted, NODE_MONITORING_AGENT_ADDON_VERSION)
        [check] = AwsPreflight(target, clients=aws).addon_version()
        aws.done()
    assert check.check is CheckKind.VERSION and check.status is Status.OK
    assert check.needed == f"{NODE_MONITORING_AGENT_ADDON} {NODE_MONITORING_AGENT_ADDON_VERSION} on EKS {wanted}"
    with StubbedAws() as aws:
        aws.addon_versions(wanted, "v1.6.7-eksbuild.1", "v1.10.0-eksbuild.1")
        [check] = AwsPreflight(target, clients=aws).addon_version()
    assert check.status is Status.FAILED
    assert "offered: v1.10.0-eksbuild.1, v1.6.7-eksbuild.1" in check.found


def test_no_agent_row_when_node_repair_is_off() -> None:
    assert AwsPreflight(aws_karpenter_dev(), clients=StubbedAws()).addon_version() == []


def test_a_denied_action_fails_its_service_row_only() -> None:
    target = aws_dev()
    user = f"arn:aws:iam::{ACCOUNT}:user/alice"
    actions = required_actions(target.spec)
    with StubbedAws() as aws:
        aws.caller(user)
        aws.simulate(user, actions, target.spec, denied=("iam:CreateOpenIDConnectProvider",))
        checks = AwsPreflight(target, clients=aws).permissions()
    by_service = {c.needed.split(":")[0]: c for c in checks}
    assert by_service["iam"].status is Status.FAILED
    assert "CreateOpenIDConnectProvider (implicitDeny)" in by_service["iam"].found
    assert all(c.status is Status.OK for s, c in by_service.items() if s != "iam")


def test_simulation_denied_to_the_caller_is_unknown_not_a_crash() -> None:
    target = aws_dev()
    with StubbedAws() as aws:
        aws.caller(f"arn:aws:iam::{ACCOUNT}:user/alice")
        aws.stubs["iam"].add_client_error(
            "simulate_principal_policy", service_error_code="AccessDenied", service_message="not authorized"
        )
        checks = AwsPreflight(target, clients=aws).permissions()
    assert checks and all(c.status is Status.UNKNOWN for c in checks)
    assert "AccessDenied" in checks[0].found


def test_a_brought_vpc_needs_no_network_actions() -> None:
    target = aws_dev()
    assert "ec2:CreateVpc" in required_actions(target.spec)
    values = engine_values("aws-dev", PROJECT_ROOT)
    values["gpupools:network"] = json.dumps(
        {"vpcId": "vpc-0abc12345678", "privateSubnetIds": ["subnet-0aaa1111", "subnet-0bbb2222", "subnet-0ccc3333"]}
    )
    brought = target_from_values("aws-dev", values, environ={})
    assert "ec2:CreateVpc" not in required_actions(brought.spec)
    assert "eks:CreateCluster" in required_actions(brought.spec)


def test_assumed_role_is_simulated_as_its_role_with_its_path() -> None:
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer/gh-123"
    assert (
        principal_arn(session, lambda _: f"arn:aws:iam::{ACCOUNT}:role/platform/deployer")
        == f"arn:aws:iam::{ACCOUNT}:role/platform/deployer"
    )
    assert principal_arn(session, lambda _: None) == f"arn:aws:iam::{ACCOUNT}:role/deployer"
    assert principal_arn(f"arn:aws:iam::{ACCOUNT}:user/ops/alice", lambda _: None) == f"arn:aws:iam::{ACCOUNT}:user/ops/alice"
    assert principal_arn(f"arn:aws:iam::{ACCOUNT}:root", lambda _: None) is None


@pytest.mark.parametrize(
    ("instance_type", "capacity", "quota"),
    [
        ("g4dn.xlarge", CapacityType.SPOT, G_VT_SPOT),
        ("g6e.12xlarge", CapacityType.ON_DEMAND, G_VT_ON_DEMAND),
        ("m6i.xlarge", CapacityType.ON_DEMAND, STANDARD_ON_DEMAND),
        ("p4d.24xlarge", CapacityType.SPOT, P_SPOT),
        ("p5.48xlarge", CapacityType.SPOT, P5_SPOT),
        ("p5en.48xlarge", CapacityType.SPOT, P5_SPOT),
    ],
)
def test_instance_types_map_to_their_vcpu_quota(instance_type: str, capacity: CapacityType, quota: Any) -> None:
    assert quota_for(instance_type, capacity) == quota


def test_a_family_without_a_known_quota_is_unknown_not_guessed() -> None:
    assert quota_for("dl1.24xlarge", CapacityType.SPOT) is None
    assert quota_for("inf2.xlarge", CapacityType.ON_DEMAND) is None


def test_every_stubbed_call_is_in_botocores_model() -> None:
    # The Stubber validates parameters and responses against botocore's service models; this pins
    # that the operations the preflight calls exist there (a renamed operation fails here first).
    session = boto3.session.Session(region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    for service, operation in [
        ("ec2", "DescribeInstanceTypeOfferings"),
        ("ec2", "DescribeAvailabilityZones"),
        ("ec2", "DescribeInstanceTypes"),
        ("service-quotas", "GetServiceQuota"),
        ("service-quotas", "GetAWSDefaultServiceQuota"),
        ("eks", "DescribeClusterVersions"),
        ("iam", "SimulatePrincipalPolicy"),
        ("sts", "GetCallerIdentity"),
    ]:
        assert operation in session.client(service).meta.service_model.operation_names

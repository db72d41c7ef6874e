"""The config contract: defaults, errors (table-driven), and properties (Hypothesis)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from gpupools import config, rules
from gpupools.conventions import GPU_TAINT, TaintEffect
from gpupools.errors import ConfigError
from gpupools.specs import AmiType, Cloud
from gpupools.versions import DEFAULT_DEVICE_PLUGIN_VERSION, DEFAULT_KUBERNETES_VERSION
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sharing_cases import SHARING_INVALID

AZURE: dict[str, Any] = {
    "gpupools:cloud": "azure",
    "azure-native:location": "eastus",
    "gpupools:cluster": {"name": "ml-dev"},
    "gpupools:gpuPools": [{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 10}],
}

AWS: dict[str, Any] = {
    "gpupools:cloud": "aws",
    "aws:region": "us-west-2",
    "gpupools:cluster": {"name": "ml-dev", "zones": ["us-west-2a", "us-west-2b", "us-west-2c"]},
    "gpupools:gpuPools": [{"name": "g1", "instanceTypes": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"], "maxSize": 9}],
}


def with_pool(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``base`` with its first GPU pool updated (``None`` removes a key)."""
    result = copy.deepcopy(base)
    pool = result["gpupools:gpuPools"][0]
    for key, value in changes.items():
        if value is None:
            pool.pop(key, None)
        else:
            pool[key] = value
    return result


def with_key(base: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    result = copy.deepcopy(base)
    if value is None:
        result.pop(key, None)
    else:
        result[key] = value
    return result


# --- defaults ------------------------------------------------------------------------------------


def test_azure_defaults_are_the_documented_ones() -> None:
    spec = config.parse(AZURE)
    pool = spec.gpu_pools[0]
    assert spec.cluster.kubernetes_version == DEFAULT_KUBERNETES_VERSION
    assert spec.cluster.zones == ("1", "2", "3")
    assert spec.cluster.allow_local_accounts is False
    assert spec.network.cidr == "10.40.0.0/16" and not spec.network.bring_your_own
    assert spec.system_pool.instance_types == ("Standard_D4s_v5",)
    assert (spec.system_pool.min_size, spec.system_pool.max_size) == (2, 4)
    assert (pool.min_size, pool.spot, pool.spot_max_price, pool.on_demand_fallback) == (0, True, -1.0, True)
    assert pool.fallback_max_size == pool.max_size == 10
    assert pool.disk_size_gb == 128
    assert spec.device_plugin.version == DEFAULT_DEVICE_PLUGIN_VERSION
    assert spec.autoscaler.max_node_provision_time == "10m"
    assert spec.smoke_test.enabled is False


def test_aws_defaults_differ_where_the_clouds_differ() -> None:
    spec = config.parse(AWS, region="us-west-2")
    assert spec.system_pool.instance_types == ("m6i.xlarge",)
    assert spec.gpu_pools[0].disk_size_gb == 100
    assert spec.gpu_pools[0].ami_type is AmiType.AL2023_NVIDIA
    assert config.parse(with_key(AWS, "gpupools:cluster", {"name": "x"})).cluster.zones == ()


def test_non_spot_pool_defaults_to_no_fallback() -> None:
    pool = config.parse(with_pool(AZURE, spot=False)).gpu_pools[0]
    assert pool.spot is False and pool.on_demand_fallback is False


def test_json_string_objects_are_accepted_as_pulumi_stores_them() -> None:
    import json

    raw = {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in AZURE.items()}
    assert config.parse(raw) == config.parse(AZURE)


def test_loading_twice_gives_equal_specs() -> None:
    assert config.parse(AZURE) == config.parse(copy.deepcopy(AZURE))
    assert config.parse(AWS, "us-west-2") == config.parse(copy.deepcopy(AWS), "us-west-2")


def test_taints_and_labels_are_parsed() -> None:
    spec = config.parse(
        with_pool(AZURE, labels={"team": "vision"}, taints=[{"key": "dedicated", "value": "vision", "effect": "NoSchedule"}])
    )
    pool = spec.gpu_pools[0]
    assert dict(pool.labels) == {"team": "vision"}
    assert pool.taints[0].effect is TaintEffect.NO_SCHEDULE
    assert str(pool.taints[0]) == "dedicated=vision:NoSchedule"


# --- errors --------------------------------------------------------------------------------------

TAINT = {"key": "dedicated", "value": "vision", "effect": "NoSchedule"}

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    # (case id, config, path in the message, rule fragment in the message)
    ("cloud-missing", with_key(AZURE, "gpupools:cloud", None), "gpupools:cloud", "is required"),
    ("cloud-unknown", with_key(AZURE, "gpupools:cloud", "gcp"), "gpupools:cloud", "must be one of azure, aws"),
    ("top-level-typo", with_key(AZURE, "gpupools:gpuPool", []), "gpuPool", "did you mean 'gpuPools'"),
    ("cluster-missing", with_key(AZURE, "gpupools:cluster", None), "gpupools:cluster", "is required"),
    ("cluster-name-missing", with_key(AZURE, "gpupools:cluster", {"zones": ["1"]}), "gpupools:cluster.name", "is required"),
    ("cluster-name-upper", with_key(AZURE, "gpupools:cluster", {"name": "ML"}), "gpupools:cluster.name", "lowercase"),
    ("cluster-name-long", with_key(AZURE, "gpupools:cluster", {"name": "a" * 21}), "gpupools:cluster.name", "at most 20"),
    (
        "cluster-key-typo",
        with_key(AZURE, "gpupools:cluster", {"name": "x", "zone": ["1"]}),
        "gpupools:cluster.zone",
        "did you mean 'zones'",
    ),
    (
        "k8s-version-old",
        with_key(AZURE, "gpupools:cluster", {"name": "x", "kubernetesVersion": "1.25"}),
        "kubernetesVersion",
        "supported",
    ),
    (
        "k8s-version-float",
        with_key(AZURE, "gpupools:cluster", {"name": "x", "kubernetesVersion": 1.3}),
        "kubernetesVersion",
        "quoted",
    ),
    (
        "azure-zone-format",
        with_key(AZURE, "gpupools:cluster", {"name": "x", "zones": ["eastus-1"]}),
        "zones[0]",
        '"1", "2" or "3"',
    ),
    ("aws-zone-format", with_key(AWS, "gpupools:cluster", {"name": "x", "zones": ["1", "2"]}), "zones[0]", "us-west-2a"),
    (
        "aws-zone-other-region",
        with_key(AWS, "gpupools:cluster", {"name": "x", "zones": ["eu-west-1a", "eu-west-1b"]}),
        "zones[0]",
        "region",
    ),
    ("duplicate-zones", with_key(AZURE, "gpupools:cluster", {"name": "x", "zones": ["1", "1"]}), "zones[1]", "unique"),
    (
        "local-accounts-on-aws",
        with_key(AWS, "gpupools:cluster", {"name": "x", "allowLocalAccounts": True}),
        "allowLocalAccounts",
        "Azure only",
    ),
    (
        "local-accounts-not-bool",
        with_key(AZURE, "gpupools:cluster", {"name": "x", "allowLocalAccounts": "yes"}),
        "allowLocalAccounts",
        "true or false",
    ),
    ("cidr-public", with_key(AZURE, "gpupools:network", {"cidr": "8.8.0.0/16"}), "gpupools:network.cidr", "private"),
    ("cidr-malformed", with_key(AZURE, "gpupools:network", {"cidr": "10.40.0.1/16"}), "gpupools:network.cidr", "CIDR"),
    ("cidr-too-small", with_key(AZURE, "gpupools:network", {"cidr": "10.40.0.0/26"}), "gpupools:network.cidr", "/16 to /22"),
    (
        "cidr-overlaps-services",
        with_key(AZURE, "gpupools:network", {"cidr": "172.20.0.0/16"}),
        "gpupools:network.cidr",
        "overlap",
    ),
    (
        "subnet-id-malformed",
        with_key(AZURE, "gpupools:network", {"subnetId": "subnet-1"}),
        "gpupools:network.subnetId",
        "resource ID",
    ),
    ("vpc-on-azure", with_key(AZURE, "gpupools:network", {"vpcId": "vpc-0123abcd"}), "gpupools:network.vpcId", "AWS only"),
    ("subnet-id-on-aws", with_key(AWS, "gpupools:network", {"subnetId": "/x"}), "gpupools:network.subnetId", "Azure only"),
    ("vpc-without-subnets", with_key(AWS, "gpupools:network", {"vpcId": "vpc-0123abcd"}), "privateSubnetIds", "go together"),
    (
        "subnets-per-zone",
        with_key(AWS, "gpupools:network", {"vpcId": "vpc-0123abcd", "privateSubnetIds": ["subnet-0123abcd"]}),
        "privateSubnetIds",
        "one subnet per cluster zone (3)",
    ),
    ("system-spot", with_key(AZURE, "gpupools:systemPool", {"spot": True}), "gpupools:systemPool.spot", "always on-demand"),
    (
        "system-two-sizes",
        with_key(AZURE, "gpupools:systemPool", {"instanceTypes": ["Standard_D4s_v5", "Standard_D8s_v5"]}),
        "instanceTypes",
        "exactly one",
    ),
    (
        "system-too-small",
        with_key(AZURE, "gpupools:systemPool", {"instanceTypes": ["Standard_D2s_v5"]}),
        "instanceTypes[0]",
        "4 vCPUs",
    ),
    (
        "system-gpu-size",
        with_key(AZURE, "gpupools:systemPool", {"instanceTypes": ["Standard_NC4as_T4_v3"]}),
        "instanceTypes[0]",
        "GPU",
    ),
    ("system-one-node", with_key(AZURE, "gpupools:systemPool", {"minSize": 1}), "gpupools:systemPool.minSize", ">= 2"),
    ("system-gpu-type-aws", with_key(AWS, "gpupools:systemPool", {"instanceTypes": ["g5.xlarge"]}), "instanceTypes[0]", "GPU"),
    ("no-gpu-pools", with_key(AZURE, "gpupools:gpuPools", []), "gpupools:gpuPools", "at least one"),
    ("gpu-pools-missing", with_key(AZURE, "gpupools:gpuPools", None), "gpupools:gpuPools", "is required"),
    ("gpu-pools-not-list", with_key(AZURE, "gpupools:gpuPools", {"name": "t4"}), "gpupools:gpuPools", "list"),
    ("pool-key-typo", with_pool(AZURE, maxSise=3), "gpupools:gpuPools[0].maxSise", "did you mean 'maxSize'"),
    ("pool-name-missing", with_pool(AZURE, name=None), "gpupools:gpuPools[0].name", "is required"),
    ("pool-name-dash", with_pool(AZURE, name="t-4"), "gpupools:gpuPools[0].name", "lowercase letter"),
    ("pool-name-digit-first", with_pool(AZURE, name="4t"), "gpupools:gpuPools[0].name", "lowercase letter"),
    # The system pool's name on both clouds (AKS System pool, EKS node group, Auto Mode NodePool and class).
    ("pool-name-system-azure", with_pool(AZURE, name="system"), "gpupools:gpuPools[0].name", "reserved for the system pool"),
    ("pool-name-system-aws", with_pool(AWS, name="system"), "gpupools:gpuPools[0].name", "reserved for the system pool"),
    (
        "pool-name-system-auto-mode",
        with_key(with_pool(AWS, name="system"), "gpupools:provisioner", "auto-mode"),
        "gpupools:gpuPools[0].name",
        "reserved for the system pool",
    ),
    ("aks-pool-name-with-suffix-too-long", with_pool(AZURE, name="verylong"), "gpupools:gpuPools[0].name", "at most 7"),
    ("max-missing", with_pool(AZURE, maxSize=None), "gpupools:gpuPools[0].maxSize", "is required"),
    ("max-string", with_pool(AZURE, maxSize="10"), "gpupools:gpuPools[0].maxSize", "integer"),
    ("max-bool", with_pool(AZURE, maxSize=True), "gpupools:gpuPools[0].maxSize", "integer"),
    ("max-below-min", with_pool(AZURE, minSize=2, maxSize=1), "gpupools:gpuPools[0].maxSize", "must be >= minSize (2)"),
    ("min-negative", with_pool(AZURE, minSize=-1), "gpupools:gpuPools[0].minSize", ">= 0"),
    ("max-over-aks-limit", with_pool(AZURE, maxSize=1001), "gpupools:gpuPools[0].maxSize", "<= 1000"),
    ("max-below-zone-count-eks", with_pool(AWS, maxSize=2), "gpupools:gpuPools[0].maxSize", "number of zones (3)"),
    ("retired-ncv3", with_pool(AZURE, instanceTypes=["Standard_NC6s_v3"]), "instanceTypes[0]", "use Standard_NC24ads_A100_v4"),
    ("retired-k80", with_pool(AZURE, instanceTypes=["Standard_NC6"]), "instanceTypes[0]", "retired"),
    ("azure-non-gpu", with_pool(AZURE, instanceTypes=["Standard_D4s_v5"]), "instanceTypes[0]", "GPU VM size"),
    (
        "azure-two-sizes",
        with_pool(AZURE, instanceTypes=["Standard_NC4as_T4_v3", "Standard_NC8as_T4_v3"]),
        "instanceTypes",
        "exactly one",
    ),
    ("aws-non-gpu", with_pool(AWS, instanceTypes=["m6i.xlarge"]), "instanceTypes[0]", "GPU"),
    ("aws-fractional-gpu", with_pool(AWS, instanceTypes=["g6f.xlarge"]), "instanceTypes[0]", "whole NVIDIA GPU"),
    ("aws-unknown-type", with_pool(AWS, instanceTypes=["g9.xlarge"]), "instanceTypes[0]", "gpupools knows"),
    ("aws-mixed-shapes", with_pool(AWS, instanceTypes=["g5.xlarge", "g6e.xlarge"]), "instanceTypes[1]", "shape of g5.xlarge"),
    ("aws-duplicate-type", with_pool(AWS, instanceTypes=["g5.xlarge", "g5.xlarge"]), "instanceTypes[1]", "unique"),
    ("no-instance-types", with_pool(AZURE, instanceTypes=[]), "instanceTypes", "at least one"),
    ("fallback-without-spot", with_pool(AZURE, spot=False, onDemandFallback=True), "onDemandFallback", "already on-demand"),
    (
        "od-max-without-fallback",
        with_pool(AZURE, onDemandFallback=False, onDemandMaxSize=2),
        "onDemandMaxSize",
        "onDemandFallback: true",
    ),
    ("spot-price-zero", with_pool(AZURE, spotMaxPrice=0), "spotMaxPrice", "-1"),
    ("spot-price-decimals", with_pool(AZURE, spotMaxPrice=0.123456), "spotMaxPrice", "5 decimals"),
    ("spot-price-on-aws", with_pool(AWS, spotMaxPrice=1.0), "spotMaxPrice", "Azure only"),
    ("ami-type-on-azure", with_pool(AZURE, amiType="AL2023_x86_64_NVIDIA"), "amiType", "AWS only"),
    ("ami-type-unknown", with_pool(AWS, amiType="AL2_x86_64_GPU"), "amiType", "must be one of"),
    ("pool-zone-not-cluster-zone", with_pool(AWS, zones=["us-west-2d"]), "zones[0]", "cluster's zones"),
    (
        "taint-without-value",
        with_pool(AWS, taints=[{"key": "dedicated", "value": "", "effect": "NoSchedule"}]),
        "taints[0].value",
        "non-empty",
    ),
    (
        "taint-value-missing",
        with_pool(AWS, taints=[{"key": "dedicated", "effect": "NoSchedule"}]),
        "taints[0].value",
        "non-empty",
    ),
    ("taint-eks-effect", with_pool(AWS, taints=[{**TAINT, "effect": "NO_SCHEDULE"}]), "taints[0].effect", "Kubernetes spelling"),
    ("taint-key-typo", with_pool(AZURE, taints=[{**TAINT, "efect": "NoSchedule"}]), "taints[0].efect", "did you mean 'effect'"),
    (
        "taint-gpu-repeated",
        with_pool(AZURE, taints=[{"key": GPU_TAINT.key, "value": "x", "effect": "NoSchedule"}]),
        "taints[0].key",
        "GPU taint",
    ),
    ("taint-reserved", with_pool(AZURE, taints=[{**TAINT, "key": "kubernetes.azure.com/x"}]), "taints[0].key", "reserved prefix"),
    (
        "label-reserved-k8s",
        with_pool(AZURE, labels={"node-role.kubernetes.io/gpu": "x"}),
        "labels.node-role.kubernetes.io/gpu",
        "reserved",
    ),
    ("label-reserved-ours", with_pool(AWS, labels={"gpupools.io/pool": "x"}), "labels.gpupools.io/pool", "reserved"),
    (
        "label-reserved-eks",
        with_pool(AWS, labels={"eks.amazonaws.com/nodegroup": "x"}),
        "labels.eks.amazonaws.com/nodegroup",
        "reserved",
    ),
    (
        "eks-label-set-by-gpupools",
        with_pool(AWS, labels={"k8s.amazonaws.com/accelerator": "t4"}),
        "labels.k8s.amazonaws.com/accelerator",
        "set by gpupools",
    ),
    (
        "eks-label-key-too-long",
        with_pool(AWS, labels={"a" * 30 + ".example.com/" + "k" * 30: "x"}),
        "gpupools:gpuPools[0].labels.aaaa",
        "at most 63 characters on EKS",
    ),
    ("label-bad-value", with_pool(AZURE, labels={"team": "vision!"}), "labels.team", "value"),
    ("label-not-string", with_pool(AZURE, labels={"gpu": 1}), "labels.gpu", "quote numbers"),
    ("label-key-bad", with_pool(AZURE, labels={"-team": "x"}), "labels.-team", "key name"),
    ("too-many-asg-tags", with_pool(AWS, labels={f"l{i}": "v" for i in range(40)}), "gpupools:gpuPools[0].labels", "50 tags"),
    ("disk-too-small", with_pool(AZURE, diskSizeGb=10), "diskSizeGb", "from 30"),
    (
        "duplicate-pool-names",
        with_key(AZURE, "gpupools:gpuPools", [AZURE["gpupools:gpuPools"][0], AZURE["gpupools:gpuPools"][0]]),
        "gpupools:gpuPools[1]",
        "unique",
    ),
    (
        "device-plugin-latest",
        with_key(AZURE, "gpupools:devicePlugin", {"version": "latest"}),
        "gpupools:devicePlugin.version",
        "release tag",
    ),
    (
        "device-plugin-no-v",
        with_key(AZURE, "gpupools:devicePlugin", {"version": "0.20.0"}),
        "gpupools:devicePlugin.version",
        "release tag",
    ),
    (
        "autoscaler-seconds",
        with_key(AZURE, "gpupools:autoscaler", {"maxNodeProvisionTime": "900s"}),
        "maxNodeProvisionTime",
        "whole minutes",
    ),
    ("autoscaler-typo", with_key(AZURE, "gpupools:autoscaler", {"scaleDownUnneeded": "5m"}), "scaleDownUnneeded", "did you mean"),
    (
        "smoke-test-not-bool",
        with_key(AZURE, "gpupools:smokeTest", {"enabled": "yes"}),
        "gpupools:smokeTest.enabled",
        "true or false",
    ),
]
INVALID += SHARING_INVALID

INVALID += [
    # gpupools:cluster.permissionsBoundary (issue 37): an IAM managed policy ARN, AWS only.
    (
        "permissions-boundary-not-a-policy-arn",
        with_key(AWS, "gpupools:cluster", {**AWS["gpupools:cluster"], "permissionsBoundary": "arn:aws:iam::123456789012:role/x"}),
        "gpupools:cluster.permissionsBoundary",
        "must be an IAM managed policy ARN",
    ),
    (
        "permissions-boundary-wildcard",
        with_key(
            AWS, "gpupools:cluster", {**AWS["gpupools:cluster"], "permissionsBoundary": "arn:aws:iam::123456789012:policy/*"}
        ),
        "gpupools:cluster.permissionsBoundary",
        "must be an IAM managed policy ARN",
    ),
    (
        "permissions-boundary-azure",
        with_key(AZURE, "gpupools:cluster", {"name": "ml-dev", "permissionsBoundary": "arn:aws:iam::123456789012:policy/b"}),
        "gpupools:cluster.permissionsBoundary",
        "is AWS only",
    ),
]

CRG = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/capacity/providers/Microsoft.Compute/capacityReservationGroups/h100"
ODCR = "cr-0123456789abcdef0"
INVALID += [
    # gpuPools[].reservations / efa / proximityPlacement (issue 21's config contract): formats,
    # zones, clouds, GPU pools only.
    (
        "reservation-aws-id-format",
        with_pool(AWS, reservations=[{"id": "cr-123", "zone": "us-west-2a"}]),
        "gpupools:gpuPools[0].reservations[0].id",
        "cr- and 17 hex digits",
    ),
    (
        "reservation-aws-zone-missing-in-a-multi-zone-pool",
        with_pool(AWS, reservations=[{"id": ODCR}]),
        "gpupools:gpuPools[0].reservations[0].zone",
        "required unless the pool has exactly one zone",
    ),
    (
        "reservation-aws-zone-not-the-pools",
        with_pool(AWS, zones=["us-west-2a"], reservations=[{"id": ODCR, "zone": "us-west-2b"}]),
        "gpupools:gpuPools[0].reservations[0].zone",
        "must be one of the pool's zones (us-west-2a)",
    ),
    (
        "reservation-duplicate",
        with_pool(AWS, zones=["us-west-2a"], reservations=[{"id": ODCR}, {"id": ODCR}]),
        "gpupools:gpuPools[0].reservations[1]",
        "reservation IDs must be unique",
    ),
    (
        "reservation-azure-not-a-group-id",
        with_pool(AZURE, reservations=[{"id": ODCR}]),
        "gpupools:gpuPools[0].reservations[0].id",
        "Capacity Reservation Group ARM ID",
    ),
    ("reservation-key-typo", with_pool(AZURE, reservations=[{"id": CRG, "zones": "1"}]), "reservations[0].zones", "did you mean"),
    ("reservations-not-a-list", with_pool(AZURE, reservations={"id": CRG}), "gpupools:gpuPools[0].reservations", "a list"),
    (
        "reservation-kind-unknown",
        with_pool(AWS, zones=["us-west-2a"], reservations=[{"id": ODCR, "kind": "block"}]),
        "gpupools:gpuPools[0].reservations[0].kind",
        "must be one of odcr, capacityBlock",
    ),
    (
        "reservation-capacity-block-on-azure",
        with_pool(AZURE, reservations=[{"id": CRG, "kind": "capacityBlock"}]),
        "gpupools:gpuPools[0].reservations[0].kind",
        "is AWS only",
    ),
    ("efa-on-azure", with_pool(AZURE, efa=True), "gpupools:gpuPools[0].efa", "is AWS only"),
    (
        "proximity-placement-on-aws",
        with_pool(AWS, proximityPlacement=True),
        "gpupools:gpuPools[0].proximityPlacement",
        "is Azure only",
    ),
    ("efa-not-a-bool", with_pool(AWS, efa="yes"), "gpupools:gpuPools[0].efa", "true or false"),
]
INVALID += [
    # gpupools:cost. The budget is priced with the committed catalog in the stack's region: the
    # ceiling of AZURE (10 T4 Spot + 10 T4 on-demand + 4 system nodes) is well above $1/h.
    (
        "cost-budget-exceeded",
        with_key(AZURE, "gpupools:cost", {"budgetPerHour": 1}),
        "gpupools:cost.budgetPerHour",
        "the fleet's ceiling",
    ),
    (
        "cost-budget-unpriced-region",
        with_key(with_key(AZURE, "azure-native:location", "swedensouth"), "gpupools:cost", {"budgetPerHour": 100}),
        "gpupools:cost.budgetPerHour",
        "cannot be decided",
    ),
    ("cost-spot-share", with_key(AZURE, "gpupools:cost", {"spotShare": 2}), "gpupools:cost.spotShare", "from 0 to 1"),
    ("cost-hours-negative", with_key(AWS, "gpupools:cost", {"gpuHoursPerMonth": -5}), "gpupools:cost.gpuHoursPerMonth", ">= 0"),
    ("cost-key-typo", with_key(AWS, "gpupools:cost", {"budgetPerHours": 5}), "gpupools:cost.budgetPerHours", "did you mean"),
    # Evictions (docs/costs.md "Evictions in the monthly estimate"): shares from 0 to 1, a pool's own
    # rate only where the pool buys Spot.
    (
        "cost-eviction-rate-above-1",
        with_key(AZURE, "gpupools:cost", {"evictionRate": 1.5}),
        "gpupools:cost.evictionRate",
        "must be between 0 and 1 (share of Spot runs interrupted",
    ),
    (
        "cost-eviction-rate-percent",
        with_key(AWS, "gpupools:cost", {"evictionRate": "5%"}),
        "gpupools:cost.evictionRate",
        "must be a number from 0 to 1",
    ),
    (
        "cost-redone-share-negative",
        with_key(AWS, "gpupools:cost", {"redoneShare": -0.5}),
        "gpupools:cost.redoneShare",
        "must be between 0 and 1",
    ),
    ("pool-eviction-rate-above-1", with_pool(AWS, evictionRate=20), "gpupools:gpuPools[0].evictionRate", "between 0 and 1"),
    (
        "pool-eviction-rate-on-demand-only",
        with_pool(AZURE, spot=False, evictionRate=0.1),
        "gpupools:gpuPools[0].evictionRate",
        "Spot pools only",
    ),
]


@pytest.mark.parametrize(("case", "raw", "path", "rule"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_config_fails_with_one_clear_error(case: str, raw: dict[str, Any], path: str, rule: str) -> None:
    region = raw.get("aws:region") or raw.get("azure-native:location")
    with pytest.raises(ConfigError) as caught:
        config.parse(raw, region=region)
    message = str(caught.value)
    assert path in caught.value.path, f"{case}: path {caught.value.path!r} should name {path!r}"
    assert rule in message, f"{case}: {message!r} should say {rule!r}"
    assert ", got " in message  # the value is quoted


def test_catalogue_is_large_and_distinct() -> None:
    assert len(INVALID) >= 60
    assert len({case for case, *_ in INVALID}) == len(INVALID)


def test_valid_bases_are_valid() -> None:
    """Guard for the table above: every case fails because of its change, not its base."""
    config.parse(AZURE)
    config.parse(AWS, region="us-west-2")


# --- properties ----------------------------------------------------------------------------------

pool_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(name=pool_names, min_size=st.integers(0, 50), extra=st.integers(0, 50))
def test_any_well_formed_azure_pool_is_accepted(name: str, min_size: int, extra: int) -> None:
    spec = config.parse(with_pool(AZURE, name=name, minSize=min_size, maxSize=max(1, min_size + extra)))
    assert spec.gpu_pools[0].name == name
    assert spec.gpu_pools[0].max_size >= spec.gpu_pools[0].min_size


@settings(max_examples=200, deadline=None)
@given(min_size=st.integers(0, 1000), max_size=st.integers(-5, 1000))
def test_max_below_min_is_always_rejected_naming_both(min_size: int, max_size: int) -> None:
    raw = with_pool(AZURE, minSize=min_size, maxSize=max_size)
    if max_size >= max(1, min_size):
        assert config.parse(raw).gpu_pools[0].max_size == max_size
    else:
        with pytest.raises(ConfigError, match=r"gpupools:gpuPools\[0\]\.maxSize"):
            config.parse(raw)


@settings(max_examples=200, deadline=None)
@given(name=st.text(min_size=1, max_size=14))
def test_pool_names_accepted_iff_aks_would_accept_them_with_our_suffix(name: str) -> None:
    ok = bool(rules.POOL_NAME.fullmatch(name)) and len(name) + rules.AKS_ROTATION_SUFFIX <= rules.AKS_POOL_NAME_MAX
    raw = with_pool(AZURE, name=name)
    if ok:
        config.parse(raw)
    else:
        with pytest.raises(ConfigError, match=r"gpupools:gpuPools\[0\]\.name"):
            config.parse(raw)


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (with_pool(AZURE, name="gpu\n"), r"gpupools:gpuPools\[0\]\.name"),
        (with_key(AZURE, "gpupools:cluster", {"name": "dev\n"}), r"gpupools:cluster\.name"),
        (with_key(AZURE, "gpupools:maintenance", {"startTime": "02:00\n"}), r"gpupools:maintenance\.startTime"),
        (with_pool(AZURE, upgrade={"maxSurge": "1\n"}), r"gpupools:gpuPools\[0\]\.upgrade\.maxSurge"),
    ],
    ids=["pool name", "cluster name", "maintenance start", "upgrade surge"],
)
def test_a_trailing_newline_is_refused(raw: dict[str, Any], path: str) -> None:
    """A YAML block scalar (``name: |``) keeps its newline; AKS and EKS refuse such a name. Found by
    the pool-name property above: ``^...$`` with ``re.match`` accepts a trailing newline, so every
    anchored pattern ends in ``\\Z``."""
    with pytest.raises(ConfigError, match=path):
        config.parse(raw)


@settings(max_examples=100, deadline=None)
@given(key=st.sampled_from(config.GPU_POOL_KEYS), typo_at=st.integers(0, 30))
def test_a_one_letter_typo_in_any_pool_key_is_caught_with_a_suggestion(key: str, typo_at: int) -> None:
    index = typo_at % len(key)
    typo = key[:index] + key[index + 1 :]  # drop one letter
    if typo in config.GPU_POOL_KEYS or not typo:
        return
    raw = with_pool(AZURE, **{typo: 1})
    with pytest.raises(ConfigError) as caught:
        config.parse(raw)
    assert caught.value.path == f"gpupools:gpuPools[0].{typo}"
    assert f"did you mean {key!r}" in str(caught.value)


def test_parse_does_not_need_pulumi_resources() -> None:
    """Config parsing is pure: it registers nothing (no Pulumi runtime is even configured here)."""
    spec = config.parse(AZURE)
    assert spec.cloud is Cloud.AZURE


def test_reservations_efa_and_proximity_placement_are_parsed() -> None:
    from gpupools.specs import ReservationSpec

    # efa needs an EFA-capable type in one zone, proximityPlacement one zone (rules.check_efa,
    # rules.check_proximity_placement; tests/test_multi_node.py).
    aws = config.parse(
        with_pool(AWS, zones=["us-west-2a"], instanceTypes=["p4d.24xlarge"], efa=True, reservations=[{"id": ODCR}])
    )
    assert aws.gpu_pools[0].reservations == (ReservationSpec(ODCR, None),) and aws.gpu_pools[0].efa is True
    azure = config.parse(with_pool(AZURE, zones=["1"], proximityPlacement=True, reservations=[{"id": CRG, "zone": "1"}]))
    assert azure.gpu_pools[0].reservations == (ReservationSpec(CRG, "1"),) and azure.gpu_pools[0].proximity_placement is True
    plain = config.parse(AZURE).gpu_pools[0]
    assert (plain.reservations, plain.efa, plain.proximity_placement) == ((), False, False)


def test_an_infiniband_pool_takes_only_infiniband_capable_sizes() -> None:
    """``infiniband: true`` on Azure: the RDMA ND sizes only (the size catalog's ``infiniband`` fact)."""
    from gpupools.catalog.azure_vm_sizes import infiniband_sizes

    ib = with_pool(AZURE, instanceTypes=["Standard_ND96isr_H100_v5"], maxSize=2, infiniband=True)
    assert "Standard_ND96isr_H100_v5" in infiniband_sizes()
    assert config.parse(ib).gpu_pools[0].infiniband is True
    with pytest.raises(ConfigError) as raised:
        config.parse(with_pool(AZURE, infiniband=True))
    assert raised.value.path == "gpupools:gpuPools[0].instanceTypes[0]"
    assert "InfiniBand-capable" in str(raised.value) and "Standard_NC4as_T4_v3" in str(raised.value)
    with pytest.raises(ConfigError) as on_aws:
        config.parse(with_pool(AWS, infiniband=True))
    assert on_aws.value.path == "gpupools:gpuPools[0].infiniband" and "Azure only" in str(on_aws.value)


# --- issue 48, 5.: a namespace one edit from gpupools ---------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["gpupool:cost", "gpupoolss:cost", "gpuools:cost", "gpuppools:cost", "gupools:cost", "GPUPools:queueing", "gpupoosl:cost"],
)
def test_a_key_whose_namespace_is_one_edit_from_gpupools_is_named(key: str) -> None:
    assert config.misspelt_namespace_keys([key, "gpupools:cost", "aws:region"]) == [key]
    warning = config.misspelt_namespace_warning([key])
    assert warning is not None and f"{key} (did you mean gpupools:{key.split(':', 1)[1]}?)" in warning


@pytest.mark.parametrize(
    "key", ["gpupools:cost", "aws:region", "azure-native:location", "kubernetes:context", "pulumi:tags", "gpu:x"]
)
def test_other_namespaces_are_left_alone(key: str) -> None:
    assert config.misspelt_namespace_keys([key]) == []
    assert config.misspelt_namespace_warning([key]) is None


def test_the_program_warns_about_a_misspelt_namespace_before_it_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second new user's budget under ``gpupool:cost`` was dropped with exit 0: ``config.load``
    now says so through ``pulumi.log.warn`` (the engine shows it on ``preview`` and ``up``)."""
    import pulumi
    from gpupools.testing import run_stack, stack_config

    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: said.append(str(message)))
    cost = stack_config("aws-dev").get("gpupools:cost") or {"monthlyBudget": 1}
    run_stack("aws-dev", overrides={"gpupool:cost": cost})
    assert any("gpupool:cost (did you mean gpupools:cost?)" in line for line in said), said

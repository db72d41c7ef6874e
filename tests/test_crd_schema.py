"""The CRD contract checker (tests/crd_schema.py) on hand-written Karpenter objects.

The valid objects are written from the upstream docs of the pinned releases (aws/karpenter-provider-aws
``website/content/en/v1.14/concepts/nodepools.md`` and ``nodeclasses.md``; the AKS docs
"Configure AKSNodeClass resources for node auto-provisioning" and "node pools" pages), shaped like
the GPU pools gpupools makes. Each bad object breaks one rule and must fail with a message naming
the field, so a checker that accepted everything (or rejected everything) fails here.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.crd_schema import (
    CRD_DIR,
    assert_valid_custom_resource,
    crds_for,
    pinned_crds,
    pinned_release,
    rules_of,
    transition_rules,
    validate_custom_resource,
)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def eks_nodepool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "ml-dev-t4", "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"gpupools.io/pool": "t4", "gpupools.io/role": "gpu", "nvidia.com/gpu.present": "true"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "ml-dev-nvidia"},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge", "g5.xlarge"]},
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a", "us-west-2b"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
                    ],
                    "taints": [GPU_TAINT],
                    "expireAfter": "720h",
                },
            },
            "limits": {"nvidia.com/gpu": 10, "cpu": "40"},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "10m",
                "budgets": [{"nodes": "10%"}],
            },
            "weight": 50,
        },
    }


def ec2_nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "ml-dev-nvidia"},
        "spec": {
            "role": "ml-dev-karpenter-node",
            "amiSelectorTerms": [{"alias": "al2023@v20260801"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "ml-dev"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "ml-dev"}}],
            "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "rootVolume": True,
                    "ebs": {"volumeSize": "128Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
                }
            ],
            "tags": {"gpupools.io/cluster": "ml-dev"},
        },
    }


def aks_nodepool() -> dict[str, Any]:
    pool = eks_nodepool()
    spec = pool["spec"]["template"]["spec"]
    spec["nodeClassRef"] = {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "ml-dev-nvidia"}
    spec["requirements"] = [
        {"key": "karpenter.azure.com/sku-name", "operator": "In", "values": ["Standard_NC4as_T4_v3"]},
        {"key": "karpenter.azure.com/sku-gpu-manufacturer", "operator": "In", "values": ["nvidia"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eastus-1", "eastus-2"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    ]
    return pool


def aks_nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.azure.com/v1beta1",
        "kind": "AKSNodeClass",
        "metadata": {"name": "ml-dev-nvidia"},
        "spec": {"imageFamily": "AzureLinux", "osDiskSizeGB": 128, "maxPods": 30, "tags": {"gpupools.io/cluster": "ml-dev"}},
    }


def problems_naming(obj: dict[str, Any], field: str, provider: str | None = None) -> list[str]:
    """The problems found in ``obj``, asserting there is at least one and that one names ``field``."""
    problems = validate_custom_resource(obj, provider)
    assert problems, f"expected {field} to be rejected"
    assert any(field in p for p in problems), problems
    return problems


# --- the pinned files --------------------------------------------------------------------------------


def test_pinned_releases_and_served_versions() -> None:
    assert pinned_release("aws") == "v1.14.1"
    assert pinned_release("azure") == "v1.14.2"
    assert pinned_release("prometheus-operator") == "v0.93.0"
    served = {(c.provider, c.api_version, c.kind) for c in pinned_crds()}
    assert served == {
        ("aws", "karpenter.sh/v1", "NodePool"),
        ("aws", "karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("aws", "karpenter.sh/v1alpha1", "NodeOverlay"),
        ("azure", "karpenter.sh/v1", "NodePool"),
        ("azure", "karpenter.azure.com/v1beta1", "AKSNodeClass"),
        ("azure", "karpenter.azure.com/v1alpha2", "AKSNodeClass"),
        ("prometheus-operator", "monitoring.coreos.com/v1", "ServiceMonitor"),
        ("eks-auto-mode", "eks.amazonaws.com/v1", "NodeClass"),
        *(
            ("kueue", f"kueue.x-k8s.io/{version}", kind)
            for version in ("v1beta1", "v1beta2")
            for kind in ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "AdmissionCheck", "ProvisioningRequestConfig")
        ),
    }
    assert pinned_release("kueue") == "v0.19.2"
    # No release: the CRD catalog's copy, named by its commit in the source block.
    assert pinned_release("eks-auto-mode") == "catalog-2025-02"


def test_every_schema_file_names_its_source() -> None:
    files = sorted(CRD_DIR.glob("*/*.yaml"))
    assert len(files) == 12
    for path in files:
        text = path.read_text()
        source = yaml.safe_load(text)["source"]
        assert set(source) == {"repository", "tag", "commit", "path", "read"}, path
        # Karpenter keeps its CRDs under pkg/apis/crds/; prometheus-operator its bare CRDs under example/;
        # Kueue under config/components/crd/bases/.
        crd_dirs = ("pkg/apis/crds/", "example/prometheus-operator-crd/", "config/components/crd/bases/")
        assert len(source["commit"]) == 40 and source["path"].startswith(crd_dirs), path
        assert text.startswith("#") and source["tag"] in text.splitlines()[1], path
    readme = (CRD_DIR / "README.md").read_text()
    assert "v1.14.1" in readme and "v1.14.2" in readme and "v0.93.0" in readme and "v0.19.2" in readme


def test_both_nodepool_copies_restrict_their_own_label_domain() -> None:
    """The Azure NodePool CRD is not the AWS one: each carries its own provider's label-domain rule."""
    [aws] = [c for c in crds_for("karpenter.sh/v1", "NodePool") if c.provider == "aws"]
    [azure] = [c for c in crds_for("karpenter.sh/v1", "NodePool") if c.provider == "azure"]
    assert any("karpenter.k8s.aws" in r for r in rules_of(aws.schema))
    assert not any("karpenter.azure.com" in r for r in rules_of(aws.schema))
    assert any("karpenter.azure.com" in r for r in rules_of(azure.schema))


def test_only_transition_rules_are_left_out() -> None:
    """Every rule the checker skips reads oldSelf; the NodePool ones are the three documented."""
    skipped = transition_rules()
    assert skipped and all("oldSelf" in rule for _p, _k, rule in skipped)
    nodepool_rules = sorted({rule for _p, kind, rule in skipped if kind.endswith("NodePool")})
    assert nodepool_rules == sorted(
        {"self.group == oldSelf.group", "self.kind == oldSelf.kind", "has(self.replicas) == has(oldSelf.replicas)"}
    )


# --- valid objects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("build", [eks_nodepool, ec2_nodeclass, aks_nodepool, aks_nodeclass])
def test_valid_objects_pass(build: Any) -> None:
    assert_valid_custom_resource(build())


def test_nodepool_is_checked_against_the_provider_its_node_class_names() -> None:
    """An AWS label-domain key is fine in an EKS NodePool but not valid on AKS, and vice versa."""
    eks = eks_nodepool()
    assert validate_custom_resource(eks) == []
    aks = aks_nodepool()
    aks["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Gt", "values": ["0"]}
    )
    assert validate_custom_resource(aks) == []
    aks["spec"]["template"]["spec"]["requirements"].append({"key": "karpenter.azure.com/sku-colour", "operator": "Exists"})
    problems = problems_naming(aks, 'label domain "karpenter.azure.com" is restricted')
    assert any(p.startswith("spec.template.spec.requirements[5].key:") for p in problems), problems
    assert validate_custom_resource(aks, provider="aws") == [], "the AWS CRD does not restrict the Azure domain"


def test_assert_helper_lists_every_problem() -> None:
    pool = eks_nodepool()
    pool["spec"]["weight"] = 1000
    pool["spec"]["template"]["spec"]["colour"] = "blue"
    with pytest.raises(AssertionError) as raised:
        assert_valid_custom_resource(pool)
    assert "spec.weight" in str(raised.value) and "spec.template.spec.colour" in str(raised.value)


# --- known-bad objects -------------------------------------------------------------------------------


def test_unknown_field_is_rejected() -> None:
    pool = eks_nodepool()
    pool["spec"]["disruption"]["consolidateAfterSeconds"] = 600
    [problem] = problems_naming(pool, "spec.disruption.consolidateAfterSeconds")
    assert "unknown field" in problem


def test_unknown_field_in_a_node_class_is_rejected() -> None:
    nodeclass = aks_nodeclass()
    nodeclass["spec"]["osDiskSizeGb"] = 128  # the field is osDiskSizeGB
    problems_naming(nodeclass, "spec.osDiskSizeGb")


def test_wrong_type_is_rejected() -> None:
    pool = eks_nodepool()
    pool["spec"]["weight"] = "50"
    problems = problems_naming(pool, "spec.weight")
    assert any("Invalid type" in p for p in problems)
    nodeclass = aks_nodeclass()
    nodeclass["spec"]["osDiskSizeGB"] = "128"
    problems_naming(nodeclass, "spec.osDiskSizeGB")


@pytest.mark.parametrize("key", ["kubernetes.io/hostname", "karpenter.sh/nodepool"])
def test_restricted_requirement_key_is_rejected(key: str) -> None:
    pool = eks_nodepool()
    pool["spec"]["template"]["spec"]["requirements"].append({"key": key, "operator": "Exists"})
    problems = problems_naming(pool, f'label "{key}" is restricted')
    assert all(p.startswith("spec.template.spec.requirements[4].key:") for p in problems), problems


def test_restricted_template_label_is_rejected() -> None:
    pool = eks_nodepool()
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/nodepool"] = "other"
    problems = problems_naming(pool, 'label "karpenter.sh/nodepool" is restricted')
    assert any(p.startswith("spec.template.metadata.labels:") for p in problems)


def test_unknown_karpenter_domain_label_is_rejected_but_capacity_type_is_allowed() -> None:
    pool = eks_nodepool()
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"
    assert validate_custom_resource(pool) == []
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/team"] = "vision"
    problems_naming(pool, 'label domain "karpenter.sh" is restricted')


def test_missing_node_class_ref_is_rejected() -> None:
    for build in (eks_nodepool, aks_nodepool):
        pool = build()
        del pool["spec"]["template"]["spec"]["nodeClassRef"]
        problems = problems_naming(pool, "spec.template.spec.nodeClassRef: Required value")
        assert any("CEL validation rules were not checked" in p for p in problems), "required is blocking for CEL"


@pytest.mark.parametrize("value", ["10min", "1d", "-5m", "10", ""])
def test_bad_consolidate_after_is_rejected(value: str) -> None:
    pool = eks_nodepool()
    pool["spec"]["disruption"]["consolidateAfter"] = value
    problems_naming(pool, "spec.disruption.consolidateAfter")


@pytest.mark.parametrize("value", ["0s", "30s", "1h30m", "Never"])
def test_good_consolidate_after_passes(value: str) -> None:
    pool = eks_nodepool()
    pool["spec"]["disruption"]["consolidateAfter"] = value
    assert validate_custom_resource(pool) == []


def test_bad_consolidation_policy_is_rejected() -> None:
    pool = eks_nodepool()
    pool["spec"]["disruption"]["consolidationPolicy"] = "WhenUnderutilized"  # the v1beta1 name, gone in v1
    problems = problems_naming(pool, "spec.disruption.consolidationPolicy")
    assert any("Unsupported value" in p for p in problems)


def test_in_requirement_needs_values_and_gt_one_integer() -> None:
    pool = eks_nodepool()
    pool["spec"]["template"]["spec"]["requirements"][0]["values"] = []
    problems_naming(pool, "requirements with operator 'In' must have a value defined")
    pool = eks_nodepool()
    pool["spec"]["template"]["spec"]["requirements"][3]["values"] = ["zero"]
    problems_naming(pool, "spec.template.spec.requirements")


def test_bad_limit_quantity_is_rejected() -> None:
    pool = eks_nodepool()
    pool["spec"]["limits"]["nvidia.com/gpu"] = "ten"
    problems_naming(pool, "spec.limits[nvidia.com/gpu]")


def test_static_pool_limits_only_nodes() -> None:
    """A NodePool with ``replicas`` may limit only ``nodes`` and may not have a weight (CEL on spec)."""
    pool = eks_nodepool()
    pool["spec"]["replicas"] = 2
    problems = validate_custom_resource(pool)
    assert any("spec:" in p and "weight" in p for p in problems), problems
    del pool["spec"]["weight"]
    problems_naming(pool, "limits")
    pool["spec"]["limits"] = {"nodes": 2}
    assert validate_custom_resource(pool) == []


def test_budget_schedule_needs_duration() -> None:
    pool = eks_nodepool()
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "0", "schedule": "0 9 * * mon-fri"}]
    problems_naming(pool, "spec.disruption.budgets")
    pool["spec"]["disruption"]["budgets"][0]["duration"] = "8h"
    assert validate_custom_resource(pool) == []


def test_ec2_nodeclass_rules() -> None:
    nodeclass = ec2_nodeclass()
    nodeclass["spec"]["instanceProfile"] = "ml-dev-profile"
    problems_naming(nodeclass, "must specify exactly one of ['role', 'instanceProfile']")
    nodeclass = ec2_nodeclass()
    nodeclass["spec"]["amiSelectorTerms"] = [{"alias": "ubuntu@latest"}]
    problems_naming(nodeclass, "spec.amiSelectorTerms[0].alias")
    nodeclass = ec2_nodeclass()
    nodeclass["spec"]["tags"]["kubernetes.io/cluster/ml-dev"] = "owned"
    problems_naming(nodeclass, "kubernetes.io/cluster")
    nodeclass = ec2_nodeclass()
    nodeclass["spec"]["metadataOptions"]["httpTokens"] = "optional"
    assert validate_custom_resource(nodeclass) == []  # schema-valid; IMDSv2 is gpupools' policy, not the CRD's
    nodeclass["spec"]["metadataOptions"]["httpPutResponseHopLimit"] = 0
    problems_naming(nodeclass, "spec.metadataOptions.httpPutResponseHopLimit")


def test_aks_nodeclass_rules() -> None:
    nodeclass = aks_nodeclass()
    nodeclass["spec"]["imageFamily"] = "Windows2022"
    problems_naming(nodeclass, "spec.imageFamily")
    nodeclass = aks_nodeclass()
    nodeclass["spec"]["osDiskSizeGB"] = 20
    problems_naming(nodeclass, "spec.osDiskSizeGB")
    nodeclass = aks_nodeclass()
    nodeclass["spec"]["tags"]["bad<key"] = "x"
    problems_naming(nodeclass, "spec.tags")


def test_defaults_are_applied_before_rules() -> None:
    """AKSNodeClass defaults imageFamily to Ubuntu; the FIPS rule then sees it (FIPS on Ubuntu2204 is refused)."""
    nodeclass = aks_nodeclass()
    nodeclass["spec"]["imageFamily"] = "Ubuntu2204"
    nodeclass["spec"]["fipsMode"] = "FIPS"
    problems_naming(nodeclass, "FIPS is not yet supported")


def test_unserved_version_and_unknown_kind() -> None:
    nodeclass = aks_nodeclass()
    nodeclass["apiVersion"] = "karpenter.azure.com/v1"
    problems_naming(nodeclass, "apiVersion/kind")
    pool = eks_nodepool()
    pool["apiVersion"] = "karpenter.sh/v1beta1"
    problems_naming(pool, "apiVersion/kind")


def test_metadata_rules() -> None:
    pool = eks_nodepool()
    pool["metadata"]["name"] = "ML_dev"
    problems_naming(pool, "metadata.name")
    pool = eks_nodepool()
    pool["metadata"]["namespace"] = "kube-system"
    problems_naming(pool, "metadata.namespace")
    pool = eks_nodepool()
    pool["metadata"]["labels"]["bad key!"] = "x"
    problems_naming(pool, "metadata.labels[bad key!]")


def test_duplicates_in_set_and_map_lists_are_rejected() -> None:
    """``x-kubernetes-list-type: set`` (a budget's ``reasons``) and ``map`` (AKSNodeClass
    ``localDNS`` overrides, keyed by ``zone``) refuse duplicates, as the API server does."""
    pool = eks_nodepool()
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "1", "reasons": ["Empty", "Drifted", "Empty"]}]
    problems_naming(pool, "spec.disruption.budgets[0].reasons[2]: Duplicate value")
    nodeclass = aks_nodeclass()
    common = {
        "queryLogging": "Error",
        "protocol": "PreferUDP",
        "forwardPolicy": "Sequential",
        "maxConcurrent": 1000,
        "cacheDuration": "1h",
        "serveStaleDuration": "1h",
        "serveStale": "Immediate",
    }
    override = {"zone": "cluster.local", "forwardDestination": "ClusterCoreDNS", **common}
    root = {"zone": ".", "forwardDestination": "VnetDNS", **common}
    nodeclass["spec"]["localDNS"] = {
        "mode": "Preferred",
        "kubeDNSOverrides": [copy.deepcopy(root), copy.deepcopy(override)],
        "vnetDNSOverrides": [copy.deepcopy(root), copy.deepcopy(override)],
    }
    assert validate_custom_resource(nodeclass) == []
    nodeclass["spec"]["localDNS"]["vnetDNSOverrides"].append(copy.deepcopy(override))
    problems_naming(nodeclass, "spec.localDNS.vnetDNSOverrides[2]: Duplicate value")
    nodeclass["spec"]["localDNS"]["vnetDNSOverrides"] = [{**root, "forwardDestination": "ClusterCoreDNS"}, override]
    problems_naming(nodeclass, "root zone '.' cannot be forwarded to ClusterCoreDNS")


def test_every_pinned_rule_compiles() -> None:
    """celpy parses every CEL rule of every pinned CRD (after the trailing-comma normalisation), so
    no rule is silently skipped; a release bump that brings new syntax fails here first."""
    from tests.crd_schema import _program

    rules = {rule for crd in pinned_crds() for rule in rules_of(crd.schema)}
    assert len(rules) > 60
    for rule in rules:
        _program(rule)

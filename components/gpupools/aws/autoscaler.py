"""``ClusterAutoscaler``: cluster-autoscaler on EKS, from the official chart, with an IRSA role.

* **IAM** (``iam.autoscaler_policy``): describe calls on ``*``; ``SetDesiredCapacity`` and
  ``TerminateInstanceInAutoScalingGroup`` only on Auto Scaling groups tagged
  ``k8s.io/cluster-autoscaler/<cluster>=owned`` (EKS tags every managed node group's ASG so). The
  role trusts only the ``kube-system/cluster-autoscaler`` service account of this cluster's OIDC
  issuer, for audience ``sts.amazonaws.com``: no node credentials, no long-lived keys.
* **Chart**: ``cluster-autoscaler`` from https://kubernetes.github.io/autoscaler, version pinned in
  ``gpupools.versions``, as a ``helm.v3.Release`` (a custom resource: its values are visible in
  previews and tests). The image tag is pinned per Kubernetes minor
  (``CLUSTER_AUTOSCALER_IMAGE_TAGS``): cluster-autoscaler supports only the minor it was built for.
* **Flags** (the chart renders each ``extraArgs`` entry as ``--<key>=<value>``, with everything from
  the first ``_`` in the key dropped, which is how a flag is repeated):

  - ``--expander=priority,least-waste``: the priority expander (its ConfigMap
    ``cluster-autoscaler-priority-expander`` comes from ``gpupools.kubernetes.PriorityExpander``,
    the single source, so ``expanderPriorities`` is deliberately not set and the chart renders no
    ConfigMap of its own) ranks Spot above on-demand; least-waste breaks ties.
  - ``--balance-similar-node-groups=true`` with ``--balancing-label=gpupools.io/pool`` and
    ``--balancing-label=gpupools.io/capacity-type``: the per-zone groups of one pool and capacity
    type are "similar", so a scale-up spreads over the zones. The built-in AWS comparison cannot
    find them similar: cluster-autoscaler turns each managed group's ASG tags into template labels
    (``cloudprovider/aws/aws_manager.go``, ``extractLabelsFromAsg``), and EKS tags each group's ASG
    with its own ``eks:nodegroup-name``, so every empty group carries a label no other group has
    ("are not similar, labels do not match": kubernetes/autoscaler #6954) and scale-ups pile into
    one zone. A balancing label replaces every other comparison (``config/flags/flags.go``,
    ``balancing-label``: "Setting this flag disables all other comparison logic, and cannot be
    combined with --balancing-ignore-label"; ``main.go`` builds
    ``nodegroupset.CreateLabelNodeInfoComparator`` instead of the AWS comparator; checked at the
    cluster-autoscaler-1.33.6 to 1.36.1 tags). Both labels are on every group and its
    scale-from-zero tags, and Spot and on-demand groups differ in ``capacity-type``, so they are
    never balanced against each other; the pool's shape rule (one vCPU/memory/GPU shape per pool)
    is what makes groups of one pool interchangeable, which the label comparison no longer checks.
    Side effect, from the same branch of ``main.go``: the AWS template provider that copies ASG
    ``node-template/resources`` tags onto groups that already have nodes
    (``AsgTagResourceNodeInfoProvider``) is not installed; a group with nodes is modelled on its
    live nodes, which advertise their GPUs themselves, and scale-from-zero templates still read
    the tags (``aws_manager.go``, ``buildNodeFromTemplate``).
  - ``--skip-nodes-with-system-pods=false``: kube-system pods (CoreDNS, metrics) do not pin a GPU
    node forever; they are evicted like any other pod (PDBs still apply).
  - ``--max-node-provision-time`` and ``--scale-down-unneeded-time`` from ``AutoscalerSpec``.
  - tag auto-discovery of this cluster's groups (chart value ``autoDiscovery.clusterName``:
    ``--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/<cluster>``).

* **ProvisioningRequests** (``provisioning_requests=True``, set by the stack when
  ``gpupools:queueing`` wires Kueue's all-or-nothing scale-up): the steps of cluster-autoscaler's
  ``FAQ.md``, "Enabling ProvisioningRequest Support" (cluster-autoscaler-1.35.2 tag): version 1.30.1
  or later (every pinned tag is), ``--enable-provisioning-requests=true``,
  ``--kube-api-content-type=application/json``, RBAC for ``provisioningrequests`` and
  ``provisioningrequests/status`` (the pinned chart's ``templates/clusterrole.yaml`` grants both,
  and ``podtemplates``, unconditionally), and the ProvisioningRequest CRD, which the chart does not
  install: ``cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml`` at the
  tag of the pinned image, vendored in the package (``gpupools.kubernetes.crds``: no download at
  preview or ``up``) and registered as one ``CustomResourceDefinition``, created before the release so the
  autoscaler finds the API when it starts. The AWS provider has no atomic scale-up
  (``AtomicIncreaseSize`` returns ``ErrNotImplemented``, ``cloudprovider/aws/aws_cloud_provider.go``),
  so ``best-effort-atomic-scale-up`` requests are served by an ordinary scale-up there
  (``core/scaleup/orchestrator/executor.go``, ``increaseSize``): all of a job's nodes are asked for
  at once, but an ASG may deliver part of them.
* **Placement**: ``priorityClassName: system-cluster-critical``, ``nodeSelector``
  ``gpupools.io/role=system`` (never on a Spot GPU node that it may itself remove), requests of
  100m CPU and 600Mi memory with a 600Mi memory limit (the resources of cluster-autoscaler's own
  AWS example manifest). The container security context is the chart's default.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpupools import rules
from gpupools.aws.iam import AUTOSCALER_SERVICE_ACCOUNT, autoscaler_policy, create_irsa_role, irsa_service_account_values
from gpupools.aws.node_group import check_cluster_name, depends_on_of
from gpupools.conventions import CAPACITY_TYPE_LABEL, POOL_LABEL, ROLE_LABEL, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.crds import CAPACITY_BUFFER_CRDS, capacity_buffer_crd, provisioning_request_crd
from gpupools.specs import AutoscalerSpec
from gpupools.versions import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_CHART_REPO,
    CLUSTER_AUTOSCALER_CHART_VERSION,
    CLUSTER_AUTOSCALER_IMAGE_TAGS,
)

TYPE = "gpupools:index:ClusterAutoscaler"

AWS_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d\Z")
"""An AWS region name (``us-west-2``); the zone rule in ``gpupools.rules`` without the letter."""

RELEASE_NAME = "cluster-autoscaler"
"""The Helm release name, also the Deployment's name (``fullnameOverride``)."""

EXPANDER = "priority,least-waste"

BALANCING_LABELS = (POOL_LABEL, CAPACITY_TYPE_LABEL)
"""``--balancing-label`` values: groups are similar exactly when both labels match (module docstring)."""

RESOURCES = {"requests": {"cpu": "100m", "memory": "600Mi"}, "limits": {"memory": "600Mi"}}
"""From cluster-autoscaler's AWS example manifest (``cluster-autoscaler-autodiscover.yaml``), without
the CPU limit: throttling the autoscaler only slows scale-ups."""

PRIORITY_CLASS = "system-cluster-critical"

PROVISIONING_REQUEST_CRD_NAME = "provisioningrequests.autoscaling.x-k8s.io"
"""The ProvisioningRequest CRD's name. Its manifest is vendored in the package at the release tag of
the autoscaler image (``gpupools.kubernetes.crds``), not fetched at preview time."""

LEGACY_CRD_CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
"""Before the CRD was vendored (0.2.x) it was the child of a ``yaml.v2.ConfigFile`` named
``<autoscaler>-provisioningrequest-crd``, and pulumi-kubernetes named that child
``<ConfigFile name>:<metadata.name>`` (``legacy_crd_name``)."""


def legacy_crd_name(config_file: str) -> str:
    """The name pulumi-kubernetes gave a ``yaml/v2:ConfigFile``'s CRD child: ``<prefix>:<metadata.name>``.

    pulumi/pulumi-kubernetes ``provider/pkg/provider/yaml/v2/yaml.go`` (``register``, v4.32.0 and
    HEAD 94977969d): ``resourceName = fmt.Sprintf("%s:%s", opts.ResourcePrefix, resourceName)`` (``:``
    since PR #2900, 2024-03; a cluster-scoped object has no namespace part), and
    ``configfile.go``: the resource prefix defaults to the ConfigFile's own name; the child's parent is
    the ConfigFile (``pulumi.Parent(comp)``). The alias (that name, under that parent) adopts the
    object, so upgrading a stack from 0.2.x neither deletes the CRD (and every ProvisioningRequest
    with it) nor fails creating it a second time (``AlreadyExists``: a create without
    ``upsertExistingObjects`` is a plain create).

    >>> legacy_crd_name("cluster-autoscaler-provisioningrequest-crd")
    'cluster-autoscaler-provisioningrequest-crd:provisioningrequests.autoscaling.x-k8s.io'
    """
    return f"{config_file}:{PROVISIONING_REQUEST_CRD_NAME}"


def create_provisioning_request_crd(
    name: str, image_tag: str, parent: pulumi.Resource
) -> k8s.apiextensions.v1.CustomResourceDefinition:
    """The ProvisioningRequest CRD of ``image_tag`` from the vendored file
    (``gpupools.kubernetes.crds.provisioning_request_crd``), as one visible resource."""
    manifest = provisioning_request_crd(image_tag)
    legacy = f"{name}-provisioningrequest-crd"
    legacy_parent = pulumi.create_urn(legacy, LEGACY_CRD_CONFIG_FILE, parent=parent)
    return k8s.apiextensions.v1.CustomResourceDefinition(
        PROVISIONING_REQUEST_CRD_NAME,
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions(
            parent=parent,
            aliases=[pulumi.Alias(name=legacy_crd_name(legacy), parent=legacy_parent)],
        ),
    )


CAPACITY_BUFFER_CRD_NAME = "capacitybuffers.autoscaling.x-k8s.io"


def capacity_buffer_args(image_tag: str) -> dict[str, Any]:
    """The flags that serve warm pools' CapacityBuffers (``gpupools.warm``) on ``image_tag``.

    * ``--capacity-buffer-controller-enabled`` and ``--capacity-buffer-pod-injection-enabled``: both
      off by default (``config/flags/flags.go`` at cluster-autoscaler-1.35.2 and 1.36.1).
    * ``--kube-api-content-type=application/json``: at 1.35.2 the buffer client takes the caller's
      content type (``capacitybuffer/client/client.go``, ``NewCapacityBufferClientFromConfig``), and
      a CRD is not served as protobuf; 1.36.1 forces JSON for its buffer client itself, so the flag
      changes nothing there (the ProvisioningRequest path sets the same).
    * 1.36.1 only: ``--capacity-buffer-pod-dry-run-enabled=false``. Its default, a server dry run
      of each buffer's pod, "requires create permission on pods" (``flags.go``), which the chart does
      not grant; the defaulting resolver needs none. 1.35.2 has no such flag (an unknown flag would
      stop the autoscaler at start).
    """
    args: dict[str, Any] = {
        "capacity-buffer-controller-enabled": True,
        "capacity-buffer-pod-injection-enabled": True,
        "kube-api-content-type": "application/json",
    }
    if image_tag != "v1.35.2":
        args["capacity-buffer-pod-dry-run-enabled"] = False
    return args


CAPACITY_BUFFER_RBAC = [{"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["get", "list", "watch"]}]
"""``rbac.additionalRules`` with CapacityBuffers: the buffer client starts a ResourceQuota informer
and waits for its cache before the autoscaler goes on (``capacitybuffer/client/client.go``,
``NewCapacityBufferClientFromConfig``: ``factory.WaitForCacheSync``, at cluster-autoscaler-1.36.1;
1.35.2's controller registers the same informer, ``capacitybuffer/controller/controller.go``). The
chart (9.59.0, ``templates/clusterrole.yaml``) grants no ``resourcequotas``, so without this rule the
autoscaler logs "cannot list resource resourcequotas" and never reaches its first loop (seen in the
sim: ``tests/sim/test_warm.py``). Read-only, cluster-wide, as the informer lists."""


def create_capacity_buffer_crd(image_tag: str, opts: pulumi.ResourceOptions) -> k8s.apiextensions.v1.CustomResourceDefinition:
    """The CapacityBuffer CRD of ``image_tag`` from the vendored file (``gpupools.kubernetes.crds``):
    a child of the ``ClusterAutoscaler`` in a stack, on the sim's provider in its engine program."""
    manifest = capacity_buffer_crd(image_tag)
    return k8s.apiextensions.v1.CustomResourceDefinition(
        CAPACITY_BUFFER_CRD_NAME, metadata=manifest["metadata"], spec=manifest["spec"], opts=opts
    )


def extra_args(
    autoscaler: AutoscalerSpec, provisioning_requests: bool = False, capacity_buffers: str | None = None
) -> dict[str, Any]:
    """The chart's ``extraArgs`` (merged by Helm over the chart's defaults: logtostderr, v=4, ...)."""
    args: dict[str, Any] = {
        "expander": EXPANDER,
        "balance-similar-node-groups": True,
        "skip-nodes-with-system-pods": False,
        "max-node-provision-time": autoscaler.max_node_provision_time,
        "scale-down-unneeded-time": autoscaler.scale_down_unneeded_time,
    }
    for index, label in enumerate(BALANCING_LABELS, start=1):
        args[f"balancing-label_{index}"] = label
    if provisioning_requests:
        args["enable-provisioning-requests"] = True
        args["kube-api-content-type"] = "application/json"
    if capacity_buffers:
        args.update(capacity_buffer_args(capacity_buffers))
    return args


def rendered_flags(values: Mapping[str, Any]) -> list[str]:
    """The ``extraArgs`` flags as the pinned chart's ``templates/deployment.yaml`` renders them:
    keys in sorted order (Go template ``range`` over a map), the key cut at its first ``_``,
    ``--<key>=<value>``, or ``--<key>`` for a null value; booleans as ``true``/``false``."""
    flags = []
    for key in sorted(values.get("extraArgs", {})):
        value = values["extraArgs"][key]
        flag = key.split("_", 1)[0]
        if value is None:
            flags.append(f"--{flag}")
        else:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{flag}={text}")
    return flags


def helm_values(
    cluster_name: str,
    region: str,
    image_tag: str,
    role_arn: pulumi.Input[str],
    autoscaler: AutoscalerSpec,
    provisioning_requests: bool = False,
    capacity_buffers: bool = False,
) -> dict[str, Any]:
    """The chart values (see the module docstring for each choice); ``capacity_buffers`` adds
    ``capacity_buffer_args`` of ``image_tag``."""
    service_account_annotations, pod_annotations = irsa_service_account_values(role_arn)
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "fullnameOverride": RELEASE_NAME,
        "image": {"tag": image_tag},
        "rbac": {
            **({"additionalRules": CAPACITY_BUFFER_RBAC} if capacity_buffers else {}),
            "create": True,
            "serviceAccount": {
                "create": True,
                "name": AUTOSCALER_SERVICE_ACCOUNT,
                "annotations": service_account_annotations,
            },
        },
        # The role in the pod template as well, so a new role rolls the pod (gpupools.aws.iam.irsa_service_account_values).
        "podAnnotations": pod_annotations,
        "extraArgs": extra_args(autoscaler, provisioning_requests, image_tag if capacity_buffers else None),
        "priorityClassName": PRIORITY_CLASS,
        "nodeSelector": {ROLE_LABEL: Role.SYSTEM.value},
        "resources": RESOURCES,
    }


class ClusterAutoscaler(pulumi.ComponentResource):
    """cluster-autoscaler for one EKS cluster: its IRSA role and the official Helm chart.

    Give the cluster's Kubernetes provider through ``opts`` (the IAM role uses the AWS provider)::

        ClusterAutoscaler("cluster-autoscaler", cluster_name="ml-dev", region="us-west-2",
                          kubernetes_version="1.35", oidc_provider_arn=cluster.oidc_provider_arn,
                          oidc_provider_url=cluster.oidc_provider_url,
                          opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster]))

    Args:
        name: the component's name; prefixes the IAM role's resource names.
        cluster_name: the EKS cluster name (auto-discovery tag and the IAM condition).
        region: the cluster's region (``awsRegion``; pods cannot read it from IMDS with hop limit 1).
        kubernetes_version: the cluster's minor; selects the image tag.
        oidc_provider_arn: the ARN of the cluster's IAM OIDC provider (IRSA trust).
        oidc_provider_url: the URL of the same OIDC provider.
        autoscaler: timing flags; default ``AutoscalerSpec()`` (10m provision time, 10m unneeded).
        namespace: where it runs; default ``kube-system``, the namespace the priority expander's
            ConfigMap must share.
        provisioning_requests: serve ProvisioningRequests (Kueue's all-or-nothing scale-up): the
            flags and the CRD (module docstring); default off.
        opts: resource options: ``provider`` the cluster's Kubernetes provider; ``depends_on`` is
            passed to the release (it needs the system node group to schedule on).
        permissions_boundary: the IRSA role's permissions boundary (``gpupools:cluster.permissionsBoundary``);
            default none.
        capacity_buffers: serve CapacityBuffers (``gpuPools[].warm``, ``gpupools.warm``): the flags
            ``capacity_buffer_args`` and the vendored CRD before the release; default off. Only for
            images in ``gpupools.kubernetes.crds.CAPACITY_BUFFER_CRDS``.

    Attributes:
        role: the IRSA role, ``<cluster>-<name>-role-<suffix>`` (the cluster's name first, so the
            deployer policy can limit role writes to this cluster's roles). policy: the policy document (a dict). values: the Helm values.
        image_tag: the image tag. release: the ``helm.v3.Release``.
        provisioning_request_crd: the ProvisioningRequest ``CustomResourceDefinition`` with ``provisioning_requests``, else None.

    Raises:
        ConfigError: naming the argument, before anything is registered.
    """

    role: aws.iam.Role
    policy: dict[str, Any]
    values: dict[str, Any]
    image_tag: str
    release: k8s.helm.v3.Release
    provisioning_request_crd: k8s.apiextensions.v1.CustomResourceDefinition | None
    capacity_buffer_crd: k8s.apiextensions.v1.CustomResourceDefinition | None

    def __init__(
        self,
        name: str,
        cluster_name: str,
        region: str,
        kubernetes_version: str,
        oidc_provider_arn: pulumi.Input[str],
        oidc_provider_url: pulumi.Input[str],
        autoscaler: AutoscalerSpec | None = None,
        namespace: str = "kube-system",
        opts: pulumi.ResourceOptions | None = None,
        provisioning_requests: bool = False,
        permissions_boundary: str | None = None,
        capacity_buffers: bool = False,
    ) -> None:
        path = f"ClusterAutoscaler({name})"
        spec = autoscaler or AutoscalerSpec()
        check_cluster_name(cluster_name, f"{path}.cluster_name")
        if kubernetes_version not in CLUSTER_AUTOSCALER_IMAGE_TAGS:
            raise ConfigError(
                f"{path}.kubernetes_version",
                "must be a minor with a pinned cluster-autoscaler image (" + ", ".join(CLUSTER_AUTOSCALER_IMAGE_TAGS) + ")",
                kubernetes_version,
            )
        if not isinstance(region, str) or not AWS_REGION.match(region):
            raise ConfigError(f"{path}.region", "must be the cluster's AWS region, like us-west-2", region)
        rules.check_autoscaler(spec, f"{path}.autoscaler")
        if not rules.DNS_SUBDOMAIN.match(namespace) or len(namespace) > 63:
            raise ConfigError(f"{path}.namespace", "must be a Kubernetes namespace name", namespace)

        super().__init__(TYPE, name, None, opts)
        self.image_tag = CLUSTER_AUTOSCALER_IMAGE_TAGS[kubernetes_version]
        self.policy = autoscaler_policy(cluster_name)
        self.role = create_irsa_role(
            f"{cluster_name}-{name}",
            oidc_provider_arn,
            oidc_provider_url,
            namespace,
            AUTOSCALER_SERVICE_ACCOUNT,
            self.policy,
            parent=self,
            permissions_boundary=permissions_boundary,
        )
        if capacity_buffers and self.image_tag not in CAPACITY_BUFFER_CRDS:
            raise ConfigError(
                f"{path}.capacity_buffers",
                "needs a cluster-autoscaler image with vendored CapacityBuffer support (" + ", ".join(CAPACITY_BUFFER_CRDS) + ")",
                self.image_tag,
            )
        self.values = helm_values(
            cluster_name, region, self.image_tag, self.role.arn, spec, provisioning_requests, capacity_buffers
        )
        self.provisioning_request_crd = (
            create_provisioning_request_crd(name, self.image_tag, parent=self) if provisioning_requests else None
        )
        self.capacity_buffer_crd = (
            create_capacity_buffer_crd(self.image_tag, pulumi.ResourceOptions(parent=self)) if capacity_buffers else None
        )
        crd = [c for c in (self.provisioning_request_crd, self.capacity_buffer_crd) if c is not None]
        self.release = k8s.helm.v3.Release(
            name,
            name=RELEASE_NAME,
            chart=CLUSTER_AUTOSCALER_CHART,
            version=CLUSTER_AUTOSCALER_CHART_VERSION,
            repository_opts={"repo": CLUSTER_AUTOSCALER_CHART_REPO},
            namespace=namespace,
            values=self.values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*depends_on_of(opts), *crd]),
        )
        self.register_outputs(
            {"roleArn": self.role.arn, "imageTag": self.image_tag, "chartVersion": CLUSTER_AUTOSCALER_CHART_VERSION}
        )

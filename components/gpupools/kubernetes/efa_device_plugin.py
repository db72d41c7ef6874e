"""The AWS EFA device plugin DaemonSet, on the EKS GPU pools with ``efa: true`` only.

The EKS-optimized AL2023 accelerated and Bottlerocket AMIs carry the EFA host components but not
the device plugin (EKS user guide, "Manage EFA devices on Amazon EKS": "EKS AL2023 and Bottlerocket
AMIs do not include the EFA device plugin ... you must install the device plugin on the cluster
separately"). The plugin advertises the node's EFA interfaces as the extended resource
``vpc.amazonaws.com/efa``, which training pods request next to ``nvidia.com/gpu``.

Upstream's chart (aws/eks-charts ``stable/aws-efa-k8s-device-plugin``, ``templates/daemonset.yaml``
and ``values.yaml``) is the base: ``system-node-critical``, ``hostNetwork: true``, no service
account token, ``allowPrivilegeEscalation: false`` with every capability dropped, running as root
(``runAsNonRoot: false``), the kubelet's ``/var/lib/kubelet/device-plugins`` and the host's
``/dev/infiniband`` mounted, requests 10m CPU / 20Mi memory. What changes, and why:

* Scheduling: upstream selects by a list of EFA instance types and tolerates only
  ``CriticalAddonsOnly``. Here a required node affinity selects the EFA pools themselves
  (``gpupools.io/role=gpu``, ``gpupools.io/pool`` in the EFA pools, ``vpc.amazonaws.com/efa.present=true``,
  the label the pools carry) and the DaemonSet tolerates every taint of those pools (the GPU taint
  and the pools' own), each exactly, as the NVIDIA plugin does: a plugin that cannot land leaves
  ``vpc.amazonaws.com/efa`` at 0 and multi-node jobs Pending.
* The Neuron tools mount is left out (GPU pools only), seccomp ``RuntimeDefault``, a memory limit,
  its own ServiceAccount without a token, ``app.kubernetes.io/*`` labels.
"""

from __future__ import annotations

from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpupools.conventions import EFA_PRESENT_LABEL, EFA_RESOURCE, POOL_LABEL, ROLE_LABEL, Role
from gpupools.errors import ConfigError
from gpupools.kubernetes.access_gate import DAEMON_SET, SERVICE_ACCOUNT
from gpupools.kubernetes.hardening import locked_down_security_context
from gpupools.kubernetes.scan_skips import skip_annotations
from gpupools.pools import NodePoolInfo
from gpupools.rules import IMAGE_TAG
from gpupools.scheduling import required_node_affinity, requirement, tolerations
from gpupools.versions import DEFAULT_EFA_DEVICE_PLUGIN_VERSION, EFA_DEVICE_PLUGIN_IMAGE

TYPE = "gpupools:index:EfaDevicePlugin"

KINDS = (SERVICE_ACCOUNT, DAEMON_SET)
"""What it creates (``KubernetesAccessGate`` checks them)."""

NAMESPACE = "kube-system"
NAME = "aws-efa-k8s-device-plugin"
"""``metadata.name`` of the DaemonSet and its ServiceAccount; upstream's container name too."""

__all__ = ["EFA_RESOURCE", "KINDS", "TYPE", "EfaDevicePlugin"]

DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
INFINIBAND_DIR = "/dev/infiniband/"
"""The EFA devices (``uverbs*``) the plugin discovers and hands to pods (upstream's mount)."""

PRIORITY_CLASS = "system-node-critical"
RESOURCES = {"requests": {"cpu": "10m", "memory": "20Mi"}, "limits": {"memory": "128Mi"}}
"""Upstream's requests, and a memory limit as a guard (upstream sets none); no CPU limit."""

SCAN_SKIPS: dict[str, str] = {
    "CKV_K8S_8": "no endpoint to probe: the plugin serves only the kubelet's device-plugin socket (upstream ships no probes)",
    "CKV_K8S_9": "no endpoint to probe: the plugin serves only the kubelet's device-plugin socket (upstream ships no probes)",
    "CKV_K8S_11": "no CPU limit on purpose: throttling a node-critical agent buys nothing; CPU is requested, memory limited",
    "CKV_K8S_15": "pinned to a release tag; Always would make every EFA node's plugin start depend on the registry",
    "CKV_K8S_19": "host network as upstream's chart runs it: the plugin reads the node's EFA (RDMA) devices",
    "CKV_K8S_22": "upstream sets no read-only root and it is untested here; a plugin that crash-loops hides every EFA device",
    "CKV_K8S_23": "runs as root as upstream's chart does (runAsNonRoot false): it writes its socket in the root-owned kubelet dir",
    "CKV_K8S_40": "runs as root as upstream's chart does (runAsNonRoot false): it writes its socket in the root-owned kubelet dir",
    "CKV_K8S_43": "pinned by release tag in gpupools.versions, the project's image pinning policy",
    "CKV2_K8S_6": "node-local agent with no listener and no API access: a NetworkPolicy guards nothing",
}
"""Checkov findings accepted on the DaemonSet, each with its reason (``gpupools.kubernetes.scan_skips``)."""


def efa_pools(pools: Sequence[NodePoolInfo]) -> tuple[NodePoolInfo, ...]:
    """The GPU pools, in order, whose nodes have EFA interfaces."""
    return tuple(p for p in pools if p.role is Role.GPU and p.efa_interfaces > 0)


def plugin_affinity(pools: Sequence[NodePoolInfo]) -> dict[str, Any]:
    """The required node affinity: GPU role, one of the EFA pools, EFA present."""
    term = [
        requirement(ROLE_LABEL, "In", [Role.GPU.value]),
        requirement(POOL_LABEL, "In", sorted({p.pool for p in pools})),
        requirement(EFA_PRESENT_LABEL, "In", ["true"]),
    ]
    return {"nodeAffinity": required_node_affinity(term)}


def validate(name: str, pools: Sequence[NodePoolInfo], version: str) -> tuple[NodePoolInfo, ...]:
    """Check the arguments; return the EFA pools. Raises ConfigError naming the argument."""
    path = f"EfaDevicePlugin({name})"
    served = efa_pools(pools)
    if not served:
        raise ConfigError(f"{path}.pools", "must include at least one GPU pool with EFA interfaces", [p.name for p in pools])
    if not IMAGE_TAG.match(version):
        raise ConfigError(f"{path}.version", f"must be a release tag of {EFA_DEVICE_PLUGIN_IMAGE}, like v0.5.13", version)
    for index, pool in enumerate(pools):
        if pool not in served:
            continue
        expected = {ROLE_LABEL: Role.GPU.value, POOL_LABEL: pool.pool, EFA_PRESENT_LABEL: "true"}
        for key, value in expected.items():
            if pool.labels.get(key) != value:
                raise ConfigError(
                    f"{path}.pools[{index}].labels.{key}",
                    f"must be {value!r} on an EFA pool, or the plugin never lands there",
                    pool.labels.get(key),
                )
    return served


def plugin_pod_spec(image: str, tolerations_: list[dict[str, str]], affinity: dict[str, Any]) -> dict[str, Any]:
    """The DaemonSet's pod spec."""
    security = locked_down_security_context()
    security["runAsNonRoot"] = False
    return {
        "serviceAccountName": NAME,
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "priorityClassName": PRIORITY_CLASS,
        "hostNetwork": True,
        "tolerations": tolerations_,
        "affinity": affinity,
        "containers": [
            {
                "name": NAME,
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "securityContext": security,
                "resources": RESOURCES,
                "volumeMounts": [
                    {"name": "device-plugin", "mountPath": DEVICE_PLUGIN_DIR},
                    {"name": "infiniband-volume", "mountPath": INFINIBAND_DIR},
                ],
            }
        ],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"}},
            {"name": "infiniband-volume", "hostPath": {"path": INFINIBAND_DIR}},
        ],
    }


class EfaDevicePlugin(pulumi.ComponentResource):
    """The AWS EFA device plugin DaemonSet (and its ServiceAccount) for the EFA pools among ``pools``.

    Pass every pool of the cluster; those with ``efa_interfaces`` > 0 are served::

        EfaDevicePlugin("efa", pools, opts=pulumi.ResourceOptions(provider=k8s_provider))

    Args:
        name: the component's name; also ``app.kubernetes.io/instance``.
        pools: the cluster's pools.
        version: the image tag of ``public.ecr.aws/eks/aws-efa-k8s-device-plugin``; default
            ``DEFAULT_EFA_DEVICE_PLUGIN_VERSION`` (a pin).
        namespace: default ``kube-system``.
        opts: resource options; ``provider`` should be the cluster's.

    Raises:
        ConfigError: no EFA pool, a version that is not a release tag, or an EFA pool without a
            label the affinity selects on; before anything is registered.
    """

    served_pools: tuple[NodePoolInfo, ...]
    tolerations: list[dict[str, str]]
    affinity: dict[str, Any]
    image: str
    service_account: k8s.core.v1.ServiceAccount
    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(
        self,
        name: str,
        pools: Sequence[NodePoolInfo],
        version: str = DEFAULT_EFA_DEVICE_PLUGIN_VERSION,
        namespace: str = NAMESPACE,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        served = validate(name, pools, version)
        super().__init__(TYPE, name, None, opts)
        self.served_pools = served
        self.tolerations = tolerations([taint for pool in served for taint in pool.taints])
        self.affinity = plugin_affinity(served)
        self.image = f"{EFA_DEVICE_PLUGIN_IMAGE}:{version}"
        selector = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": name}
        labels = {**selector, "app.kubernetes.io/version": version, "app.kubernetes.io/managed-by": "pulumi"}
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount",
            metadata={"name": NAME, "namespace": namespace, "labels": labels},
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata={"name": NAME, "namespace": namespace, "labels": labels, "annotations": skip_annotations(SCAN_SKIPS)},
            spec={
                "selector": {"matchLabels": selector},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": plugin_pod_spec(self.image, self.tolerations, self.affinity),
                },
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.service_account], delete_before_replace=True),
        )
        self.register_outputs({"image": self.image, "servedPools": sorted(p.name for p in served)})

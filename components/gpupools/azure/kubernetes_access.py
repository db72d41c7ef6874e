"""What the AKS cluster's ``KubernetesAccessGate`` waits for, from what the AKS stack's components declare.

``AksCluster`` builds the gate before any Kubernetes object exists (every object waits for it, through
the Kubernetes provider), so it cannot read them from the program; instead each component that
creates Kubernetes objects declares its kinds (``KINDS`` beside its ``TYPE``), and this module
names the components the AKS stack composes (``stacks/azure.py``) in each provisioning mode:

- cluster-autoscaler: the NVIDIA device plugin, the DCGM exporter, the priority expander, the smoke test;
- Node Auto Provisioning: the NVIDIA device plugin (unshared: NAP refuses sharing), the DCGM exporter,
  NAP's NodePools and node classes, the smoke test;
- with ``gpupools:queueing`` on, in either mode: the Kueue release's kinds and the queues' kinds
  (``gpupools.queueing.kueue``).

Every kind a component may create is checked, whether or not this stack's config makes it (the
device plugin's ClusterRole exists only with GPU sharing, the smoke-test Job only when enabled): a
check costs one review, and a config change that adds sharing then needs no new wait.
``tests/test_access_gate.py`` runs the example stacks and asserts that every object they register
is covered here, and that every kind here is one they can register.
"""

from __future__ import annotations

from gpupools.azure import nap_nodes
from gpupools.kubernetes import dcgm_exporter, device_plugin, priority_expander, smoke_test
from gpupools.kubernetes.access_gate import KubernetesKind, Permission, ServedResource
from gpupools.queueing import kueue


def stack_kinds(node_auto_provisioning: bool, queueing: bool = False) -> tuple[tuple[KubernetesKind, str], ...]:
    """Every kind the AKS stack may create on the cluster, with the namespace it creates it in (the
    components' defaults, which the stack uses; ignored for cluster-scoped kinds)."""
    # NAP refuses GPU sharing (gpupools.config), so its plugin has no configs and no config-manager role.
    plugin = device_plugin.UNSHARED_KINDS if node_auto_provisioning else device_plugin.KINDS
    kinds = [(kind, device_plugin.NAMESPACE) for kind in plugin]
    kinds += [(kind, dcgm_exporter.NAMESPACE) for kind in dcgm_exporter.KINDS]
    if node_auto_provisioning:
        kinds += [(kind, "") for kind in nap_nodes.KINDS]
    else:
        kinds += [(kind, priority_expander.NAMESPACE) for kind in priority_expander.KINDS]
    kinds += [(kind, smoke_test.NAMESPACE) for kind in smoke_test.KINDS]
    if queueing:
        # LocalQueues go into the namespaces the config names: checked cluster-wide (namespace "").
        kinds += [(kind, kueue.NAMESPACE) for kind in kueue.RELEASE_KINDS]
        kinds += [(kind, "") for kind in kueue.KINDS]
    return tuple(kinds)


def gate_permissions(node_auto_provisioning: bool, queueing: bool = False) -> tuple[Permission, ...]:
    """A ``create`` per kind, in its namespace, or cluster-wide for a cluster-scoped kind."""
    return tuple(sorted({kind.create(namespace) for kind, namespace in stack_kinds(node_auto_provisioning, queueing)}))


def gate_served(node_auto_provisioning: bool, provisioning_requests: bool = False) -> tuple[ServedResource, ...]:
    """The custom resources AKS itself must serve first: with Node Auto Provisioning, NodePool and
    AKSNodeClass, whose CRDs come with ``nodeProvisioningProfile.mode: Auto`` (the AKS NAP docs check
    ``kubectl get crds`` right after enabling it); with ``provisioning_requests`` (Kueue's
    ``atomicScaleUp`` under the managed cluster-autoscaler) ``autoscaling.x-k8s.io/v1``
    ProvisioningRequest, which Kueue sets its controller up for only if it is served when Kueue starts
    (``gpupools.queueing.kueue.PROVISIONING_REQUEST``; AKS's managed autoscaler serves it from
    Kubernetes 1.33, Azure/AKS PR #5867). A cluster that never serves it fails the ``up`` at the gate,
    naming the resource, instead of installing a Kueue whose queues admit nothing."""
    served = {kind.served() for kind in nap_nodes.KINDS} if node_auto_provisioning else set()
    if provisioning_requests:
        served.add(kueue.PROVISIONING_REQUEST.served())
    return tuple(sorted(served))

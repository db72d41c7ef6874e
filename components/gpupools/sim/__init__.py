"""``gpupools sim``: the stack's Kubernetes half on a real local control plane, with simulated nodes
shaped like the stack's pools.

``python -m gpupools.sim up STACK`` starts etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the KWOK controller as processes bound to 127.0.0.1 (``control_plane``), installs
the CRDs the stack's objects need, adds KWOK nodes for the system pool, and applies every Kubernetes
object the stack program registers, server-side with a dry run first (``objects``: the objects come
from running the stack program itself on the recording runtime, as ``gpupools.synth`` does).
``nodes STACK --pool P --count N [--capacity spot|on-demand|reserved]`` adds nodes with exactly the
labels, taints and allocatable resources the cloud gives that pool's nodes (``node_shapes``);
``status STACK [--json]`` counts nodes and pods per pool; ``down STACK`` stops everything.

What is real and what is simulated: the API server (admission, schema and CEL validation, RBAC),
the scheduler, and the controllers of kube-controller-manager (DaemonSet, Job, namespace, garbage
collector, node lifecycle) are the upstream binaries at the pinned version. The kubelets are KWOK's:
a pod bound to a node is marked Running without a container being started, and a node advertises the
resources written on it (the GPU slots the device plugin would advertise) instead of discovering
them. On Karpenter and NAP stacks ``up`` also starts Karpenter with its KWOK provider, which buys
the nodes (``karpenter``), and on queueing stacks Kueue (``kueue``; both through ``controllers``);
``spot STACK --pool P --unavailable|--available`` takes a pool's Spot offerings away (``spot``).
cluster-autoscaler does not run (its Go module is not served): its stacks get nodes from ``nodes``.
``docs/sim.md`` says what that proves.

The binaries are built from the Go modules pinned in the checkout's ``sim/`` directory by
``gpupools.sim.build`` (``scripts/build-sim``) and cached per version outside the checkout.
"""

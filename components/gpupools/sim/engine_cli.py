"""The sim's engine commands: ``deploy``, ``preview``, ``destroy`` (``gpupools.sim.engine``).

``add_commands`` registers them on the sim's command line; ``run`` runs one against the stack's
running sim cluster (``sim up``), with the kubeconfig ``sim up`` wrote, unless ``--kubeconfig`` names
another cluster's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gpupools import _cli

if TYPE_CHECKING:
    from gpupools.sim.kube import Client

COMMANDS = ("deploy", "preview", "destroy")


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``deploy``, ``preview [--diff]``, ``destroy`` as subcommands of ``python -m gpupools.sim``."""
    helps = {
        "deploy": "`pulumi up` of the stack's Kubernetes half through the real engine, against its sim cluster",
        "preview": "`pulumi preview` of the stack's Kubernetes half through the real engine (--diff: property-level diff)",
        "destroy": "`pulumi destroy` of what `deploy` created in the stack's sim cluster",
    }
    for name in COMMANDS:
        command = commands.add_parser(
            name,
            help=helps[name],
            description=helps[name] + ". The engine is the pulumi CLI and the pulumi-kubernetes provider built from the "
            "Go modules pinned in sim/engine and sim/kubernetes (cached); its state is a local file backend in the "
            "sim's state directory. Prints the engine's own output and writes it to <sim state>/<stack>/" + name + ".txt.",
        )
        _cli.add_stack(command)
        command.add_argument(
            "--kubeconfig", type=Path, help="the cluster to deploy to (default: the kubeconfig `sim up STACK` wrote)"
        )
        if name == "preview":
            command.add_argument("--diff", action="store_true", help="show the property-level diff of every change")


def hand_over(stack: str, client: Client) -> None:
    """Delete the objects ``sim up`` applied, before the engine's first ``deploy`` creates them.

    pulumi-kubernetes creates with server-side apply without ``force`` (``patchForce`` is off unless
    the object carries the ``pulumi.com/patchForce`` annotation: pulumi-kubernetes v4.25.0
    ``provider/pkg/await/await.go``, ``Creation``), so a field the sim's field manager set with a
    different spelling (a defaulted ``fieldRef.apiVersion``, say) is an apply conflict and the create
    fails. The sim's copies go first; the engine then creates and owns every object."""
    from gpupools.sim import objects

    applied = [m for m in objects.load(stack).manifests if client.get(m) is not None]
    if applied:
        print(f"deleting the {len(applied)} objects `sim up` applied, so the engine creates and owns them", flush=True)
        objects.delete(client, applied)


def remove_never_ready_nodes(client: Client) -> list[str]:
    """Delete the nodes of unavailable Spot groups (``control_plane.UNAVAILABLE_LABEL``) and the pods
    bound to them; return the nodes' names.

    Such a node stands for an instance that never registers (``gpupools.sim.autoscaler``): in the
    cloud there is no Node, so no DaemonSet pod. In the sim the DaemonSet controller schedules the
    device plugin (which tolerates every taint) onto it, the pod never runs, and an update leaves
    the old pod Terminating for ever (no kubelet confirms it). pulumi-kubernetes waits until every
    scheduled DaemonSet pod is updated and available (``provider/pkg/await/daemonset.go``: kstatus),
    so ``sim deploy`` would time out after 10 minutes (issue 48, 4.). Deleting the Node takes it out
    of every DaemonSet's count at once; its pods are deleted with grace 0, as the pod garbage
    collector does for a node that is gone."""
    from gpupools.sim.control_plane import UNAVAILABLE_LABEL

    nodes = [n["metadata"]["name"] for n in client.list("v1", "Node", label_selector=UNAVAILABLE_LABEL)]
    for name in nodes:
        client.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    for pod in client.list("v1", "Pod"):
        if (pod.get("spec") or {}).get("nodeName") in nodes:
            client.request("DELETE", client.object_path(pod), {"gracePeriodSeconds": 0})
    return nodes


def run(args: argparse.Namespace) -> None:
    """Run ``args.command`` (one of ``COMMANDS``); SimError when no cluster of the stack runs."""
    from gpupools.sim import cluster, control_plane, engine

    cluster.check_stack(args.stack)
    kubeconfig = args.kubeconfig
    state = None
    if kubeconfig is None:
        state = control_plane.running_state(args.stack)
        kubeconfig = Path(state.kubeconfig) if state.kubeconfig else state.path / "kubeconfig"
    if args.command == "deploy":
        if state is not None:
            removed = remove_never_ready_nodes(state.client())
            if removed:
                print(
                    f"removed {len(removed)} never-Ready node(s) of unavailable Spot groups ({', '.join(removed)}): "
                    "in the cloud those instances never registered, and the engine would wait for DaemonSet pods on them",
                    flush=True,
                )
        if state is not None and not engine.has_state(args.stack):
            hand_over(args.stack, state.client())
        outcome = engine.deploy(args.stack, kubeconfig)
    elif args.command == "preview":
        outcome = engine.preview(args.stack, kubeconfig, diff=args.diff)
    else:
        outcome = engine.destroy(args.stack, kubeconfig)
    print(f"the engine's output is also in {outcome.summary_file}")

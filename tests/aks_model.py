"""A model of AKS for replaying ``pulumi up``s: what its GETs answer and which PUTs it accepts.

Answers have the shape of the AKS REST specification's own example responses (``tests/aks_rest``:
``ManagedClustersGet.json`` and ``AgentPoolsGet.json`` of API ``2025-09-01``, the version
pulumi-azure-native 3.29.0 uses), flattened the way azure-native returns them (``properties``
lifted to the top, as its invokes and reads do). The server-set fields of those examples are on every
answer, ``orchestratorVersion`` and ``currentOrchestratorVersion`` on every pool included: AKS fills
``orchestratorVersion`` with the control plane's version when a PUT leaves it out, and reports the
patch it runs as ``currentOrchestratorVersion`` ("If orchestratorVersion is <major.minor>, this field
will contain the full <major.minor.patch> version being used", the API's docstring). Values are the
modelled cluster's: what the PUTs it accepted set, and the counts the autoscaler moved to.

Which PUTs it accepts (the rules a real subscription applies, each with its source):

* managed cluster: ``NotAllAgentPoolOrchestratorVersionSpecifiedAndUnchanged``, "all Agent pools'
  OrchestratorVersion must be all specified or all unspecified. If all specified, they must be stay
  unchanged or the same with control plane" (MicrosoftDocs/azure-aks-docs
  ``articles/aks/auto-upgrade-cluster.md``; Azure/AKS #4765); a pool AKS does not have is "A new agent
  pool was introduced" (pulumi-azure-native #2719); minors move one at a time ("Kubernetes minor
  versions cannot be skipped", the API's ``kubernetesVersion`` docstring);
* managed cluster, ``agentPoolProfiles``: an entry carrying ``securityProfile`` or
  ``artifactStreamingProfile`` is refused, although the REST spec lists them: the live RP "rejects
  those fields there even though the REST spec exposes them"
  (Azure/terraform-azurerm-avm-res-containerservice-managedcluster PR #196; issue #152: ``UnmarshalError
  ... unknown field "sshAccess"``);
* managed cluster, omitted fields: a PUT that leaves ``apiServerAccessProfile`` out keeps the stored
  one, and ``authorizedIPRanges: []`` clears the list, after which the GET reports none
  (kubernetes-sigs/cluster-api-provider-azure ``azure/services/managedclusters/spec.go``: the empty
  array is sent "once so that the Azure API will update the existing authorized IP ranges to nil";
  AKS ``api-server-authorized-ip-ranges.md``: an empty range disables the feature);
* agent pool: its minor at most the control plane's, and at most three behind it ("the control plane
  can be up to three minor versions ahead of node pools", AKS ``supported-kubernetes-versions.md``).

And one change outside Pulumi: ``update_dataplane_to_cilium``, ``az aks update --network-dataplane cilium``
(AKS "Upgrade an existing cluster to Azure CNI Powered by Cilium").
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

EXAMPLES = Path(__file__).parent / "aks_rest"

PATCHES = {"1.33": "1.33.5", "1.34": "1.34.2", "1.35": "1.35.7", "1.36": "1.36.3"}
"""The patch the modelled AKS runs for each minor (``currentOrchestratorVersion``)."""

POOL_READ_ONLY = ("provisioningState", "currentOrchestratorVersion", "eTag", "nodeImageVersion")
"""Read-only pool fields of the examples (not in ``ManagedClusterAgentPoolProfileArgs``): azure-native's
output -> input projection leaves them out."""


CLUSTER_ANSWER_KEYS = (
    "autoUpgradeProfile",
    "apiServerAccessProfile",
    "autoScalerProfile",
    "sku",
    "dnsPrefix",
    "tags",
    "networkProfile",
)
"""Cluster-level settings the modelled GET echoes from the accepted PUTs (ARM: a GET returns what a
PUT set); the others are not read by the program."""


ECHO_REFUSED = ("securityProfile", "artifactStreamingProfile")
"""Pool fields the live RP refuses inside a managed-cluster PUT (module docstring)."""

FORCE_NEW_NETWORK_FIELDS = (
    "serviceCidr",
    "serviceCidrs",
    "dnsServiceIP",
    "networkMode",
    "networkPlugin",
    "networkPluginMode",
    "podCidr",
    "networkDataplane",
    "networkPolicy",
    "outboundType",
)
"""``networkProfile`` fields pulumi-azure-native 3.29.0 replaces a ``ManagedCluster`` for
(pulumi/pulumi-azure-native PR #4771, "only force-replace immutable networkProfile fields"). A change,
an addition or a removal of one is a replacement (``provider/pkg/provider/diff.go``,
``calculateObjectDiff``: ``ADD_REPLACE``/``DELETE_REPLACE``/``UPDATE_REPLACE``)."""


class AksRejectedError(Exception):
    """AKS answered a PUT with 400; the message starts with AKS's error code."""


class ProtectedReplaceError(Exception):
    """The engine refused the update: "unable to replace resource ... as it is currently marked for
    protection" (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``)."""


def replaced_network_fields(old_inputs: Mapping[str, Any], new_inputs: Mapping[str, Any]) -> list[str]:
    """The ``FORCE_NEW_NETWORK_FIELDS`` whose value (or presence) differs between the stored and the
    sent inputs: what makes pulumi-azure-native plan a replacement of the cluster."""
    old = old_inputs.get("networkProfile") or {}
    new = new_inputs.get("networkProfile") or {}
    return [f"networkProfile.{k}" for k in FORCE_NEW_NETWORK_FIELDS if old.get(k) != new.get(k)]


def example_body(name: str) -> dict[str, Any]:
    """The 200 body of one vendored example, ``properties`` flattened as azure-native returns it."""
    document = json.loads((EXAMPLES / f"{name}.json").read_text())
    body = document["responses"]["200"]["body"]
    return {**{k: v for k, v in body.items() if k != "properties"}, **body["properties"]}


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def minor_number(version: str) -> int:
    return int(version.split(".")[1])


@dataclass
class ModelledAks:
    """One AKS cluster: its control plane version, cluster-level settings and pools (writable fields,
    as the accepted PUTs set them), and each pool's live count."""

    kubernetes_version: str
    settings: dict[str, Any]
    pools: dict[str, dict[str, Any]] = field(default_factory=dict)
    accepted: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    # --- PUTs ---------------------------------------------------------------------------------

    def create_cluster(self, body: Mapping[str, Any]) -> None:
        self.kubernetes_version = body["kubernetesVersion"]
        self.settings = {k: copy.deepcopy(v) for k, v in body.items() if k != "agentPoolProfiles"}
        for profile in body["agentPoolProfiles"]:
            self._store(profile["name"], profile)
        self.accepted.append(("ManagedCluster", copy.deepcopy(dict(body))))

    def put_cluster(self, body: Mapping[str, Any]) -> None:
        new_version = body["kubernetesVersion"]
        if minor_number(new_version) - minor_number(self.kubernetes_version) > 1:
            raise AksRejectedError(
                f"UpgradeFailed: minor versions cannot be skipped ({self.kubernetes_version} -> {new_version})"
            )
        profiles = body["agentPoolProfiles"]
        for profile in profiles:
            if profile["name"] not in self.pools:
                raise AksRejectedError(f"A new agent pool was introduced: {profile['name']}")
            refused = [k for k in ECHO_REFUSED if k in profile]
            if refused:
                raise AksRejectedError(f"UnmarshalError: unknown field {refused[0]!r} in agentPoolProfiles ({profile['name']})")
        versions = [p.get("orchestratorVersion") for p in profiles]
        if any(v is None for v in versions) and any(v is not None for v in versions):
            raise AksRejectedError(
                "NotAllAgentPoolOrchestratorVersionSpecifiedAndUnchanged: all Agent pools' OrchestratorVersion must be all "
                f"specified or all unspecified ({dict(zip([p['name'] for p in profiles], versions, strict=True))})"
            )
        for profile in profiles:
            version = profile.get("orchestratorVersion")
            if version is None:
                continue
            unchanged = minor(version) == minor(self.pools[profile["name"]]["orchestratorVersion"])
            if not unchanged and minor(version) != minor(new_version):
                raise AksRejectedError(
                    "NotAllAgentPoolOrchestratorVersionSpecifiedAndUnchanged: if all specified, they must stay unchanged or "
                    f"the same with control plane ({profile['name']}: {version}, control plane {new_version})"
                )
        self.kubernetes_version = new_version
        kept = self.settings.get("apiServerAccessProfile")
        self.settings = {k: copy.deepcopy(v) for k, v in body.items() if k != "agentPoolProfiles"}
        if "apiServerAccessProfile" not in body and kept is not None:
            self.settings["apiServerAccessProfile"] = kept  # AKS keeps what a PUT leaves out
        access = self.settings.get("apiServerAccessProfile")
        if access is not None and access.get("authorizedIPRanges") == []:
            access = {k: v for k, v in access.items() if k != "authorizedIPRanges"}  # cleared: GET reports none
            if access:
                self.settings["apiServerAccessProfile"] = access
            else:
                self.settings.pop("apiServerAccessProfile")
        for profile in profiles:
            stored = {**profile, "orchestratorVersion": profile.get("orchestratorVersion") or new_version}
            self._store(profile["name"], stored, keep_count=True)
        self.accepted.append(("ManagedCluster", copy.deepcopy(dict(body))))

    def update_dataplane_to_cilium(self) -> None:
        """``az aks update --network-dataplane cilium --network-policy cilium``: AKS changes both in place
        (and reimages every node), outside Pulumi."""
        network = dict(self.settings.get("networkProfile") or {})
        self.settings["networkProfile"] = {**network, "networkDataplane": "cilium", "networkPolicy": "cilium"}
        self.accepted.append(("az aks update", {"networkProfile": copy.deepcopy(self.settings["networkProfile"])}))

    def put_agent_pool(self, name: str, body: Mapping[str, Any]) -> None:
        version = body.get("orchestratorVersion") or self.kubernetes_version
        behind = minor_number(self.kubernetes_version) - minor_number(version)
        if behind < 0:
            raise AksRejectedError(f"NodePoolMcVersionIncompatible: {name} {version} is newer than the control plane")
        if behind > 3:
            raise AksRejectedError(f"NodePoolMcVersionIncompatible: {name} {version} is more than 3 minors behind")
        fields = {k: copy.deepcopy(v) for k, v in body.items() if k not in ("resourceGroupName", "resourceName", "agentPoolName")}
        self._store(name, {**fields, "name": name, "orchestratorVersion": version})
        self.accepted.append((name, copy.deepcopy(dict(body))))

    def delete_agent_pool(self, name: str) -> None:
        del self.pools[name]
        self.accepted.append((f"delete {name}", {}))

    def _store(self, name: str, profile: Mapping[str, Any], keep_count: bool = False) -> None:
        previous = self.pools.get(name, {})
        stored = {**copy.deepcopy(dict(profile)), "name": name}
        stored.setdefault("orchestratorVersion", self.kubernetes_version)
        if keep_count and "count" in previous:
            stored["count"] = previous["count"]  # a cluster PUT does not resize an autoscaled pool
        self.pools[name] = stored

    # --- GETs ---------------------------------------------------------------------------------

    def pool_answer(self, name: str) -> dict[str, Any]:
        """``Agent Pools - Get`` (the example's shape and server fields, this pool's values)."""
        server = {
            k: v
            for k, v in example_body("AgentPoolsGet").items()
            if k in ("maxPods", "eTag", "nodeImageVersion", "provisioningState")
        }
        pool = self.pools[name]
        return {
            **server,
            "upgradeSettings": example_body("AgentPoolsGet")["upgradeSettings"],
            **copy.deepcopy(pool),
            "currentOrchestratorVersion": PATCHES[minor(pool["orchestratorVersion"])],
        }

    def cluster_answer(self, cluster_name: str) -> dict[str, Any]:
        """``Managed Clusters - Get``: every pool in ``agentPoolProfiles``, each with the pool fields
        ``Agent Pools - Get`` answers."""
        server = {
            k: v for k, v in example_body("ManagedClustersGet").items() if k in ("provisioningState", "maxAgentPools", "fqdn")
        }
        settings = {k: copy.deepcopy(v) for k, v in self.settings.items() if k in CLUSTER_ANSWER_KEYS}
        return {
            **server,
            **settings,
            "name": cluster_name,
            "kubernetesVersion": self.kubernetes_version,
            "currentKubernetesVersion": PATCHES[minor(self.kubernetes_version)],
            "agentPoolProfiles": [self.pool_answer(name) for name in self.pools],
        }


def projection(answer: Mapping[str, Any]) -> dict[str, Any]:
    """azure-native's input-shaped projection of a pool answer (read-only fields left out)."""
    return {k: copy.deepcopy(v) for k, v in answer.items() if k not in POOL_READ_ONLY}

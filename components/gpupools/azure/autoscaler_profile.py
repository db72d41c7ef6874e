"""The AKS cluster-autoscaler profile, written in the exact forms AKS echoes back.

AKS answers every GET of a managed cluster with a fully filled ``autoScalerProfile`` whose values
are strings in one canonical spelling (``"10s"``, ``"10m"``, ``"0.5"``, ``"true"``; three fields are
booleans). pulumi-azure-native's refresh copies server-side values into the stack's inputs, so a
profile written in any other spelling, or with fields left out, shows a diff after every refresh.
This module writes the whole profile: the tuning gpupools cares about, and AKS's documented
defaults for everything else, each in the form AKS returns.

Pure: no Pulumi resources. The result is the ``auto_scaler_profile`` argument of
``containerservice.ManagedCluster`` (snake_case keys, as the Python SDK's ``...ArgsDict`` takes them).
"""

from __future__ import annotations

from typing import Union

from pulumi_azure_native import containerservice

from gpupools.specs import AutoscalerSpec

ProfileValue = Union[str, bool]

AKS_DEFAULTS: dict[str, ProfileValue] = {
    "balance_similar_node_groups": "false",
    "daemonset_eviction_for_empty_nodes": False,
    "daemonset_eviction_for_occupied_nodes": True,
    "ignore_daemonsets_utilization": False,
    "max_empty_bulk_delete": "10",
    "max_graceful_termination_sec": "600",
    "max_total_unready_percentage": "45",
    "new_pod_scale_up_delay": "0s",
    "ok_total_unready_count": "3",
    "scale_down_delay_after_add": "10m",
    "scale_down_delay_after_delete": "10s",
    "scale_down_delay_after_failure": "3m",
    "scale_down_unready_time": "20m",
    "scale_down_utilization_threshold": "0.5",
    "scan_interval": "10s",
    "skip_nodes_with_local_storage": "false",
    "skip_nodes_with_system_pods": "true",
}
"""AKS's defaults (the table in the AKS cluster-autoscaler docs, and the values GET returns),
in canonical form. ``scale_down_delay_after_delete`` defaults to the scan interval, which AKS
echoes as ``"10s"``. ``skip_nodes_with_local_storage`` is ``"false"`` on AKS (the API docstring
says true; the AKS docs and live responses say false)."""

EXPANDER = containerservice.Expander.PRIORITY.value
"""``priority``: the autoscaler picks node groups by the ``cluster-autoscaler-priority-expander``
ConfigMap, which ranks Spot pools above their on-demand fallbacks. AKS's default is ``random``,
which would buy on-demand GPUs as often as Spot ones."""


def autoscaler_profile(spec: AutoscalerSpec) -> dict[str, ProfileValue]:
    """The complete ``auto_scaler_profile`` for ``spec``: priority expander, the tuning, AKS defaults.

    ``max_node_provision_time`` bounds how long the autoscaler waits for a Spot node before it
    backs the group off and the next priority (on-demand) gets its turn; ``scale_down_unneeded_time``
    is how long an idle GPU node lives. Both come from ``spec`` already validated as whole minutes
    (``"10m"``), the form AKS echoes back.
    """
    profile: dict[str, ProfileValue] = dict(AKS_DEFAULTS)
    profile["expander"] = EXPANDER
    profile["max_node_provision_time"] = spec.max_node_provision_time
    profile["scale_down_unneeded_time"] = spec.scale_down_unneeded_time
    return dict(sorted(profile.items()))

"""``NodeImageMaintenance``: the AKS maintenance windows of a cluster, from ``gpupools:maintenance``.

Two ``MaintenanceConfiguration``s, both weekly in the same window:

* ``aksManagedNodeOSUpgradeSchedule``: when node images change. Under cluster-autoscaler the
  cluster's node-OS channel is ``NodeImage`` (``gpupools.azure.cluster.NODE_OS_UPGRADE_CHANNEL``;
  AKS's default for new clusters), whose weekly reimage "is disruptive, following maintenance
  windows and surge settings", and "The default cadence means there's no planned maintenance window
  applied" (MicrosoftDocs/azure-aks-docs ``articles/aks/auto-upgrade-node-os-image.md``): without
  this configuration GPU nodes are drained and reimaged at any hour, and the running upgrade makes
  a concurrent ``pulumi up`` fail with ``OperationNotAllowed``.
* ``aksManagedAutoUpgradeSchedule``: when the ``patch`` channel (``gpupools.azure.cluster.UPGRADE_CHANNEL``)
  moves the control plane and the pools to a new patch of the configured minor ("the
  ``aksManagedAutoUpgradeSchedule`` configuration ... controls when cluster upgrades scheduled by
  your designated auto-upgrade channel are performed", ``planned-maintenance.md``).

Under NAP, "NAP node pool virtual machines (VMs) are automatically updated when a new image version
is available", and "If no maintenance configuration exists, AKS might use a fallback schedule to pick
up new images, which can cause images to be picked up at unexpected times. You can avoid unexpected
timing of new images and upgrades by defining an explicit ``aksManagedNodeOSUpgradeSchedule``"
(MicrosoftDocs/azure-aks-docs ``articles/aks/node-auto-provisioning-upgrade-image.md``). This
registers that configuration from ``gpupools:maintenance``: a weekly schedule (``intervalWeeks: 1``
on ``day``; the page's "Recommended schedule pattern" is weekly), ``startTime`` and ``utcOffset`` as
given, ``durationHours`` 4-24 (the range pulumi-azure-native's ``MaintenanceWindowArgs`` documents).
The NodePools carry the same window as ``Drifted`` budgets (``gpupools.maintenance``), because the
configuration decides when NAP picks up an image, not when nodes are disrupted.

What it cannot prevent, from the same pages: "NAP forces the latest image version to be picked up if
the existing node image version is older than 90 days. This bypasses any existing maintenance
window", and "AKS reserves the right to break planned maintenance windows for unplanned, reactive
maintenance operations that are urgent or critical" (``planned-maintenance.md``). A new or changed
configuration needs "at least 30 minutes" before its next start to be reconciled.
"""

from __future__ import annotations

import pulumi
from pulumi_azure_native import containerservice

from gpupools import rules
from gpupools.specs import MaintenanceSpec

TYPE = "gpupools:index:NodeImageMaintenance"

CONFIG_NAME = "aksManagedNodeOSUpgradeSchedule"
"""The maintenance configuration name AKS reads for node OS (and NAP node image) upgrades; the other
two are ``default`` and ``aksManagedAutoUpgradeSchedule`` (``planned-maintenance.md``)."""

AUTO_UPGRADE_CONFIG_NAME = "aksManagedAutoUpgradeSchedule"
"""The maintenance configuration name AKS reads for the auto-upgrade channel's cluster upgrades."""

INTERVAL_WEEKS = 1


def maintenance_window(spec: MaintenanceSpec) -> containerservice.MaintenanceWindowArgs:
    """The ``maintenanceWindow`` of the configuration: weekly on ``spec.day``. No ``startDate``: "If not
    specified, the maintenance window will be active right away" (the API's docstring)."""
    return containerservice.MaintenanceWindowArgs(
        schedule=containerservice.ScheduleArgs(
            weekly=containerservice.WeeklyScheduleArgs(day_of_week=spec.day.value, interval_weeks=INTERVAL_WEEKS)
        ),
        duration_hours=spec.duration_hours,
        start_time=spec.start_time,
        utc_offset=spec.utc_offset,
    )


class NodeImageMaintenance(pulumi.ComponentResource):
    """The cluster's ``aksManagedNodeOSUpgradeSchedule`` (module docstring).

    Args:
        name: the component's name.
        resource_group_name: the cluster's resource group.
        cluster_name: the managed cluster's name (its output, so the configuration waits for the cluster).
        maintenance: ``gpupools:maintenance``; default ``MaintenanceSpec()`` (Sunday 02:00 UTC, 4 hours).
        auto_upgrade: also register ``aksManagedAutoUpgradeSchedule`` in the same window; default
            True (``AksCluster`` sets the ``patch`` channel).
        opts: resource options.

    Attributes:
        configuration: the ``aksManagedNodeOSUpgradeSchedule`` configuration.
        auto_upgrade_configuration: the ``aksManagedAutoUpgradeSchedule`` one, or None.
    """

    configuration: containerservice.MaintenanceConfiguration
    auto_upgrade_configuration: containerservice.MaintenanceConfiguration | None

    def __init__(
        self,
        name: str,
        resource_group_name: pulumi.Input[str],
        cluster_name: pulumi.Input[str],
        maintenance: MaintenanceSpec | None = None,
        opts: pulumi.ResourceOptions | None = None,
        auto_upgrade: bool = True,
    ) -> None:
        spec = maintenance if maintenance is not None else MaintenanceSpec()
        rules.check_maintenance(spec, f"NodeImageMaintenance({name}).maintenance")
        super().__init__(TYPE, name, None, opts)
        self.configuration = containerservice.MaintenanceConfiguration(
            f"{name}-node-os",
            resource_group_name=resource_group_name,
            resource_name_=cluster_name,
            config_name=CONFIG_NAME,
            maintenance_window=maintenance_window(spec),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.auto_upgrade_configuration = (
            containerservice.MaintenanceConfiguration(
                f"{name}-auto-upgrade",
                resource_group_name=resource_group_name,
                resource_name_=cluster_name,
                config_name=AUTO_UPGRADE_CONFIG_NAME,
                maintenance_window=maintenance_window(spec),
                # After the node-OS one: AKS runs one operation on a cluster at a time.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.configuration]),
            )
            if auto_upgrade
            else None
        )
        self.register_outputs({"configName": CONFIG_NAME})

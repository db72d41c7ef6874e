"""``NodeImageMaintenance``: the AKS ``aksManagedNodeOSUpgradeSchedule`` of a Node Auto Provisioning cluster.

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
        opts: resource options.

    Attributes:
        configuration: the ``MaintenanceConfiguration``.
    """

    configuration: containerservice.MaintenanceConfiguration

    def __init__(
        self,
        name: str,
        resource_group_name: pulumi.Input[str],
        cluster_name: pulumi.Input[str],
        maintenance: MaintenanceSpec | None = None,
        opts: pulumi.ResourceOptions | None = None,
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
        self.register_outputs({"configName": CONFIG_NAME})

"""The offline fakes answer in the stack's own region, on both clouds.

The zone lookup used to answer every region with us-west-2's zones, so an AWS stack anywhere else
failed synth without explicit zones ("subnet_ids_by_zone[us-west-2a]: must be a zone of the stack's
region"). The zones now come from the region catalog (``regions.AWS_ZONES``, pinned from moto's
record of ``DescribeAvailabilityZones``; ``test_the_zone_table_is_motos`` compares it with the
installed moto), and the other region-bearing answers (ARNs, endpoints, issuer URLs) follow.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpupools.catalog import regions
from gpupools.testing import fakes, run_stack, stack_config


def _cluster_without_zones(stack: str) -> dict[str, Any]:
    cluster = dict(stack_config(stack)["gpupools:cluster"])
    cluster.pop("zones", None)
    return cluster


def _zonal_inputs(run: Any) -> set[str]:
    """Every zone an EKS node group or subnet was asked for."""
    zones: set[str] = set()
    for subnet in run.of_type("aws:ec2/subnet:Subnet"):
        zones.add(subnet.inputs["availabilityZone"])
    return zones


def test_an_ap_northeast_1_aws_stack_synthesizes_without_explicit_zones() -> None:
    run = run_stack(
        "aws-dev",
        overrides={"aws:region": "ap-northeast-1", "gpupools:cluster": _cluster_without_zones("aws-dev")},
    )
    # Tokyo's zones for a new account are a, c and d (1b is closed to new accounts): not a, b, c.
    assert _zonal_inputs(run) == {"ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"}
    groups = run.of_type("aws:eks/nodeGroup:NodeGroup")
    assert groups and all("us-west-2" not in g.inputs["nodeGroupName"] for g in groups)
    [lookup] = [args for token, args in run.invokes if token == "aws:index/getAvailabilityZones:getAvailabilityZones"]
    assert lookup["state"] == "available"
    cluster = run.of_type("eks:index:Cluster")[0]
    assert cluster.name.endswith("-eks")


@pytest.mark.parametrize("region", ["eu-central-1", "us-east-1", "sa-east-1"])
def test_an_aws_stack_in_other_regions_gets_that_regions_first_three_zones(region: str) -> None:
    run = run_stack("aws-dev", overrides={"aws:region": region, "gpupools:cluster": _cluster_without_zones("aws-dev")})
    assert _zonal_inputs(run) == set(regions.aws_zones(region)[:3])


def test_the_aws_fakes_carry_the_stacks_region() -> None:
    run = run_stack(
        "aws-dev",
        overrides={"aws:region": "ap-northeast-1", "gpupools:cluster": _cluster_without_zones("aws-dev")},
    )
    kubeconfig = run.outputs["kubeconfig"]
    assert ".ap-northeast-1.eks.amazonaws.com" in str(kubeconfig)
    arns = [g for g in run.registrations if "oidc.eks." in str(g.inputs)]
    assert arns and all("oidc.eks.us-west-2" not in str(g.inputs) for g in arns)


def test_an_azure_stack_in_japaneast_is_answered_in_japaneast() -> None:
    run = run_stack("azure-dev", overrides={"azure-native:location": "japaneast"})
    [cluster] = run.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["location"] == "japaneast"
    assert "japaneast.azmk8s.io" in str(run.outputs["kubeconfig"])
    assert "eastus" not in str(run.outputs["kubeconfig"])


def test_the_fakes_default_to_us_west_2_and_eastus_without_a_region() -> None:
    # Outside a run the config is empty: the defaults the docstring states.
    assert fakes.DEFAULT_AWS_REGION == "us-west-2"
    assert fakes.DEFAULT_AZURE_LOCATION == "eastus"
    assert fakes.azure_location({"location": "East US 2"}) == "eastus2"


def test_an_unknown_region_zone_lookup_fails_like_an_invoke() -> None:
    import pulumi

    pulumi.runtime.set_all_config({"aws:region": "xx-nowhere-1"}, [])
    try:
        with pytest.raises(fakes.InvokeError, match="xx-nowhere-1"):
            fakes.CALLS["aws:index/getAvailabilityZones:getAvailabilityZones"]({})
    finally:
        pulumi.runtime.set_all_config({}, [])


# --- the zone table against moto ------------------------------------------------------------------


def test_the_zone_table_is_motos() -> None:
    """``regions.AWS_ZONES`` is pinned from moto's record of DescribeAvailabilityZones: a newer moto
    with a changed region fails here and says what to update."""
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    moto_zones = {
        region: tuple((zone.name, zone.zone_id) for zone in zones if zone.zone_type == "availability-zone")
        for region, zones in RegionsAndZonesBackend.zones.items()
        if region in regions.AWS_REGIONS
    }
    assert set(regions.AWS_ZONES) == regions.AWS_REGIONS, "every AWS region of the catalog has its zones"
    changed = {r: moto_zones[r] for r in moto_zones if moto_zones[r] != regions.AWS_ZONES[r]}
    assert not changed, f"moto's zones differ from components/gpupools/catalog/regions.py AWS_ZONES: {changed}"


def test_every_aws_region_has_at_least_two_zones_for_eks() -> None:
    # EKS needs subnets in two zones (rules.check_cluster); a region the table gives one zone would fail synth.
    assert all(len(zones) >= 2 for zones in regions.AWS_ZONES.values())


def test_the_azure_zone_lists_name_known_regions_and_do_not_overlap() -> None:
    assert regions.AZURE_ZONAL_REGIONS <= regions.AZURE_REGIONS
    assert regions.AZURE_REGIONS_WITHOUT_ZONES <= regions.AZURE_REGIONS
    assert not regions.AZURE_ZONAL_REGIONS & regions.AZURE_REGIONS_WITHOUT_ZONES
    assert regions.azure_has_zones("West US") is False
    assert regions.azure_has_zones("japaneast") is True
    assert regions.azure_has_zones("taiwannorth") is None


# --- Azure zones against Azure's regions list -----------------------------------------------------


def _azure(location: str, **overrides: Any) -> dict[str, Any]:
    values = {**stack_config("azure-dev"), "azure-native:location": location, **overrides}
    return values


def test_a_zonal_pool_in_westus_is_one_clear_error() -> None:
    from gpupools import config
    from gpupools.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        config.parse(_azure("westus"), region="westus")
    assert str(raised.value) == (
        "gpupools:cluster.zones[0]: must be left out: westus has no availability zones (leave out zones), got '1'"
    )


def test_an_azure_stack_in_westus_without_zones_gets_a_regional_cluster() -> None:
    from gpupools import config

    cluster = {k: v for k, v in stack_config("azure-dev")["gpupools:cluster"].items() if k != "zones"}
    pools = [{k: v for k, v in p.items() if k != "zones"} for p in stack_config("azure-dev")["gpupools:gpuPools"]]
    spec = config.parse(_azure("West US", **{"gpupools:cluster": cluster, "gpupools:gpuPools": pools}), region="West US")
    assert spec.cluster.zones == ()
    run = run_stack(
        "azure-dev", overrides={"azure-native:location": "westus", "gpupools:cluster": cluster, "gpupools:gpuPools": pools}
    )
    pools_sent = run.of_type("azure-native:containerservice:AgentPool")
    assert pools_sent and all(p.inputs.get("availabilityZones") is None for p in pools_sent)


def test_zonal_regions_keep_the_default_zones() -> None:
    from gpupools import config

    cluster = {k: v for k, v in stack_config("azure-dev")["gpupools:cluster"].items() if k != "zones"}
    spec = config.parse(_azure("japaneast", **{"gpupools:cluster": cluster}), region="japaneast")
    assert spec.cluster.zones == ("1", "2", "3")

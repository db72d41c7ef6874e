"""The pinned region lists (``gpupools.catalog.regions``) and the region rule of the config.

The AWS list is compared with the ``endpoints.json`` of the installed botocore (a model nobody here
wrote); the Azure list cannot be checked offline, so it is checked against what the project itself
relies on: every region the price catalog prices must be in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpupools import config
from gpupools.catalog import regions
from gpupools.catalog.prices import price_table
from gpupools.errors import ConfigError
from gpupools.specs import Cloud

from tests.examples import EXAMPLE_FILES
from tests.test_config import AWS, AZURE, with_key

ROOT = Path(__file__).resolve().parent.parent


def botocore_ec2_regions() -> set[str]:
    """The regions of the commercial partition that have an EC2 endpoint, from botocore's own data."""
    import botocore.loaders

    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    [aws] = [p for p in endpoints["partitions"] if p["partition"] == "aws"]
    return {name for name in aws["services"]["ec2"]["endpoints"] if name in aws["regions"]}


def test_aws_list_is_botocores_commercial_ec2_regions() -> None:
    found = botocore_ec2_regions()
    assert found, "botocore lists no EC2 region: its endpoints data changed shape"
    missing, extra = sorted(found - regions.AWS_REGIONS), sorted(regions.AWS_REGIONS - found)
    assert not missing, f"botocore knows regions missing from components/gpupools/catalog/regions.py: add {missing}"
    assert not extra, f"components/gpupools/catalog/regions.py lists regions botocore does not: {extra}"


@pytest.mark.parametrize("cloud", list(Cloud))
def test_every_priced_region_is_a_known_region(cloud: Cloud) -> None:
    data = json.loads((ROOT / "components" / "gpupools" / "catalog" / f"prices_{cloud.value}.json").read_text())
    assert data["regions"]
    for region in data["regions"]:
        assert regions.is_known(cloud, region), f"{cloud.value}: the price catalog prices {region}, the region list lacks it"
    assert set(data["regions"]) == set(price_table(cloud).prices)


def test_every_example_stack_names_a_known_region() -> None:
    import yaml

    for path in EXAMPLE_FILES:
        values = yaml.safe_load(path.read_text())["config"]
        cloud = Cloud(values["gpupools:cloud"])
        assert regions.is_known(cloud, values[regions.REGION_KEYS[cloud]]), path.name


def test_lists_hold_programmatic_names_only() -> None:
    assert all(r == r.lower() and " " not in r for r in regions.AZURE_REGIONS)
    assert all(r.count("-") == 2 and r.split("-")[-1].isdigit() for r in regions.AWS_REGIONS)
    # Other partitions and clouds are not in the lists.
    assert not regions.is_known(Cloud.AWS, "us-gov-west-1") and not regions.is_known(Cloud.AWS, "cn-north-1")
    assert not regions.is_known(Cloud.AZURE, "usgovvirginia") and not regions.is_known(Cloud.AZURE, "chinanorth")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            with_key(AWS, "aws:region", "eu-west-9"),
            "aws:region: must be a known AWS region (did you mean eu-west-1?), got 'eu-west-9'",
        ),
        (
            with_key(AWS, "aws:region", "us-wset-2"),
            "aws:region: must be a known AWS region (did you mean us-west-2?), got 'us-wset-2'",
        ),
        (
            with_key(AZURE, "azure-native:location", "eastus9"),
            "azure-native:location: must be a known Azure region (did you mean eastus?), got 'eastus9'",
        ),
        (
            with_key(AZURE, "azure-native:location", "Wast Europe"),
            "azure-native:location: must be a known Azure region (did you mean westeurope?), got 'Wast Europe'",
        ),
        (with_key(AWS, "aws:region", "mars"), "aws:region: must be a known AWS region (e.g. us-west-2), got 'mars'"),
    ],
)
def test_unknown_region_is_one_config_error_naming_the_key(raw: dict[str, object], message: str) -> None:
    region = raw.get("aws:region") or raw.get("azure-native:location")
    with pytest.raises(ConfigError) as caught:
        config.parse(raw, region=str(region))
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("raw", "region"),
    [
        # Real regions the price catalog does not price: valid, their estimates say "no price" and why.
        (AWS, "ap-southeast-7"),
        (AWS, "mx-central-1"),
        (AZURE, "swedensouth"),
        (AZURE, "taiwannorth"),
        # Azure takes display names in any case and spacing.
        (AZURE, "Taiwan North"),
    ],
)
def test_real_but_unpriced_regions_are_accepted(raw: dict[str, object], region: str) -> None:
    cloud = Cloud(str(raw["gpupools:cloud"]))
    assert price_table(cloud).prices.get(regions.normalize(cloud, region)) is None
    changed = dict(raw)
    if cloud is Cloud.AWS:
        zone_prefix = region
        changed["gpupools:cluster"] = {"name": "ml-dev", "zones": [f"{zone_prefix}a", f"{zone_prefix}b"]}
    changed[regions.REGION_KEYS[cloud]] = region
    spec = config.parse(changed, region=region)
    assert spec.cloud is cloud


def test_no_region_is_not_checked_here() -> None:
    # AWS falls back to the provider's region; Azure requires the location where the stack reads it.
    assert config.parse(AWS, region=None).cloud is Cloud.AWS


AZ_LIST_LOCATIONS_PHYSICAL = [
    "australiacentral",
    "australiacentral2",
    "australiaeast",
    "australiasoutheast",
    "austriaeast",
    "brazilsouth",
    "brazilsoutheast",
    "canadacentral",
    "canadaeast",
    "centralindia",
    "centralus",
    "centraluseuap",
    "chilecentral",
    "eastasia",
    "eastus",
    "eastus2",
    "eastus2euap",
    "francecentral",
    "francesouth",
    "germanynorth",
    "germanywestcentral",
    "indonesiacentral",
    "israelcentral",
    "italynorth",
    "japaneast",
    "japanwest",
    "koreacentral",
    "koreasouth",
    "malaysiawest",
    "mexicocentral",
    "newzealandnorth",
    "northcentralus",
    "northeurope",
    "norwayeast",
    "norwaywest",
    "polandcentral",
    "qatarcentral",
    "southafricanorth",
    "southafricawest",
    "southcentralus",
    "southeastasia",
    "southindia",
    "spaincentral",
    "swedencentral",
    "switzerlandnorth",
    "switzerlandwest",
    "uaecentral",
    "uaenorth",
    "uksouth",
    "ukwest",
    "westcentralus",
    "westeurope",
    "westindia",
    "westus",
    "westus2",
    "westus3",
]
"""The physical regions of a public deployment script's ``ValidateSet`` of ``az account list-locations``
names (logical ones such as ``europe`` or ``unitedstates`` removed), found 2026-11-24: a list that
was not typed in for this project, to cross-check the pinned one."""


def test_the_azure_list_holds_every_region_of_an_independent_az_list_locations() -> None:
    from gpupools.catalog.regions import AZURE_REGIONS

    assert set(AZ_LIST_LOCATIONS_PHYSICAL) <= AZURE_REGIONS, sorted(set(AZ_LIST_LOCATIONS_PHYSICAL) - AZURE_REGIONS)


def test_an_account_specific_zone_name_is_accepted_through_allow_unlisted() -> None:
    """Third EKS review, t2: AWS maps zone names per account in its older regions for accounts
    created before November 2025 (AWS Global Infrastructure, "AWS Availability Zones"), so an account
    may have ``us-west-1c`` where the offline list (one account's ``DescribeAvailabilityZones``) has
    ``a`` and ``b``. Refused with the way out named; accepted once the zone is in
    ``gpupools:catalog.allowUnlisted``; a typo there is still refused."""
    import pytest
    from gpupools import config
    from gpupools.errors import ConfigError

    from tests.test_config import AWS, with_key

    values = with_key(
        with_key(AWS, "gpupools:cluster", {"name": "ml-dev", "zones": ["us-west-1a", "us-west-1c"]}),
        "gpupools:gpuPools",
        [{"name": "gpu", "instanceTypes": ["g4dn.xlarge"], "maxSize": 2}],
    )
    values["aws:region"] = "us-west-1"
    with pytest.raises(
        ConfigError, match=r"^gpupools:cluster\.zones\[1\]: must be an availability zone of us-west-1 .*allowUnlisted"
    ):
        config.parse(values, "us-west-1")
    spec = config.parse(with_key(values, "gpupools:catalog", {"allowUnlisted": ["us-west-1c"]}), "us-west-1")
    assert spec.cluster.zones == ("us-west-1a", "us-west-1c")
    with pytest.raises(ConfigError, match=r"^gpupools:catalog\.allowUnlisted\[1\]: must name a size .* or one of its zones"):
        config.parse(with_key(values, "gpupools:catalog", {"allowUnlisted": ["us-west-1c", "us-west-1z"]}), "us-west-1")

"""The public regions of each cloud: what ``aws:region`` and ``azure-native:location`` may name.

A region is checked against these lists, not against the price catalog: the catalog prices only a
few regions, and a real region without a price is valid (its estimates say it has no price, and
why). A name in neither list is almost always a typo (``eu-west-9``, ``eastus9``), and ``pulumi up``
would only fail on it after part of the stack exists, so ``gpupools.rules.check_region`` rejects it
up front.

Sources (pinned; update by hand when a cloud opens a region):

* AWS: the commercial partition (``aws``) of botocore's ``endpoints.json``, the regions with an
  ``ec2`` endpoint, botocore 1.44.8, read 2026-11-24. ``tests/test_regions.py`` compares this list
  with the botocore installed for the tests, so a newer botocore with a new region fails a test
  that says what to add. GovCloud (``us-gov-*``), China (``cn-*``) and the isolated partitions are
  other partitions with their own ARNs and endpoints: the project does not target them.
* Azure: the physical regions of the public cloud (``AzureCloud``), as ``az account list-locations
  --query "[?metadata.regionType=='Physical'].name"`` lists them and the Microsoft Learn page
  "List of Azure regions" (learn.microsoft.com/azure/reliability/regions-list) names them, read
  2026-11-24. Logical locations (``unitedstates``, ``europe``) cannot hold resources and are left
  out; the early-access regions (``eastus2euap``, ``centraluseuap``) are in. Azure Government and
  Azure China are other clouds.
"""

from __future__ import annotations

import difflib

from gpupools.specs import Cloud

AWS_REGIONS: frozenset[str] = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)
"""AWS commercial regions (partition ``aws``), as botocore 1.44.8's ``endpoints.json`` lists them for ``ec2``."""

AZURE_REGIONS: frozenset[str] = frozenset(
    {
        # Americas
        "eastus",
        "eastus2",
        "centralus",
        "northcentralus",
        "southcentralus",
        "westcentralus",
        "westus",
        "westus2",
        "westus3",
        "canadacentral",
        "canadaeast",
        "brazilsouth",
        "brazilsoutheast",
        "mexicocentral",
        "chilecentral",
        "eastus2euap",
        "centraluseuap",
        # Europe
        "northeurope",
        "westeurope",
        "uksouth",
        "ukwest",
        "francecentral",
        "francesouth",
        "germanywestcentral",
        "germanynorth",
        "norwayeast",
        "norwaywest",
        "swedencentral",
        "swedensouth",
        "switzerlandnorth",
        "switzerlandwest",
        "polandcentral",
        "italynorth",
        "spaincentral",
        "belgiumcentral",
        "austriaeast",
        "denmarkeast",
        # Asia Pacific
        "eastasia",
        "southeastasia",
        "japaneast",
        "japanwest",
        "koreacentral",
        "koreasouth",
        "centralindia",
        "southindia",
        "westindia",
        "jioindiacentral",
        "jioindiawest",
        "australiaeast",
        "australiasoutheast",
        "australiacentral",
        "australiacentral2",
        "newzealandnorth",
        "indonesiacentral",
        "malaysiawest",
        "taiwannorth",
        # Middle East and Africa
        "uaenorth",
        "uaecentral",
        "qatarcentral",
        "israelcentral",
        "southafricanorth",
        "southafricawest",
    }
)
"""Azure public-cloud physical regions, by programmatic name (``eastus``, not ``East US``)."""

REGION_KEYS = {Cloud.AWS: "aws:region", Cloud.AZURE: "azure-native:location"}
"""The provider config key that holds the stack's region, per cloud."""

_CLOUD_NAMES = {Cloud.AWS: "AWS", Cloud.AZURE: "Azure"}


def normalize(cloud: Cloud, region: str) -> str:
    """The programmatic name: Azure accepts display names in any case and spacing (``East US``)."""
    return region.replace(" ", "").lower() if cloud is Cloud.AZURE else region


def known_regions(cloud: Cloud) -> frozenset[str]:
    """The pinned public regions of ``cloud``."""
    return AWS_REGIONS if cloud is Cloud.AWS else AZURE_REGIONS


def is_known(cloud: Cloud, region: str) -> bool:
    """True if ``region`` (normalized) is a public region of ``cloud``."""
    return normalize(cloud, region) in known_regions(cloud)


def closest(cloud: Cloud, region: str) -> str | None:
    """The known region nearest to ``region`` by spelling (``difflib``'s ratio, at least 0.6), or
    ``None``; of equally near ones the first in sort order (``eu-west-9`` -> ``eu-west-1``)."""
    wanted = normalize(cloud, region)
    scored = [(difflib.SequenceMatcher(None, wanted, name).ratio(), name) for name in sorted(known_regions(cloud))]
    best = max((score for score, _ in scored), default=0.0)
    return next((name for score, name in scored if score == best), None) if best >= 0.6 else None


def unknown_region_rule(cloud: Cloud, region: str) -> str:
    """The rule text of a ``ConfigError`` for an unknown region, with a suggestion when one is close."""
    suggestion = closest(cloud, region)
    hint = f"did you mean {suggestion}?" if suggestion else f"e.g. {'us-west-2' if cloud is Cloud.AWS else 'eastus'}"
    return f"must be a known {_CLOUD_NAMES[cloud]} region ({hint})"


# --- zones ----------------------------------------------------------------------------------------

AWS_ZONES: dict[str, tuple[tuple[str, str], ...]] = {
    "af-south-1": (("af-south-1a", "afs1-az1"), ("af-south-1b", "afs1-az2"), ("af-south-1c", "afs1-az3")),
    "ap-east-1": (("ap-east-1a", "ape1-az1"), ("ap-east-1b", "ape1-az2"), ("ap-east-1c", "ape1-az3")),
    "ap-east-2": (("ap-east-2a", "ape2-az1"), ("ap-east-2b", "ape2-az2"), ("ap-east-2c", "ape2-az3")),
    "ap-northeast-1": (("ap-northeast-1a", "apne1-az4"), ("ap-northeast-1c", "apne1-az1"), ("ap-northeast-1d", "apne1-az2")),
    "ap-northeast-2": (
        ("ap-northeast-2a", "apne2-az1"),
        ("ap-northeast-2b", "apne2-az2"),
        ("ap-northeast-2c", "apne2-az3"),
        ("ap-northeast-2d", "apne2-az4"),
    ),
    "ap-northeast-3": (("ap-northeast-3a", "apne3-az1"), ("ap-northeast-3b", "apne3-az2"), ("ap-northeast-3c", "apne3-az3")),
    "ap-south-1": (("ap-south-1a", "aps1-az1"), ("ap-south-1b", "aps1-az3"), ("ap-south-1c", "aps1-az2")),
    "ap-south-2": (("ap-south-2a", "aps2-az1"), ("ap-south-2b", "aps2-az2"), ("ap-south-2c", "aps2-az3")),
    "ap-southeast-1": (("ap-southeast-1a", "apse1-az1"), ("ap-southeast-1b", "apse1-az2"), ("ap-southeast-1c", "apse1-az3")),
    "ap-southeast-2": (("ap-southeast-2a", "apse2-az1"), ("ap-southeast-2b", "apse2-az3"), ("ap-southeast-2c", "apse2-az2")),
    "ap-southeast-3": (("ap-southeast-3a", "apse3-az1"), ("ap-southeast-3b", "apse3-az2"), ("ap-southeast-3c", "apse3-az3")),
    "ap-southeast-4": (("ap-southeast-4a", "apse4-az1"), ("ap-southeast-4b", "apse4-az2"), ("ap-southeast-4c", "apse4-az3")),
    "ap-southeast-5": (("ap-southeast-5a", "apse5-az1"), ("ap-southeast-5b", "apse5-az2"), ("ap-southeast-5c", "apse5-az3")),
    "ap-southeast-6": (("ap-southeast-6a", "apse6-az1"), ("ap-southeast-6b", "apse6-az2"), ("ap-southeast-6c", "apse6-az3")),
    "ap-southeast-7": (("ap-southeast-7a", "apse7-az1"), ("ap-southeast-7b", "apse7-az2"), ("ap-southeast-7c", "apse7-az3")),
    "ca-central-1": (("ca-central-1a", "cac1-az1"), ("ca-central-1b", "cac1-az2"), ("ca-central-1d", "cac1-az4")),
    "ca-west-1": (("ca-west-1a", "caw1-az1"), ("ca-west-1b", "caw1-az2"), ("ca-west-1c", "caw1-az3")),
    "eu-central-1": (("eu-central-1a", "euc1-az1"), ("eu-central-1b", "euc1-az2"), ("eu-central-1c", "euc1-az3")),
    "eu-central-2": (("eu-central-2a", "euc2-az1"), ("eu-central-2b", "euc2-az2"), ("eu-central-2c", "euc2-az3")),
    "eu-north-1": (("eu-north-1a", "eun1-az1"), ("eu-north-1b", "eun1-az2"), ("eu-north-1c", "eun1-az3")),
    "eu-south-1": (("eu-south-1a", "eus1-az1"), ("eu-south-1b", "eus1-az2"), ("eu-south-1c", "eus1-az3")),
    "eu-south-2": (("eu-south-2a", "eus2-az1"), ("eu-south-2b", "eus2-az2"), ("eu-south-2c", "eus2-az3")),
    "eu-west-1": (("eu-west-1a", "euw1-az3"), ("eu-west-1b", "euw1-az1"), ("eu-west-1c", "euw1-az2")),
    "eu-west-2": (("eu-west-2a", "euw2-az2"), ("eu-west-2b", "euw2-az3"), ("eu-west-2c", "euw2-az1")),
    "eu-west-3": (("eu-west-3a", "euw3-az1"), ("eu-west-3b", "euw3-az2"), ("eu-west-3c", "euw3-az3")),
    "il-central-1": (("il-central-1a", "ilc1-az1"), ("il-central-1b", "ilc1-az2"), ("il-central-1c", "ilc1-az3")),
    "me-central-1": (("me-central-1a", "mec1-az1"), ("me-central-1b", "mec1-az2"), ("me-central-1c", "mec1-az3")),
    "me-south-1": (("me-south-1a", "mes1-az1"), ("me-south-1b", "mes1-az2"), ("me-south-1c", "mes1-az3")),
    "mx-central-1": (("mx-central-1a", "mxc1-az1"), ("mx-central-1b", "mxc1-az2"), ("mx-central-1c", "mxc1-az3")),
    "sa-east-1": (("sa-east-1a", "sae1-az1"), ("sa-east-1b", "sae1-az2"), ("sa-east-1c", "sae1-az3")),
    "us-east-1": (
        ("us-east-1a", "use1-az6"),
        ("us-east-1b", "use1-az1"),
        ("us-east-1c", "use1-az2"),
        ("us-east-1d", "use1-az4"),
        ("us-east-1e", "use1-az3"),
        ("us-east-1f", "use1-az5"),
    ),
    "us-east-2": (("us-east-2a", "use2-az1"), ("us-east-2b", "use2-az2"), ("us-east-2c", "use2-az3")),
    "us-west-1": (("us-west-1a", "usw1-az3"), ("us-west-1b", "usw1-az1")),
    "us-west-2": (("us-west-2a", "usw2-az2"), ("us-west-2b", "usw2-az1"), ("us-west-2c", "usw2-az3"), ("us-west-2d", "usw2-az4")),
}
"""Each AWS region's availability zones that need no opt-in, as ``(zone name, zone ID)``, in name order.

Source: moto 5.2.5, ``moto/ec2/models/availability_zones_and_regions.py``
(``RegionsAndZonesBackend.zones``), which records what ``DescribeAvailabilityZones`` answered in
each region; ``tests/test_regions.py`` compares this table with the installed moto. The names are
what a new account sees (``ap-northeast-1`` has ``a``, ``c`` and ``d``: ``1b`` is closed to new
accounts); AWS maps names to zone IDs per account, so the IDs here are one account's mapping.
Local Zones and Wavelength Zones need an opt-in and are left out, as the stack's default zone
lookup leaves them out (``opt-in-status = opt-in-not-required``). The offline fakes answer the
stack's zone lookup from this table (``gpupools.testing.fakes``)."""

AZURE_ZONAL_REGIONS: frozenset[str] = frozenset(
    {
        "australiaeast",
        "austriaeast",
        "belgiumcentral",
        "brazilsouth",
        "canadacentral",
        "centralindia",
        "centralus",
        "chilecentral",
        "denmarkeast",
        "eastasia",
        "eastus",
        "eastus2",
        "francecentral",
        "germanywestcentral",
        "indonesiacentral",
        "israelcentral",
        "italynorth",
        "japaneast",
        "japanwest",
        "koreacentral",
        "malaysiawest",
        "mexicocentral",
        "newzealandnorth",
        "northeurope",
        "norwayeast",
        "polandcentral",
        "qatarcentral",
        "southafricanorth",
        "southcentralus",
        "southeastasia",
        "spaincentral",
        "swedencentral",
        "switzerlandnorth",
        "uaenorth",
        "uksouth",
        "westeurope",
        "westus2",
        "westus3",
    }
)
"""Azure regions with availability zones ("1", "2", "3").

Source: Microsoft Learn, "Azure regions list" (learn.microsoft.com/azure/reliability/regions-list;
MicrosoftDocs/reliability-docs ``articles/reliability/regions-list.md`` at commit
01021ab80d1aebd1d8b5de481d80a9855b487954, ms.date 2025-09-23), the "Availability zone support"
column. ``az account list-locations`` says the same per subscription (``availabilityZoneMappings``)."""

AZURE_REGIONS_WITHOUT_ZONES: frozenset[str] = frozenset(
    {
        "australiacentral",
        "australiacentral2",
        "australiasoutheast",
        "brazilsoutheast",
        "canadaeast",
        "francesouth",
        "germanynorth",
        "koreasouth",
        "northcentralus",
        "norwaywest",
        "southafricawest",
        "southindia",
        "switzerlandwest",
        "uaecentral",
        "ukwest",
        "westcentralus",
        "westindia",
        "westus",
    }
)
"""Azure regions the same list names without availability zones: a zonal pool there is rejected
(``gpupools.rules.check_zone``), and the cluster's default zones are none (a regional cluster).
Regions the list does not name (``jioindiacentral``, ``swedensouth``, ``taiwannorth``, the EUAP
regions) are in neither set: their zones are not checked here, the preflight asks the subscription."""


AKS_AUTOMATIC_REGIONS = frozenset(
    {
        "australiaeast", "austriaeast", "belgiumcentral", "brazilsouth", "canadacentral", "centralindia",
        "centralus", "chilecentral", "denmarkeast", "eastasia", "eastus", "eastus2", "francecentral",
        "germanywestcentral", "indonesiacentral", "israelcentral", "italynorth", "japaneast", "japanwest",
        "koreacentral", "malaysiawest", "mexicocentral", "newzealandnorth", "northeurope", "norwayeast",
        "polandcentral", "southafricanorth", "southcentralus", "southeastasia", "spaincentral", "swedencentral",
        "switzerlandnorth", "uaenorth", "uksouth", "westeurope", "westus2", "westus3",
    }
)  # fmt: skip
"""The 37 regions where AKS Automatic is available: "AKS Automatic is available in the following
regions" (MicrosoftDocs/azure-aks-docs ``articles/aks/includes/aks-automatic/aks-automatic-limitations.md``
at 1bc933f, ms.date 2026-04-13; the 2026-07-24 revision names the same count). A region outside it is
refused before anything is registered (``config.check_automatic_keys``)."""


def aws_zones(region: str) -> tuple[str, ...]:
    """The availability zone names of an AWS region (``AWS_ZONES``), or ``()`` for a region not in it."""
    return tuple(name for name, _ in AWS_ZONES.get(region, ()))


def azure_has_zones(region: str) -> bool | None:
    """True if the Azure region has availability zones, False if Azure's list says it has none,
    None if the list does not name it (see ``AZURE_REGIONS_WITHOUT_ZONES``)."""
    name = normalize(Cloud.AZURE, region)
    if name in AZURE_ZONAL_REGIONS:
        return True
    if name in AZURE_REGIONS_WITHOUT_ZONES:
        return False
    return None

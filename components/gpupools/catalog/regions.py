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

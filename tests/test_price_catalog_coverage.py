"""The offline price tables (issue 30): what they cover, what they say where they have no price, and
which figures they must never carry.

What is pinned:

* no committed row carries a Spot figure equal to or above its on-demand figure (the eastus H100
  rows of SkyPilot's Azure catalog repeat the on-demand rate as Spot); a table that has one loads
  with the Spot figure dropped and the reason recorded;
* every region of the region catalog (``gpupools.catalog.regions``) is priced or has a recorded
  reason, and every size of the size catalogs gets either both prices or a reason in every one of
  them, never the generic fallback;
* p5.48xlarge on-demand in us-east-1 is the price after AWS's June 2025 cut: "Announcing up to 45%
  price reduction for Amazon EC2 NVIDIA GPU-accelerated instances" (AWS What's New, 2025-06-05: P4d,
  P4de, P5 and P5en On-Demand prices lowered, P5 by up to 45 %), as SkyPilot's newest AWS catalog
  records it (catalogs/v8/aws/vms.csv at 00148f2: 55.04 USD/h, from 98.32);
* a stack in ap-northeast-1 gets Spot and on-demand prices for its P-family sizes, and one short
  footnote per reason for the rest;
* every GPU size of the size catalog has an on-demand price (and a Spot price or the reason for its
  absence) in every region SkyPilot's v8 AWS catalog lists it in, and a size it does not list in a
  region it covers says "not offered" there (``V8_REGIONS``);
* every region priced from that catalog records its source, commit and date.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Iterable

import pytest
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.catalog.prices import Price, PriceTable, is_spot_price, price_table, table_from_json, table_path
from gpupools.catalog.regions import known_regions
from gpupools.pricing import import_vms_csv
from gpupools.specs import Cloud
from gpupools.testing import run_stack, stack_config

SIZES = {Cloud.AWS: sorted(INSTANCE_TYPES), Cloud.AZURE: sorted({*GPU_SIZES, *CPU_SIZES})}
P5_BEFORE_THE_CUT = 98.32
"""p5.48xlarge On-Demand in us-east-1 before June 2025 (the committed table's figure until then)."""


@pytest.mark.parametrize("cloud", list(Cloud))
def test_no_committed_spot_figure_is_at_or_above_on_demand(cloud: Cloud) -> None:
    raw = json.loads(table_path(cloud).read_text())
    offenders = [
        (region, size, row)
        for region, sizes in raw["regions"].items()
        for size, row in sizes.items()
        if row["spot"] is not None and (row["onDemand"] is None or row["spot"] >= row["onDemand"] * (1 - 1e-5))
    ]
    assert offenders == []


def test_a_spot_figure_equal_to_on_demand_loads_as_unknown_with_its_reason() -> None:
    data = {
        "cloud": "azure",
        "source": "test",
        "readOn": "2026-11-27",
        "spotBasis": "test",
        "regions": {
            "eastus": {
                "Standard_NC40ads_H100_v5": {"onDemand": 6.98, "spot": 6.98},
                "Standard_D4s_v5": {"onDemand": 0.192, "spot": 0.0211},
            }
        },
    }
    table = table_from_json(data)
    assert table.price("eastus", "Standard_NC40ads_H100_v5") is not None
    assert table.price("eastus", "Standard_NC40ads_H100_v5").spot is None  # type: ignore[union-attr]
    assert "is not a Spot price" in table.missing_reason("eastus", "Standard_NC40ads_H100_v5")
    assert table.price("eastus", "Standard_D4s_v5").spot == 0.0211  # type: ignore[union-attr]
    assert not is_spot_price(30.09784, 30.0978)  # the same rate, rounded by the source
    assert is_spot_price(30.09784, 7.5205)


def test_the_eastus_h100_spot_figures_come_from_anycloud_with_a_note() -> None:
    # SkyPilot's eastus H100 rows repeat on-demand as Spot (6.98, 13.96 and 98.32 on both sides), so
    # those Spot figures are not prices; anycloud's May 2026 rows have the Spot meter (2.192418 for the
    # NC40ads size, 0.31x), added with a footnote naming it.
    table = price_table(Cloud.AZURE)
    for size, on_demand in (
        ("Standard_NC40ads_H100_v5", 6.98),
        ("Standard_NC80adis_H100_v5", 13.96),
        ("Standard_ND96isr_H100_v5", 98.32),
    ):
        price = table.price("eastus", size)
        assert price is not None and price.on_demand == on_demand and price.spot is not None and price.spot < on_demand
        [note] = table.footnotes("eastus", [size])
        assert "anycloud's catalog 62ff0a98" in note, note
    assert table.price("eastus", "Standard_NC40ads_H100_v5") == Price(6.98, 2.192418)


GENERIC_REASONS = ("has no row for", "is not in the")
"""What ``PriceTable.missing_reason`` says when nothing was recorded: a gap, not a reason."""


def says_why(reason: str) -> bool:
    """A recorded reason (not offered there, no source lists the region...), not ``GENERIC_REASONS``."""
    return not any(generic in reason for generic in GENERIC_REASONS)


@pytest.mark.parametrize("cloud", list(Cloud))
def test_every_region_and_size_is_priced_or_says_why(cloud: Cloud) -> None:
    table = price_table(cloud)
    for region in sorted(known_regions(cloud)):
        assert region in table.prices or region in table.unpriced_regions, region
        for size in SIZES[cloud]:
            price = table.price(region, size)
            if price is not None and price.on_demand is not None and price.spot is not None:
                continue
            reason = table.missing_reason(region, size)
            assert says_why(reason), (region, size, reason)


def test_p5_on_demand_in_us_east_1_is_the_price_after_the_june_2025_cut() -> None:
    price = price_table(Cloud.AWS).price("us-east-1", "p5.48xlarge")
    assert price is not None and price.on_demand is not None and price.spot is not None
    assert price.on_demand == 55.04
    # "up to 45 %": at least 40 % below the old list price, never more than 45 %.
    assert 0.55 * P5_BEFORE_THE_CUT <= price.on_demand <= 0.60 * P5_BEFORE_THE_CUT
    assert price.spot < price.on_demand
    for size in ("p4d.24xlarge", "p4de.24xlarge", "p5en.48xlarge"):
        assert (
            price_table(Cloud.AWS).price("us-east-1", size).on_demand
            < {  # type: ignore[union-attr]
                "p4d.24xlarge": 32.7726,
                "p4de.24xlarge": 40.96575,
                "p5en.48xlarge": 84.8,
            }[size]
        )


def tokyo_training() -> dict[str, Any]:
    raw = stack_config("aws-training-dev")
    pools = copy.deepcopy(raw["gpupools:gpuPools"])
    for pool in pools:
        pool["zones"] = ["ap-northeast-1c"] if pool["name"] == "h100" else ["ap-northeast-1a"]
        for reservation in pool.get("reservations", []):
            reservation["zone"] = "ap-northeast-1c"
    cluster = {**raw["gpupools:cluster"], "zones": ["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"]}
    return {"aws:region": "ap-northeast-1", "gpupools:cluster": cluster, "gpupools:gpuPools": pools}


def test_a_stack_in_ap_northeast_1_prices_its_gpu_sizes_and_footnotes_the_rest_once() -> None:
    run = run_stack("aws-training-dev", overrides=tokyo_training())
    rows = {p["name"]: p for p in run.outputs["nodePools"]}
    [h100] = [p for p in rows.values() if p["pool"] == "h100" and p["capacityType"] == "on-demand"]
    assert h100["pricePerNodeHour"] == 68.8
    table = price_table(Cloud.AWS)
    spot = table.price("ap-northeast-1", "p5.48xlarge")
    assert spot is not None and spot.spot is not None and spot.spot < spot.on_demand  # type: ignore[operator]
    assert run.outputs["cost"]["region"] == "ap-northeast-1"
    # Every GPU size of the stack has an on-demand price there (before: g5.48xlarge had none).
    for row in rows.values():
        if row["pool"] != "system" and row["capacityType"] == "on-demand":
            assert row["pricePerNodeHour"] is not None, row["name"]
    g5 = table.price("ap-northeast-1", "g5.48xlarge")
    assert g5 is not None and g5.on_demand is not None
    # Both of its ap-northeast-1 zones in SkyPilot v8 quote the on-demand rate as Spot; the table's own
    # source (v7 at 27f67dd4) has apne1-az1 7.3711 and apne1-az4 6.8499: the median, with a note.
    assert g5.spot == pytest.approx((7.3711 + 6.8499) / 2)
    notes = table.footnotes("ap-northeast-1", ["m6i.xlarge", "g5.48xlarge", "p5.48xlarge"])
    assert len(notes) == 1 and notes[0].startswith("g5.48xlarge: Spot: median of 2 zones") and "27f67dd4" in notes[0]
    assert all(len(note) < 160 for note in notes)
    # The system pool's m6i.xlarge is priced there too (before: no price).
    [system] = [p for p in rows.values() if p["pool"] == "system"]
    assert system["pricePerNodeHour"] is not None
    # The cost output carries the same footnotes for the stack's own sizes, once per reason.
    assert run.outputs["cost"]["priceFootnotes"] == notes


def test_the_other_gpu_sizes_of_ap_northeast_1_are_priced_from_the_v8_rows() -> None:
    table = price_table(Cloud.AWS)
    for size in ("g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge", "g6f.xlarge", "g6.48xlarge"):
        price = table.price("ap-northeast-1", size)
        assert price is not None and price.on_demand is not None and price.spot is not None, size
        assert price.spot < price.on_demand, size


V8_REGIONS = {
    "g4dn": (
        "af-south-1",
        "ap-east-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-southeast-1",
        "ap-southeast-2",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-south-1",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "me-south-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    ),
    "g5": (
        "ap-east-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-south-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-west-1",
        "eu-west-2",
        "me-central-1",
        "us-east-1",
        "us-east-2",
        "us-west-2",
    ),
    "g6": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-south-1",
        "ap-southeast-2",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-south-2",
        "eu-west-2",
        "eu-west-3",
        "me-central-1",
        "us-east-1",
        "us-east-2",
        "us-west-2",
    ),
    "g6e": (
        "ap-northeast-1",
        "ap-northeast-2",
        "eu-central-1",
        "eu-north-1",
        "eu-south-2",
        "us-east-1",
        "us-east-2",
        "us-west-2",
    ),
    "g6f": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-south-1",
        "ap-southeast-2",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-south-2",
        "eu-west-2",
        "us-east-1",
        "us-east-2",
        "us-west-2",
    ),
    "p4d": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-south-1",
        "ap-southeast-2",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-west-1",
        "eu-west-2",
        "us-east-1",
        "us-east-2",
        "us-west-2",
    ),
    "p4de": ("ap-northeast-1", "ap-southeast-1", "eu-central-1", "us-east-1", "us-west-2"),
    "p5": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-south-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ca-central-1",
        "eu-north-1",
        "eu-west-2",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    ),
    "p5e": ("ap-southeast-2", "ap-southeast-3", "eu-north-1", "eu-west-2", "us-east-2", "us-west-2"),
    "p5en": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-south-1",
        "ap-southeast-3",
        "eu-north-1",
        "eu-south-2",
        "me-central-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    ),
}
"""Where SkyPilot's v8 AWS catalog (catalogs/v8/aws/vms.csv at 00148f2af3672e2229b4f7bf8157d5a3f36e3c35) lists
each GPU family of the size catalog: the regions of its rows, read from the catalog (every size of a family
is listed in the same regions there; Local Zones such as usw2-lax1-az1 are not regions)."""
V8_M6I_REGIONS = (
    "af-south-1",
    "ap-east-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ca-central-1",
    "eu-central-1",
    "eu-north-1",
    "eu-south-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "me-central-1",
    "me-south-1",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
)
"""Where SkyPilot's v8 AWS catalog lists the m6i sizes (the default system pool's), read from its rows."""
V8_SOURCE = "catalogs/v8/aws/vms.csv at commit 00148f2af3672e2229b4f7bf8157d5a3f36e3c35"
V7_REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1")
"""The regions whose rows come from the table's own source (SkyPilot v7); v8 only fills sizes they lack."""


def gpu_family(size: str) -> str | None:
    """``g5.xlarge`` -> ``g5`` for the GPU sizes of the size catalog (g6f counts 0 GPUs but is a GPU family)."""
    family = size.split(".")[0]
    return family if family in V8_REGIONS else None


def test_every_gpu_family_of_the_size_catalog_is_in_the_v8_listing() -> None:
    gpu_families = {size.split(".")[0] for size, it in INSTANCE_TYPES.items() if it.gpus or size.startswith("g6f.")}
    assert gpu_families == set(V8_REGIONS)


def missing_prices(
    table: PriceTable, listed: Iterable[tuple[str, str]], on_demand_may_be_unlisted: bool = False
) -> list[tuple[str, str, str]]:
    """``(region, size, capacity)`` for each ``(region, size)`` a source lists that lacks its on-demand
    price, or its Spot price without a reason saying the source has none. ``on_demand_may_be_unlisted``:
    a recorded "no on-demand price" reason is accepted too (AWS p5e: the source lists no on-demand rate)."""
    missing = []
    for region, size in listed:
        price = table.price(region, size)
        reason = table.missing_reason(region, size)
        if price is None or price.on_demand is None:
            if not (on_demand_may_be_unlisted and "no on-demand price" in reason):
                missing.append((region, size, "on-demand"))
        elif price.spot is None and not reason.startswith("no Spot price"):
            missing.append((region, size, "Spot"))
    return missing


def test_every_gpu_size_is_priced_in_every_region_skypilot_v8_lists_it() -> None:
    listed = [(region, size) for size in SIZES[Cloud.AWS] for region in V8_REGIONS.get(gpu_family(size) or "", ())]
    assert missing_prices(price_table(Cloud.AWS), listed, on_demand_may_be_unlisted=True) == []


def test_a_gpu_size_not_listed_in_a_region_says_it_is_not_offered_there() -> None:
    table = price_table(Cloud.AWS)
    covered = set().union(*V8_REGIONS.values())
    for size in SIZES[Cloud.AWS]:
        family = gpu_family(size)
        if family is None:
            continue
        for region in sorted(known_regions(Cloud.AWS) - set(V8_REGIONS[family])):
            assert table.price(region, size) is None or region in V7_REGIONS, (region, size)
            reason = table.missing_reason(region, size)
            if region in covered:
                assert reason.startswith(f"not offered in {region}") or region in V7_REGIONS, (region, size, reason)
            elif region in ("ap-southeast-4",):  # v8 lists CPU sizes there, none of the GPU sizes
                assert "SkyPilot v8 lists none of the GPU sizes there" in reason, (region, size, reason)
            else:
                assert reason.startswith(f"no offline source lists {region} (checked: SkyPilot v8 00148f2"), reason


def test_the_m6i_sizes_are_priced_in_every_region_skypilot_v8_lists_them() -> None:
    table = price_table(Cloud.AWS)
    for size in ("m6i.large", "m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge"):
        for region in V8_M6I_REGIONS:
            price = table.price(region, size)
            assert price is not None and price.on_demand is not None and price.spot is not None, (region, size)
        assert table.missing_reason("eu-south-2", size).startswith("not offered in eu-south-2")


def test_every_region_priced_from_the_v8_catalog_records_source_commit_and_date() -> None:
    table = price_table(Cloud.AWS)
    for region in set().union(*V8_REGIONS.values()) - set(V7_REGIONS):
        origin = table.provenance(region)
        assert V8_SOURCE in origin.source, region
        assert origin.source_date <= origin.read_on, region


AZURE_V6_REGIONS = {
    "Standard_NC16as_T4_v3": (
        "centralus",
        "eastus",
        "eastus2",
        "northcentralus",
        "southcentralus",
        "westus",
        "westus2",
        "westus3",
    ),
    "Standard_NC24ads_A100_v4": ("centralus", "eastus", "eastus2", "southcentralus", "westus", "westus2", "westus3"),
    "Standard_NC40ads_H100_v5": ("eastus", "eastus2", "southcentralus", "westus3"),
    "Standard_NC48ads_A100_v4": ("centralus", "eastus", "eastus2", "southcentralus", "westus", "westus2", "westus3"),
    "Standard_NC4as_T4_v3": (
        "centralus",
        "eastus",
        "eastus2",
        "northcentralus",
        "southcentralus",
        "westus",
        "westus2",
        "westus3",
    ),
    "Standard_NC64as_T4_v3": (
        "centralus",
        "eastus",
        "eastus2",
        "northcentralus",
        "southcentralus",
        "westus",
        "westus2",
        "westus3",
    ),
    "Standard_NC80adis_H100_v5": ("eastus", "eastus2", "southcentralus", "westus3"),
    "Standard_NC8as_T4_v3": (
        "centralus",
        "eastus",
        "eastus2",
        "northcentralus",
        "southcentralus",
        "westus",
        "westus2",
        "westus3",
    ),
    "Standard_NC96ads_A100_v4": ("centralus", "eastus", "eastus2", "southcentralus", "westus", "westus2", "westus3"),
    "Standard_ND96amsr_A100_v4": ("eastus", "eastus2", "southcentralus"),
    "Standard_ND96asr_v4": ("eastus", "southcentralus", "westus2"),
    "Standard_ND96isr_H100_v5": ("eastus", "eastus2", "westus"),
}
"""Where SkyPilot's Azure catalog (catalogs/v6/azure/vms.csv at 098741e70562f65d7af1cceb81e33b284f742604, US regions
only) lists each GPU size of the size catalog, read from its rows (Standard_ND96isr_H200_v5 is in none)."""
AZURE_US_REGIONS = (
    "centralus",
    "eastus",
    "eastus2",
    "northcentralus",
    "southcentralus",
    "westcentralus",
    "westus",
    "westus2",
    "westus3",
)


def test_every_azure_gpu_size_is_priced_in_every_us_region_skypilot_lists_it() -> None:
    assert set(AZURE_V6_REGIONS) <= set(GPU_SIZES)
    listed = [(region, size) for size, regions in AZURE_V6_REGIONS.items() for region in regions]
    assert missing_prices(price_table(Cloud.AZURE), listed) == []


def test_an_azure_gpu_size_skypilot_does_not_list_in_a_us_region_says_why() -> None:
    table = price_table(Cloud.AZURE)
    skypilot = {region for region in AZURE_US_REGIONS if "skypilot-org" in table.provenance(region).source}
    assert skypilot == set(AZURE_US_REGIONS) - {"westcentralus"}  # westcentralus: no SkyPilot row, anycloud's
    for size in sorted(GPU_SIZES):
        for region in sorted(skypilot - set(AZURE_V6_REGIONS.get(size, ()))):
            # Not from SkyPilot: either priced from anycloud, with a footnote saying so, or unpriced with a reason.
            notes = table.footnotes(region, [size])
            if table.price(region, size) is not None:
                assert any("anycloud's catalog" in note for note in notes), (region, size, notes)
            else:
                reason = table.missing_reason(region, size)
                assert says_why(reason), (region, size, reason)


REFERENCE = import_vms_csv.REFERENCE_REGIONS
ON_DEMAND_BANDS = {Cloud.AWS: (0.6, 1.6), Cloud.AZURE: (0.5, 2.5)}
"""A region's Linux on-demand price over the reference region's for the same size, the importer's
bands (``gpupools.pricing.import_vms_csv.REGION_BANDS``). AWS: ap-south-1's (Mumbai) Graviton and
AMD sizes are the cheapest rows of SkyPilot's v8 catalog, 0.64x to 0.71x us-east-1, and the dearest
region-to-us-east-1 ratio among those rows is ap-east-1's (Hong Kong) g4dn and g5 sizes, 1.54x.
Azure: from 0.65x (centralindia's A100 sizes) to 2.09x (brazilsoutheast) in anycloud's catalog. A
row outside is a transcription or source error (a price per GPU instead of per node, per month)."""
SPOT_BAND = (0.05, 0.70)
"""Spot over on-demand: both clouds advertise Spot at up to 90 % off; a figure above 0.70x is
suspect of not being a Spot price, below 0.05x of a price per GPU or a unit error."""


def test_the_bands_are_the_importers() -> None:
    assert ON_DEMAND_BANDS == import_vms_csv.REGION_BANDS
    assert SPOT_BAND == import_vms_csv.SPOT_RATIO_BAND


@pytest.mark.parametrize("cloud", list(Cloud))
def test_every_row_is_within_the_bands_of_the_reference_region(cloud: Cloud) -> None:
    table = price_table(cloud)
    low, high = ON_DEMAND_BANDS[cloud]
    for region, sizes in table.prices.items():
        for size, price in sizes.items():
            reference = table.price(REFERENCE[cloud], size)
            if price.on_demand is not None and reference is not None and reference.on_demand is not None:
                assert low - 1e-6 <= price.on_demand / reference.on_demand <= high, (region, size)
            if price.on_demand is not None and price.spot is not None:
                # Outside the band: kept only flagged as doubtful, the flag naming the figure (issue 39).
                ratio = price.spot / price.on_demand
                doubt = table.doubtful.get(region, {}).get(size)
                assert SPOT_BAND[0] <= ratio <= SPOT_BAND[1] or (doubt and f"{price.spot}" in doubt), (region, size)

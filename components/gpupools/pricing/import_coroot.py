"""``python -m gpupools.pricing import-coroot FILE``: Azure prices for regions the refresh cannot read here.

The source is coroot's public price catalog (github.com/coroot/cloud-pricing, branch ``gh-pages``,
``data/cloud-pricing.json.gz``), built by its ``update.go`` from Infracost's price dump: per Azure
region and size one ``on_demand`` and one ``spot`` figure, USD per hour. That build keeps every
``Consumption`` and ``Spot`` meter of a size and the last one written wins, without dropping the
Windows and Low Priority meters, so a figure may be the Windows rate in one region and the Linux
rate in the next. Every row is therefore checked against the same size's Linux price in a
reference region of the committed table (``eastus``) before it is used:

* on-demand: ``row / reference`` must lie in ``ON_DEMAND_BAND`` (1.00 to 1.32). Azure's European
  Linux pay-as-you-go rates sit at 1.0x to 1.3x East US (northeurope about 1.11x to 1.20x, westeurope
  1.15x to 1.30x; the source's westeurope ND96asr_v4, NC40ads_H100_v5 and ND96isr_H100_v5 rows are
  exactly 1.30x). The Windows licence adds about 0.046 USD per vCPU-hour, which doubles a D-series
  rate and adds 35 % to 75 % to the T4 and A100 sizes, so those Windows rows fall above the band.
  Limit: on a 96-vCPU GPU size the licence adds only 5 % to 16 %, which the band cannot tell apart.
* Spot: rejected when it is not below the on-demand figure (the source's H100 rows carry the
  on-demand rate as Spot), and when ``spot / on_demand`` is outside ``SPOT_RATIO_BAND`` (0.05 to
  0.60: Azure Spot discounts run from about 40 % to 95 %; the accepted rows are at 0.05 to 0.13).
  A rejected Spot figure leaves the size with its on-demand price and no Spot price.

A rejected row leaves the size unpriced in that region, with the reason recorded in the table's
``unpriced``; an accepted region records its source, the source's date and the read date in
``regionSources``. Nothing here touches the network: download the file, then::

    python -m gpupools.pricing import-coroot cloud-pricing.json.gz --regions westeurope northeurope
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from gpupools import _cli as cli
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.catalog.prices import Price, PriceTable, RegionSource, price_table, table_path
from gpupools.specs import Cloud

SOURCE_COMMIT = "af03eada15b25d80863f2547ba281e71af9d5c91"
SOURCE_DATE = date(2024, 8, 9)
"""The ``gh-pages`` commit read and its date (the catalog was built that day)."""

SOURCE = (
    f"coroot/cloud-pricing (github.com/coroot/cloud-pricing), branch gh-pages, data/cloud-pricing.json.gz at commit "
    f"{SOURCE_COMMIT}, built from Infracost's price dump; each row checked against the eastus Linux price of the "
    "committed table (gpupools.pricing.import_coroot)"
)
REFERENCE_REGION = "eastus"
DEFAULT_REGIONS = ("westeurope", "northeurope")
ON_DEMAND_BAND = (1.00, 1.32)
CHECKED = (
    f"checked: coroot {SOURCE_COMMIT[:8]}; SkyPilot's Azure catalog (catalogs/v6/azure/vms.csv) covers US regions only; "
    "vantage-sh/ec2instances.info keeps no current Azure price file in its repository"
)
SPOT_RATIO_BAND = (0.05, 0.60)


@dataclass(frozen=True)
class RegionImport:
    """One region's outcome: the accepted prices and, per size, why it has no (or only a partial) price."""

    region: str
    prices: Mapping[str, Price]
    rejected: Mapping[str, str]


def check_row(size: str, row: Mapping[str, Any], reference: Price | None) -> tuple[Price | None, str | None]:
    """A source row -> (the price to keep or ``None``, the reason for what was dropped or ``None``)."""
    on_demand = row.get("on_demand")
    spot = row.get("spot")
    if reference is None or reference.on_demand is None:
        return None, f"no {REFERENCE_REGION} Linux price to check the coroot row against"
    if not on_demand:
        return None, "the coroot row has no on-demand figure"
    low, high = ON_DEMAND_BAND
    ratio = on_demand / reference.on_demand
    if not low <= ratio <= high:
        return None, (
            f"coroot row rejected: on-demand {on_demand} is {ratio:.2f}x the {REFERENCE_REGION} Linux price "
            f"{reference.on_demand}, outside {low:.2f}-{high:.2f}x (a Windows or other non-Linux rate)"
        )
    if not spot:
        return Price(on_demand, None), "coroot row has no Spot figure; on-demand kept"
    if spot >= on_demand:
        return Price(on_demand, None), (
            f"coroot Spot figure rejected: {spot} is not below on-demand {on_demand} (the source carries the "
            "on-demand rate as Spot for this size); on-demand kept"
        )
    spot_low, spot_high = SPOT_RATIO_BAND
    if not spot_low <= spot / on_demand <= spot_high:
        return Price(on_demand, None), (
            f"coroot Spot figure rejected: {spot} is {spot / on_demand:.2f}x on-demand, outside "
            f"{spot_low:.2f}-{spot_high:.2f}x; on-demand kept"
        )
    return Price(on_demand, spot), None


def import_region(
    region: str, rows: Mapping[str, Mapping[str, Any]], reference: Mapping[str, Price], sizes: Sequence[str]
) -> RegionImport:
    """Check every size of ``sizes`` in ``region``'s source ``rows`` against the ``reference`` region's prices."""
    prices: dict[str, Price] = {}
    rejected: dict[str, str] = {}
    for size in sorted(sizes):
        row = rows.get(size)
        if row is None:
            rejected[size] = f"no public source with a Linux price for {size} in {region} ({CHECKED})"
            continue
        price, reason = check_row(size, row, reference.get(size))
        if price is not None:
            prices[size] = price
        if reason is not None:
            rejected[size] = reason
    return RegionImport(region, prices, rejected)


def load_azure_rows(path: Path) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
    """region -> size -> row of the downloaded file (``.json.gz`` or ``.json``)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = json.loads(raw)
    compute: Mapping[str, Mapping[str, Mapping[str, Any]]] = data["azure"]["compute"]
    return compute


def apply(table: PriceTable, imports: Sequence[RegionImport], read_on: date) -> PriceTable:
    """``table`` with each imported region's rows, provenance and reasons replaced (other regions kept)."""
    prices = {region: dict(sizes) for region, sizes in table.prices.items()}
    region_sources = dict(table.region_sources)
    unpriced = {region: dict(sizes) for region, sizes in table.unpriced.items()}
    for result in imports:
        if not result.prices:
            raise ValueError(f"no row of {result.region} passed the checks; nothing to import")
        prices[result.region] = dict(result.prices)
        region_sources[result.region] = RegionSource(SOURCE, SOURCE_DATE, read_on)
        unpriced[result.region] = dict(result.rejected)
    return replace(table, prices=prices, region_sources=region_sources, unpriced={r: s for r, s in unpriced.items() if s})


def main(argv: Sequence[str] | None = None, today: date | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.pricing import-coroot", description=__doc__.split("\n")[0].replace("``", "")
    )
    parser.add_argument("file", type=Path, help="coroot's data/cloud-pricing.json.gz (or the unzipped .json)")
    parser.add_argument("--regions", nargs="+", default=list(DEFAULT_REGIONS), help="Azure regions to import")
    parser.add_argument("--dry-run", action="store_true", help="print the table instead of writing it")
    args = cli.parse_args(parser, sys.argv[1:] if argv is None else argv)
    table = price_table(Cloud.AZURE)
    reference = table.prices.get(REFERENCE_REGION)
    if reference is None:
        print(f"the Azure table has no {REFERENCE_REGION} prices to check against", file=sys.stderr)
        return 2
    rows = load_azure_rows(args.file)
    sizes = sorted({*GPU_SIZES, *CPU_SIZES})
    imports = [import_region(region, rows.get(region, {}), reference, sizes) for region in args.regions]
    try:
        new = apply(table, imports, today or date.today())
    except ValueError as error:
        print(f"import-coroot: {error}", file=sys.stderr)
        return 2
    text = json.dumps(new.to_json(), indent=1) + "\n"
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    table_path(Cloud.AZURE).write_text(text)
    for result in imports:
        spot_missing = sum(1 for p in result.prices.values() if p.spot is None)
        unpriced = len(set(result.rejected) - set(result.prices))
        print(f"{result.region}: {len(result.prices)} sizes priced ({spot_missing} without Spot), {unpriced} unpriced")
    return 0

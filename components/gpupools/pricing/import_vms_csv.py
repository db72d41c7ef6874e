"""``python -m gpupools.pricing import-vms-csv FILE``: prices from a catalog file in SkyPilot's ``vms.csv`` layout.

For regions the networked ``refresh`` cannot read here. Two public catalogs use the layout:
SkyPilot's (github.com/skypilot-org/skypilot-catalog, ``catalogs/<version>/<cloud>/vms.csv``) and
anycloud's (github.com/anycloud-sh/catalog, ``<cloud>/vms.csv``, the same columns). The columns
read are ``InstanceType``, ``Price`` (on-demand, USD per hour), ``SpotPrice``, ``Region`` and, in
AWS files, ``AvailabilityZone`` (an AZ ID: one row per zone). Per region and size:

* on-demand: the row's ``Price``; on AWS every zone's row carries the region's list price, and
  zones that disagree stop the import.
* Spot: on Azure the row's ``SpotPrice`` (the region's Spot retail meter). On AWS the median over
  the region's Availability Zones of each zone's ``SpotPrice``, Local Zones (AZ IDs with a location
  part, ``usw2-lax1-az1``) left out: they are priced apart and a node group's subnets are in the
  region's own zones. Either way a figure not below on-demand is not a Spot price
  (``gpupools.catalog.prices.is_spot_price``: sources repeat the on-demand rate where they have no
  Spot meter): such a size keeps its on-demand price and records why it has no Spot price. A figure
  below on-demand but outside ``SPOT_RATIO_BAND`` of it is doubtful: it is kept, and the table's
  ``doubtful`` records why, so estimates use it and flag it instead of losing the fleet's totals.
* a size without a row: "not offered in <region>" (the catalog lists what the cloud offers there).

The file is checked before anything is written:

* it carries Linux list prices: every size the file and the committed table both price in the
  reference region (``REFERENCE_REGIONS``: us-east-1, eastus), which the table prices from its own
  source, has the same on-demand figure there (``SAME_PRICE``). A Windows rate adds a licence per
  vCPU-hour (a D-series rate doubles), so a file of Windows or mixed meters fails here, as does one
  in another currency. A single region's rows cannot be told apart from Windows rows by their
  ratio, which is why the whole file is checked against a reference.
* every row's on-demand over the reference region's lies in ``REGION_BANDS`` (a gross error: a
  price per GPU or per month, a unit mix-up); a row outside leaves the size unpriced, with why.

Which regions: ``--regions``, default every region of the region catalog that the file lists and
the table either does not price or prices from a source collected before ``--source-date`` (the
newer source wins, and each region keeps one source). Which sizes: ``--sizes``, default every size
of the cloud's size catalogs; an imported region keeps its rows of other sizes only when they come
from a source of the same date (the same catalog), else the import stops and says so. A region of
the catalog that stays without a row and that the file does not list gets the reason that no
offline source lists it, naming this file as checked. ``--note`` instead adds the sizes a region's
own source lacks (or their Spot figure) to that region, footnoted, keeping its rows and provenance.

Nothing here touches the network: download the file, then (the Azure table's non-US regions)::

    python -m gpupools.pricing import-vms-csv vms.csv --cloud azure \\
        --source "anycloud-sh/catalog (github.com/anycloud-sh/catalog), azure/vms.csv at commit 62ff0a987e0c257a89235415d2877812fb1aaf29" \\
        --name "anycloud's catalog 62ff0a98" --source-date 2026-05-20
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from gpupools import _cli as cli
from gpupools.catalog.prices import Price, PriceTable, RegionSource, is_spot_price, price_table, table_path
from gpupools.catalog.regions import known_regions
from gpupools.pricing.refresh import sizes_of
from gpupools.specs import Cloud

REFERENCE_REGIONS = {Cloud.AWS: "us-east-1", Cloud.AZURE: "eastus"}
"""Where the file's rows are compared with the committed table (each table's own source prices it)."""

SAME_PRICE = 0.005
"""Two on-demand list prices are the same within this share (sources round to 3 to 6 decimals)."""

REGION_BANDS = {Cloud.AWS: (0.6, 1.6), Cloud.AZURE: (0.5, 2.5)}
"""A region's on-demand over the reference region's, same size. AWS, in SkyPilot's v8 catalog: the
cheapest rows are ap-south-1's (Mumbai) Graviton and AMD sizes at 0.64x to 0.71x us-east-1 (every
GPU size is at least its us-east-1 price), the dearest ap-east-1's (Hong Kong) g4dn and g5 sizes, 1.54x. Azure: Linux rates run from 0.65x
(centralindia's A100 sizes) to 2.09x (brazilsoutheast) East US in anycloud's May 2026 catalog; the
band catches unit errors, not Windows rates (see the module docstring)."""

SPOT_RATIO_BAND = (0.05, 0.70)
"""Spot over on-demand. Both clouds advertise Spot at up to 90 % off (aws.amazon.com/ec2/spot,
azure.microsoft.com/pricing/spot-advisor); a figure above 0.70x is suspect of not being a Spot
price (Spot capped at, or drifting to, the on-demand rate), one below 0.05x of a per-GPU or unit error."""

DOCS = "docs/costs.md"
"""Where the price sources and the refresh are described (named in every reason)."""

LOCAL_ZONE = re.compile(r"^[a-z]+\d-[a-z]+\d+-az\d+\Z")
"""An AWS Local Zone's AZ ID (``usw2-lax1-az1``); a region's own zones are ``usw2-az1``."""


@dataclass(frozen=True)
class Row:
    """One line of the file: a size in a region (and on AWS one zone)."""

    size: str
    region: str
    zone: str
    on_demand: float | None
    spot: float | None


@dataclass(frozen=True)
class RegionImport:
    """One region's outcome: the prices kept, per size why it has no (or no Spot) price, and per
    size whose kept Spot figure is doubtful, why (default: none)."""

    region: str
    prices: Mapping[str, Price]
    reasons: Mapping[str, str]
    doubtful: Mapping[str, str] = field(default_factory=dict)


def _figure(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    value = float(text)
    return value if value > 0 else None


def read_rows(path: Path) -> list[Row]:
    """The file's rows (a missing ``AvailabilityZone`` column, Azure's, reads as the empty zone)."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"InstanceType", "Price", "SpotPrice", "Region"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: not a vms.csv file (no {', '.join(sorted(missing))} column)")
        return [
            Row(
                size=line["InstanceType"],
                region=line["Region"],
                zone=line.get("AvailabilityZone") or "",
                on_demand=_figure(line["Price"]),
                spot=_figure(line["SpotPrice"]),
            )
            for line in reader
        ]


def region_price(cloud: Cloud, size: str, region: str, rows: Sequence[Row]) -> tuple[Price | None, str | None]:
    """One size in one region from its rows -> (the price or ``None``, why it lacks one or its Spot
    figure, or, when the price keeps a Spot figure outside ``SPOT_RATIO_BAND``, why that figure is doubtful)."""
    if cloud is Cloud.AWS:
        rows = [row for row in rows if not LOCAL_ZONE.match(row.zone)]
    listed = sorted({row.on_demand for row in rows if row.on_demand is not None})
    if not listed:
        return None, f"no on-demand price for {size} in {region} in the source"
    if len(listed) > 1:
        raise ValueError(f"{size} in {region}: the source's zones disagree on the on-demand price ({listed})")
    on_demand = listed[0]
    figures = [row.spot for row in rows if row.spot is not None and is_spot_price(on_demand, row.spot)]
    if not figures:
        return Price(on_demand, None), (
            f"no Spot price for {size} in {region}: the source has no Spot figure below on-demand {on_demand} there"
        )
    spot = round(statistics.median(figures), 6) if cloud is Cloud.AWS else figures[0]
    low, high = SPOT_RATIO_BAND
    if not low <= spot / on_demand <= high:
        # Kept, flagged: dropping it blanks every fleet figure of a stack that uses the size (issue 39).
        return Price(on_demand, spot), (
            f"the source's Spot figure {spot} is {spot / on_demand:.2f}x on-demand {on_demand}, outside {low:.2f}-{high:.2f}x"
        )
    return Price(on_demand, spot), None


def import_region(
    cloud: Cloud, region: str, rows: Mapping[str, Sequence[Row]], reference: Mapping[str, Price], sizes: Sequence[str]
) -> RegionImport:
    """Every size of ``sizes`` in ``region`` from its ``rows`` (size -> rows), each checked against ``reference``."""
    prices: dict[str, Price] = {}
    reasons: dict[str, str] = {}
    doubtful: dict[str, str] = {}
    low, high = REGION_BANDS[cloud]
    for size in sorted(sizes):
        if size not in rows:
            reasons[size] = f"not offered in {region}: the source lists no {size} there"
            continue
        price, reason = region_price(cloud, size, region, rows[size])
        base = reference.get(size)
        if price is not None and price.on_demand is not None and base is not None and base.on_demand is not None:
            ratio = price.on_demand / base.on_demand
            if not low - 1e-6 <= ratio <= high:
                reason = (
                    f"source row rejected: on-demand {price.on_demand} is {ratio:.2f}x the "
                    f"{REFERENCE_REGIONS[cloud]} price {base.on_demand}, outside {low:.2f}-{high:.2f}x"
                )
                price = None
        if price is not None:
            prices[size] = price
        if reason is not None and price is not None and price.spot is not None:
            doubtful[size] = reason
        elif reason is not None:
            reasons[size] = reason
    return RegionImport(region, prices, reasons, doubtful)


def check_reference(cloud: Cloud, table: PriceTable, rows: Mapping[str, Sequence[Row]]) -> None:
    """Raise ``ValueError`` unless the file's reference-region on-demand prices are the table's (see module docstring)."""
    region = REFERENCE_REGIONS[cloud]
    reference = table.prices.get(region, {})
    compared, differ = 0, []
    for size, price in sorted(reference.items()):
        if size not in rows or price.on_demand is None:
            continue
        theirs, _ = region_price(cloud, size, region, rows[size])
        if theirs is None or theirs.on_demand is None:
            continue
        compared += 1
        if abs(theirs.on_demand - price.on_demand) > SAME_PRICE * price.on_demand:
            differ.append(f"{size} {theirs.on_demand} (table: {price.on_demand})")
    if not compared:
        raise ValueError(f"the file has no {region} row of a size the table prices there, so it cannot be checked")
    if differ:
        raise ValueError(
            f"the file's {region} on-demand prices are not the table's Linux list prices for {len(differ)} of "
            f"{compared} sizes (a Windows or other rate?): {', '.join(differ[:5])}"
        )


def default_regions(table: PriceTable, listed: set[str], source_date: date) -> list[str]:
    """Regions of the catalog the file lists that the table leaves unpriced or prices from an older source."""
    return sorted(
        region
        for region in known_regions(table.cloud) & listed
        if region not in table.prices or table.provenance(region).source_date < source_date
    )


def apply_noted(table: PriceTable, imports: Sequence[RegionImport], note: str, complete: bool = False) -> PriceTable:
    """``table`` with each import's sizes added where the region has no row for them, or a row
    without a Spot price, each with ``note`` (where its figures come from); the regions' own
    provenance and rows are kept. Only sizes with both prices are added; an imported size that
    stays without a row records the import's reason. For regions whose own source lacks sizes.
    ``complete``: the imports covered every size of the catalog, so every size of their regions now
    has a row or its own reason, and the regions' ``unpriced_regions`` entries go (default: kept)."""
    prices = {region: dict(rows) for region, rows in table.prices.items()}
    unpriced = {region: dict(reasons) for region, reasons in table.unpriced.items()}
    notes = {region: dict(sizes) for region, sizes in table.notes.items()}
    unpriced_regions = dict(table.unpriced_regions)
    doubtful = {region: dict(sizes) for region, sizes in table.doubtful.items()}
    for result in imports:
        if complete:
            unpriced_regions.pop(result.region, None)
        if result.region not in table.prices:
            raise ValueError(f"{result.region} has no rows to add a noted size to; import the region without --note")
        own = prices[result.region]
        for size, price in result.prices.items():
            if price.spot is None or (size in own and own[size].spot is not None):
                continue
            own[size] = price
            unpriced.get(result.region, {}).pop(size, None)
            notes.setdefault(result.region, {})[size] = note
            if size in result.doubtful:
                doubtful.setdefault(result.region, {})[size] = result.doubtful[size]
        for size, reason in result.reasons.items():
            if size not in own:
                unpriced.setdefault(result.region, {})[size] = reason
    return replace(
        table,
        prices=prices,
        unpriced={r: s for r, s in unpriced.items() if s},
        unpriced_regions=unpriced_regions,
        notes=notes,
        doubtful={r: s for r, s in doubtful.items() if s},
    )


def apply(
    table: PriceTable,
    imports: Sequence[RegionImport],
    origin: RegionSource,
    sizes: Sequence[str],
    checked: str,
    catalog: Sequence[str] = (),
    listed: Collection[str] = (),
) -> PriceTable:
    """``table`` with each import's region rows, reasons and provenance (``origin``). Every catalog
    region still without a row and not ``listed`` in the file gets the reason that no offline source
    lists it, ``checked`` naming the file (the newest source read). An imported region keeps its
    ``unpriced_regions`` reason while a size of ``catalog`` (the cloud's sizes) has neither a row nor
    a reason of its own there."""
    prices = {region: dict(rows) for region, rows in table.prices.items()}
    region_sources = dict(table.region_sources)
    unpriced = {region: dict(reasons) for region, reasons in table.unpriced.items()}
    unpriced_regions = dict(table.unpriced_regions)
    doubtful = {region: dict(sizes) for region, sizes in table.doubtful.items()}
    for result in imports:
        if not result.prices:
            raise ValueError(f"no row of {result.region} passed the checks; nothing to import")
        kept = {size: price for size, price in prices.get(result.region, {}).items() if size not in sizes}
        if kept and table.provenance(result.region).source_date != origin.source_date:
            raise ValueError(
                f"{result.region}'s rows of {', '.join(sorted(kept)[:3])}... come from another source "
                f"({table.provenance(result.region).source_date}); import every size of the region, or none"
            )
        prices[result.region] = {**kept, **result.prices}
        region_sources[result.region] = origin
        reasons = {size: why for size, why in unpriced.get(result.region, {}).items() if size not in sizes}
        unpriced[result.region] = {**reasons, **result.reasons}
        kept_doubts = {size: why for size, why in doubtful.get(result.region, {}).items() if size not in sizes}
        doubtful[result.region] = {**kept_doubts, **result.doubtful}
        if set(prices[result.region]) | set(unpriced[result.region]) >= set(catalog):
            unpriced_regions.pop(result.region, None)  # every size has a row or its own reason
    for region in known_regions(table.cloud) - set(prices) - set(listed):
        unpriced_regions[region] = f"no offline source lists {region} (checked: {checked}); refresh to price it ({DOCS})"
    return replace(
        table,
        prices=prices,
        region_sources=region_sources,
        unpriced={region: reasons for region, reasons in unpriced.items() if reasons},
        unpriced_regions=unpriced_regions,
        doubtful={region: sizes for region, sizes in doubtful.items() if sizes},
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gpupools.pricing import-vms-csv",
        description=(__doc__ or "").split("\n")[0].replace("``", ""),
    )
    parser.add_argument("file", type=Path, help="a catalog file in SkyPilot's vms.csv layout")
    parser.add_argument("--cloud", required=True, choices=[cloud.value for cloud in Cloud])
    parser.add_argument("--source", required=True, help="the file as a reader can find it (repository, path, commit)")
    parser.add_argument("--name", help="the source in a few words, for reasons (default: --source)")
    parser.add_argument("--source-date", required=True, type=date.fromisoformat, help="when the source collected its figures")
    parser.add_argument("--regions", nargs="+", help="regions to import (default: see the module docstring)")
    parser.add_argument("--sizes", nargs="+", help="sizes to import (default: every size of the size catalogs)")
    parser.add_argument(
        "--note",
        help="add sizes to regions priced from another source, with this note on where they come from "
        "(for sizes the region's own source lacks, or lacks a Spot figure for)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the table instead of writing it")
    return cli.parse_args(parser, sys.argv[1:] if argv is None else argv)


def main(argv: Sequence[str] | None = None, today: date | None = None) -> int:
    args = parse_args(argv)
    cloud = Cloud(args.cloud)
    table = price_table(cloud)
    try:
        rows = read_rows(args.file)
        by_region: dict[str, dict[str, list[Row]]] = {}
        for row in rows:
            by_region.setdefault(row.region, {}).setdefault(row.size, []).append(row)
        check_reference(cloud, table, by_region.get(REFERENCE_REGIONS[cloud], {}))
        catalog = sizes_of(cloud)
        sizes = sorted(args.sizes or catalog)
        unknown = sorted(set(sizes) - set(catalog)) + sorted(set(args.regions or ()) - known_regions(cloud))
        if unknown:
            raise ValueError(f"not in the {cloud.value} size or region catalog: {', '.join(unknown)}")
        regions = args.regions or default_regions(table, set(by_region), args.source_date)
        reference = table.prices[REFERENCE_REGIONS[cloud]]
        imports = [import_region(cloud, region, by_region.get(region, {}), reference, sizes) for region in regions]
        origin = RegionSource(args.source, args.source_date, today or date.today())
        if args.note:
            note = f"{args.note} ({args.name or args.source}, {args.source_date.isoformat()})"
            new = apply_noted(table, imports, note, complete=set(sizes) >= set(catalog))
        else:
            checked = f"{args.name or args.source} ({args.source_date.isoformat()})"
            new = apply(table, imports, origin, sizes, checked, catalog, set(by_region))
    except ValueError as error:
        print(f"import-vms-csv: {error}", file=sys.stderr)
        return 2
    text = json.dumps(new.to_json(), indent=1) + "\n"
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    table_path(cloud).write_text(text)
    for result in imports:
        no_spot = sum(1 for price in result.prices.values() if price.spot is None)
        print(
            f"{result.region}: {len(result.prices)} sizes priced ({no_spot} without Spot, {len(result.doubtful)} with a "
            f"doubtful Spot figure kept), {len(sizes) - len(result.prices)} unpriced"
        )
    return 0

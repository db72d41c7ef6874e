"""Hourly prices per region and size: Linux on-demand and Spot, in USD; on AWS also the EKS Auto Mode fee.

What every cost figure and the priority expander's price order are computed from. One table per
cloud, stored as JSON beside this module (``prices_aws.json``, ``prices_azure.json``) and rebuilt
by ``python -m gpupools.pricing refresh`` from the clouds' own price sources. Each table says
where its figures come from (``source``), when they were read (``read_on``) and what its Spot
figure is (``spot_basis``): on-demand prices are list prices and change rarely; Spot prices move
with supply and demand, so a Spot figure is an observation, never a quote.

A size or region missing from a table has no price: estimates show "no price (reason)" for it (the
reason recorded in ``unpriced`` for the size, else in ``unpriced_regions`` for the region: every
region of the region catalog, ``gpupools.catalog.regions``, is either priced or has a recorded
reason) and say how to refresh (``REFRESH_HINT``); nothing fails because of it unless a budget
must be checked. ``PriceTable.footnotes`` gives those reasons as short footnotes, one per reason.

A Spot figure equal to or above the on-demand figure is not a Spot price (a source that has no
Spot meter for a size often repeats the on-demand rate there): ``table_from_json`` drops it and
records why (``not_spot_reason``), and ``tests/test_price_catalog_coverage.py`` keeps the committed
tables free of such rows. A Spot figure below on-demand but outside the importer's plausibility band
(``gpupools.pricing.import_vms_csv.SPOT_RATIO_BAND``: westeurope's T4 Spot meter at 0.72x on-demand)
is **kept and flagged**, not dropped: the row carries it and ``doubtful`` says why it is doubtful, so
every estimate uses it and says so (``PriceTable.doubtful_notes``).

An AWS row may also carry the **EKS Auto Mode management fee** of the size in the region
(``Price.auto_mode_fee``, JSON ``autoModeFee``, USD per node-hour): what AWS charges per instance
launched by Auto Mode on top of its EC2 price ("The amount varies with the instance type launched and
the AWS region", EKS User Guide, ``eks-compute``). ``refresh --cloud aws`` reads it from the AWS
Price List (``gpupools.pricing.aws_price_list``); the key is optional, and a row without it has no
known fee (``PriceTable.auto_mode_fee`` is ``None``): estimates then say the fee is not included,
never count it as 0 (``gpupools.pricing.estimate``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from gpupools.specs import Cloud

NOT_OFFERED = "not offered in "
"""How a recorded reason starts when the source lists the region but not the size in it
(``gpupools.pricing.import_vms_csv``, the importer of both tables' offline sources)."""

HOURS_PER_MONTH = 730
"""Hours in an average month (8,760 / 12): the convention both clouds' price pages and calculators use."""

MAX_AGE_DAYS = 90
"""A table older than this fails ``tests/test_prices.py``: Spot prices and new sizes drift in a quarter."""

REFRESH_HINT = "python -m gpupools.pricing refresh --cloud {cloud}"
"""The command that rebuilds a cloud's table (see docs/costs.md)."""

TABLE_FILES = {Cloud.AWS: "prices_aws.json", Cloud.AZURE: "prices_azure.json"}

SPOT_TOLERANCE = 1e-5
"""A Spot figure within this share of on-demand counts as equal to it: sources round one of the two
(SkyPilot's p4d.24xlarge rows: on-demand 30.09784, "Spot" 30.0978)."""


def is_spot_price(on_demand: float | None, spot: float | None) -> bool:
    """Whether ``spot`` can be a Spot price: known, and below a known on-demand price (``SPOT_TOLERANCE``)."""
    return spot is not None and on_demand is not None and spot < on_demand * (1 - SPOT_TOLERANCE)


def not_spot_reason(size: str, region: str, on_demand: float, spot: float) -> str:
    """Why a source's Spot figure was dropped (``is_spot_price`` is false)."""
    return f"no Spot price for {size} in {region}: the source's Spot figure {spot} is not below on-demand {on_demand}, so it is not a Spot price"


@dataclass(frozen=True)
class Price:
    """One size in one region, USD per node-hour; ``None`` where the source had no figure.

    ``auto_mode_fee``: the EKS Auto Mode management fee of the size in the region (AWS only), on top
    of the EC2 price whether the node is Spot or on-demand; ``None`` when unknown (module docstring).
    """

    on_demand: float | None
    spot: float | None
    auto_mode_fee: float | None = None


@dataclass(frozen=True)
class RegionSource:
    """Where one region's rows come from when that is not the table's own ``source``.

    Attributes:
        source: the source named as a reader can find it (repository, path, commit).
        source_date: when the source collected its figures (a Spot price is an observation of that day).
        read_on: when gpupools read the source.
    """

    source: str
    source_date: date
    read_on: date


@dataclass(frozen=True)
class PriceTable:
    """A cloud's prices: region -> size -> ``Price``, with their provenance.

    Attributes:
        cloud: the cloud the prices belong to.
        source: where the figures come from (API, endpoint, filters).
        read_on: the date they were read from the source.
        spot_basis: what the Spot figure is (AWS: the median over a window of the Spot price
            history across the region's zones; Azure: the Spot retail meter).
        prices: region -> size -> price.
        region_sources: region -> ``RegionSource`` for the regions whose rows come from another
            source than ``source`` (default: none).
        unpriced: region -> size -> why the size has no price there (a source row rejected by a
            check, or no public source), for sizes a stack may name (default: none).
        unpriced_regions: region -> why a size of that region without a row and a reason of its own
            has no price (a region no offline source covers, or one imported only in part); with
            ``prices`` it covers every region of the region catalog (default: none).
        notes: region -> size -> where that priced size's figures come from when it is not the
            region's source (a size whose Spot rows the region's source lacks, taken from another
            version of the same catalog); shown as a footnote like a missing price's reason
            (default: none).
        doubtful: region -> size -> why that size's Spot figure (kept in ``prices``) is doubtful:
            outside the importer's band of Spot over on-demand. Estimates use the figure and flag
            it (``doubtful_notes``) rather than drop it and lose the fleet's totals (default: none).
    """

    cloud: Cloud
    source: str
    read_on: date
    spot_basis: str
    prices: Mapping[str, Mapping[str, Price]]
    region_sources: Mapping[str, RegionSource] = field(default_factory=dict)
    unpriced: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    unpriced_regions: Mapping[str, str] = field(default_factory=dict)
    notes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    doubtful: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def doubtful_notes(self, region: str, sizes: Sequence[str]) -> list[str]:
        """One line per size of ``sizes`` whose Spot figure in ``region`` is kept but doubtful:
        ``<size>: <why>`` (the why names the figure), in the order given."""
        flagged = self.doubtful.get(normalize_region(region), {})
        out = []
        for size in dict.fromkeys(sizes):
            price = self.price(region, size)
            if size in flagged and price is not None and price.spot is not None:
                out.append(f"{size}: {flagged[size]}")
        return out

    def not_offered(self, region: str, size: str) -> str | None:
        """Why ``size`` is not offered in ``region`` when the table's source says so (its recorded
        reason starts ``not offered in``: the source lists the region, and no such size in it);
        ``None`` when the size has a row there or nothing is known (a region no source covers)."""
        key = normalize_region(region)
        if size in self.prices.get(key, {}):
            return None
        reason = self.unpriced.get(key, {}).get(size)
        return reason if reason is not None and reason.startswith(NOT_OFFERED) else None

    def regions_listing(self, size: str) -> list[str]:
        """The regions whose rows price ``size`` (what the source lists), sorted."""
        return sorted(region for region, rows in self.prices.items() if size in rows)

    def price(self, region: str, size: str) -> Price | None:
        """The price of ``size`` in ``region`` (Azure regions in any case or spacing: ``East US`` is ``eastus``)."""
        return self.prices.get(normalize_region(region), {}).get(size)

    def auto_mode_fee(self, region: str, size: str) -> float | None:
        """The EKS Auto Mode fee of ``size`` in ``region``, USD per node-hour; ``None`` when the
        table does not hold it (module docstring)."""
        price = self.price(region, size)
        return None if price is None else price.auto_mode_fee

    def provenance(self, region: str) -> RegionSource:
        """Where ``region``'s figures come from: its own ``RegionSource``, else the table's source
        (whose figures were collected when they were read)."""
        own = self.region_sources.get(normalize_region(region))
        return own if own is not None else RegionSource(self.source, self.read_on, self.read_on)

    def missing_reason(self, region: str, size: str) -> str:
        """Why ``size`` has no price in ``region``: the recorded reason, else what is missing."""
        key = normalize_region(region)
        recorded = self.unpriced.get(key, {}).get(size)
        if recorded is not None:
            return recorded
        region_reason = self.unpriced_regions.get(key)
        if region_reason is not None and size not in self.prices.get(key, {}):
            return region_reason
        if key not in self.prices:
            return f"region {key} is not in the {self.cloud.value} price catalog"
        return f"{size} has no row for {key} in the price catalog's source"

    def footnotes(self, region: str, sizes: Sequence[str]) -> list[str]:
        """One short footnote per distinct reason why a size of ``sizes`` lacks a price (either
        capacity type) in ``region``, or has a note on its source (``notes``): ``<sizes>: <reason>``,
        the sizes sharing it named once, in the order first met. What synth prints under its table
        instead of a reason in every row."""
        by_reason: dict[str, list[str]] = {}
        noted = self.notes.get(normalize_region(region), {})
        for size in dict.fromkeys(sizes):
            note = noted.get(size)
            if note is not None:
                by_reason.setdefault(note, []).append(size)
            price = self.price(region, size)
            if price is not None and price.on_demand is not None and price.spot is not None:
                continue
            by_reason.setdefault(self.missing_reason(region, size), []).append(size)
        return [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()]

    def notes_for(self, region: str, sizes: Sequence[str]) -> list[str]:
        """The ``notes`` of ``sizes`` in ``region`` (priced from another source than the region's),
        as ``footnotes`` words them: one per distinct note, ``<sizes>: <note>``."""
        noted = self.notes.get(normalize_region(region), {})
        by_note: dict[str, list[str]] = {}
        for size in dict.fromkeys(sizes):
            if size in noted:
                by_note.setdefault(noted[size], []).append(size)
        return [f"{', '.join(names)}: {note}" for note, names in by_note.items()]

    def to_json(self) -> dict[str, Any]:
        """The table as stored (sorted, so a refresh diff shows only what changed)."""
        return {
            "cloud": self.cloud.value,
            "source": self.source,
            "readOn": self.read_on.isoformat(),
            "spotBasis": self.spot_basis,
            "regions": {
                region: {size: _row_json(price) for size, price in sorted(self.prices[region].items())}
                for region in sorted(self.prices)
            },
            **(
                {
                    "regionSources": {
                        region: {
                            "source": origin.source,
                            "sourceDate": origin.source_date.isoformat(),
                            "readOn": origin.read_on.isoformat(),
                        }
                        for region, origin in sorted(self.region_sources.items())
                    }
                }
                if self.region_sources
                else {}
            ),
            **(
                {"unpriced": {region: dict(sorted(sizes.items())) for region, sizes in sorted(self.unpriced.items())}}
                if self.unpriced
                else {}
            ),
            **({"unpricedRegions": dict(sorted(self.unpriced_regions.items()))} if self.unpriced_regions else {}),
            **(
                {"notes": {region: dict(sorted(sizes.items())) for region, sizes in sorted(self.notes.items())}}
                if self.notes
                else {}
            ),
            **(
                {"doubtful": {region: dict(sorted(sizes.items())) for region, sizes in sorted(self.doubtful.items()) if sizes}}
                if any(self.doubtful.values())
                else {}
            ),
        }


def normalize_region(region: str) -> str:
    """``East US`` / ``eastus`` / ``us-east-1`` -> the form the tables key on (lower case, no spaces)."""
    return region.replace(" ", "").lower()


def _optional_price(value: Any) -> float | None:
    return None if value is None else float(value)


def _row_json(price: Price) -> dict[str, float | None]:
    """One stored row: ``onDemand`` and ``spot``, and ``autoModeFee`` only when known (so tables
    without fees are stored as before)."""
    row = {"onDemand": price.on_demand, "spot": price.spot}
    if price.auto_mode_fee is not None:
        row["autoModeFee"] = price.auto_mode_fee
    return row


def table_from_json(data: Mapping[str, Any]) -> PriceTable:
    """Parse a stored table (the inverse of ``PriceTable.to_json``). A Spot figure that is not
    below on-demand (``is_spot_price``) is dropped, with its reason added to ``unpriced``."""
    unpriced = {region: dict(sizes) for region, sizes in (data.get("unpriced") or {}).items()}
    regions = {}
    for region, sizes in data["regions"].items():
        rows = {}
        for size, row in sizes.items():
            on_demand, spot = _optional_price(row.get("onDemand")), _optional_price(row.get("spot"))
            if spot is not None and on_demand is not None and not is_spot_price(on_demand, spot):
                unpriced.setdefault(region, {}).setdefault(size, not_spot_reason(size, region, on_demand, spot))
                spot = None
            rows[size] = Price(on_demand=on_demand, spot=spot, auto_mode_fee=_optional_price(row.get("autoModeFee")))
        regions[region] = MappingProxyType(rows)
    return PriceTable(
        cloud=Cloud(data["cloud"]),
        source=str(data["source"]),
        read_on=date.fromisoformat(data["readOn"]),
        spot_basis=str(data["spotBasis"]),
        prices=MappingProxyType(regions),
        region_sources=MappingProxyType(
            {
                region: RegionSource(
                    source=str(origin["source"]),
                    source_date=date.fromisoformat(origin["sourceDate"]),
                    read_on=date.fromisoformat(origin["readOn"]),
                )
                for region, origin in (data.get("regionSources") or {}).items()
            }
        ),
        unpriced=MappingProxyType({region: MappingProxyType(sizes) for region, sizes in unpriced.items()}),
        unpriced_regions=MappingProxyType(dict(data.get("unpricedRegions") or {})),
        notes=MappingProxyType({region: MappingProxyType(dict(sizes)) for region, sizes in (data.get("notes") or {}).items()}),
        doubtful=MappingProxyType(
            {region: MappingProxyType(dict(sizes)) for region, sizes in (data.get("doubtful") or {}).items()}
        ),
    )


def table_path(cloud: Cloud) -> Path:
    return Path(__file__).with_name(TABLE_FILES[cloud])


@cache
def price_table(cloud: Cloud) -> PriceTable:
    """The committed table of ``cloud`` (read once per process)."""
    return table_from_json(json.loads(table_path(cloud).read_text()))

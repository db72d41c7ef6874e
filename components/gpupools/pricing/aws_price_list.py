"""AWS prices: on-demand from the Price List Query API, Spot from the Spot price history.

* On-demand: ``pricing:GetProducts`` (service code ``AmazonEC2``; the API is served from us-east-1,
  eu-central-1 and ap-south-1 and answers for every region), filtered to Linux, shared tenancy, no
  pre-installed software, license "No License required" and capacity status ``Used`` (the plain
  on-demand instance-hour, not reservations' unused capacity). ``PriceList`` is a list of JSON
  *strings*, each one product: ``product.attributes.instanceType`` and ``terms.OnDemand.<offer>.
  priceDimensions.<rate>.pricePerUnit.USD`` with ``unit`` ``Hrs``. Paged with ``NextToken``.
  (AWS Price List Query API, "GetProducts"; the shapes are the botocore ``pricing`` service model's.)
* Spot: ``ec2:DescribeSpotPriceHistory`` for ``Linux/UNIX`` over a window (default 7 days), paged
  with ``NextToken``. The history lists price *changes* per zone, so each zone's figure is the
  time-weighted median of the price over the window, and the region's figure the median of its
  zones' figures: what a pool spread over the region's zones pays, not its luckiest zone. Zone
  names map to different physical zones in each account, so the table keeps the region figure only.

Both need AWS credentials (``pricing:GetProducts``, ``ec2:DescribeSpotPriceHistory``); the refresh
command uses boto3 (the ``pricing`` extra).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from gpupools.catalog.prices import Price
from gpupools.pricing.azure_retail import PriceSourceError

PRICING_REGION = "us-east-1"
"""Where the Price List Query API is called (it serves every region's prices)."""

LINUX_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "licenseModel": "No License required",
    "capacitystatus": "Used",
}

SPOT_PRODUCT = "Linux/UNIX"
DEFAULT_SPOT_DAYS = 7


def get_products_filters(region: str, instance_type: str | None = None) -> list[dict[str, str]]:
    """``Filters`` for ``GetProducts``: one region's Linux on-demand instance-hours."""
    filters = {"regionCode": region, **LINUX_FILTERS}
    if instance_type:
        filters["instanceType"] = instance_type
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in filters.items()]


def on_demand_from_price_list(price_list: Iterable[str], sizes: Iterable[str]) -> dict[str, float]:
    """Per instance type of ``sizes``: the on-demand USD hourly price from ``PriceList`` entries.

    Raises:
        PriceSourceError: a product whose hourly rate is not in USD per ``Hrs``.
    """
    wanted = set(sizes)
    prices: dict[str, float] = {}
    for raw in price_list:
        product = json.loads(raw)
        size = product.get("product", {}).get("attributes", {}).get("instanceType")
        if size not in wanted:
            continue
        for offer in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in offer.get("priceDimensions", {}).values():
                if dimension.get("unit") != "Hrs":
                    raise PriceSourceError(f"{size}: unit {dimension.get('unit')!r}, expected Hrs")
                usd = dimension.get("pricePerUnit", {}).get("USD")
                if usd is None:
                    raise PriceSourceError(f"{size}: no USD price in {dimension.get('pricePerUnit')}")
                value = float(usd)
                if value > 0:
                    prices[str(size)] = value
    return prices


def time_weighted_median(changes: Sequence[tuple[datetime, float]], start: datetime, end: datetime) -> float | None:
    """The median of a step function over ``[start, end]``: each price weighted by how long it held.

    ``changes`` are (timestamp, new price) of one zone in any order; a change before ``start`` sets
    the price at ``start``.
    """
    ordered = sorted(changes)
    spans: list[tuple[float, float]] = []
    for index, (at, price) in enumerate(ordered):
        until = ordered[index + 1][0] if index + 1 < len(ordered) else end
        seconds = (min(until, end) - max(at, start)).total_seconds()
        if seconds > 0:
            spans.append((price, seconds))
    if not spans:
        return None
    spans.sort()
    half = sum(seconds for _, seconds in spans) / 2
    held = 0.0
    for price, seconds in spans:
        held += seconds
        if held >= half:
            return price
    return spans[-1][0]


def spot_from_history(history: Iterable[Mapping[str, Any]], start: datetime, end: datetime) -> dict[str, float]:
    """Per instance type: the median over zones of each zone's time-weighted median Spot price."""
    by_zone: dict[tuple[str, str], list[tuple[datetime, float]]] = {}
    for record in history:
        if record.get("ProductDescription") != SPOT_PRODUCT:
            continue
        stamp = record["Timestamp"]
        if isinstance(stamp, str):
            stamp = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        key = (str(record["InstanceType"]), str(record["AvailabilityZone"]))
        by_zone.setdefault(key, []).append((stamp, float(record["SpotPrice"])))
    per_type: dict[str, list[float]] = {}
    for (size, _zone), changes in by_zone.items():
        figure = time_weighted_median(changes, start, end)
        if figure is not None:
            per_type.setdefault(size, []).append(figure)
    return {size: round(statistics.median(values), 6) for size, values in sorted(per_type.items())}


def merge(on_demand: Mapping[str, float], spot: Mapping[str, float], sizes: Iterable[str]) -> dict[str, Price]:
    """One ``Price`` per size that has either figure."""
    return {
        size: Price(on_demand=on_demand.get(size), spot=spot.get(size))
        for size in sorted(sizes)
        if size in on_demand or size in spot
    }


def fetch_region(
    region: str, sizes: Sequence[str], session: Any, days: int = DEFAULT_SPOT_DAYS, now: datetime | None = None
) -> dict[str, Price]:
    """Both figures for ``sizes`` in ``region`` through a boto3 ``session`` (credentials needed)."""
    pricing = session.client("pricing", region_name=PRICING_REGION)
    price_list: list[str] = []
    for page in pricing.get_paginator("get_products").paginate(
        ServiceCode="AmazonEC2", Filters=get_products_filters(region), FormatVersion="aws_v1"
    ):
        price_list.extend(page["PriceList"])
    end = now or datetime.now(timezone.utc)
    start = end - timedelta(days=days)
    ec2 = session.client("ec2", region_name=region)
    history: list[Mapping[str, Any]] = []
    for page in ec2.get_paginator("describe_spot_price_history").paginate(
        InstanceTypes=list(sizes), ProductDescriptions=[SPOT_PRODUCT], StartTime=start, EndTime=end
    ):
        history.extend(page["SpotPriceHistory"])
    return merge(on_demand_from_price_list(price_list, sizes), spot_from_history(history, start, end), sizes)

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

* EKS Auto Mode fee: ``pricing:GetProducts`` again, service code ``AmazonEKS``, filtered to the
  region (``regionCode``) and ``operation`` ``EKSAutoUsage``: one product per instance type Auto Mode
  launches in the region, ``product.attributes.instancetype`` (lowercase key; ``instanceType`` is
  accepted too) and ``eksproducttype`` ``AutoMode``, its hourly rate under ``terms.OnDemand`` as
  above. The field names are those two tools read from the same Price List:
  vantage-sh/ec2instances.info @ 4ef36cd ``scraper/aws/ec2/eks_auto_mode.go`` (the ``AmazonEKS``
  offer, ``eksproducttype == "AutoMode"``, ``attrs["instancetype"]``, one OnDemand offer with one
  price dimension per product) and awslabs/eks-node-viewer @ a410d6f ``pkg/aws/pricing.go``
  (GetProducts with ``ServiceCode: "AmazonEKS"`` and the ``operation``/``regionCode`` filters). The
  unit string was not seen in a captured response: ``Hrs``, ``hours`` and ``Hours`` are accepted (the
  hourly units those tools and ksctl's parser accept), anything else is refused. The fee applies to
  Spot nodes too: eks-node-viewer adds it to Spot and on-demand nodes alike, and ec2instances.info
  says it "is independent of the EC2 purchase option"; no AWS statement on Spot was found.

All need AWS credentials (``pricing:GetProducts``, ``ec2:DescribeSpotPriceHistory``); the refresh
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

EKS_SERVICE_CODE = "AmazonEKS"
"""The Price List offer that holds the EKS Auto Mode fee (not ``AmazonEC2``)."""
AUTO_MODE_OPERATION = "EKSAutoUsage"
"""``operation`` of the Auto Mode fee's products (eks-node-viewer's GetProducts filter)."""
AUTO_MODE_PRODUCT_TYPE = "AutoMode"
"""``eksproducttype`` of the Auto Mode fee's products (ec2instances.info; ``HybridNodes`` is another)."""
HOURLY_UNITS = ("Hrs", "hours", "Hours")
"""The units an hourly Auto Mode rate may carry (module docstring)."""


def get_products_filters(region: str, instance_type: str | None = None) -> list[dict[str, str]]:
    """``Filters`` for ``GetProducts``: one region's Linux on-demand instance-hours."""
    filters = {"regionCode": region, **LINUX_FILTERS}
    if instance_type:
        filters["instanceType"] = instance_type
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in filters.items()]


def auto_mode_filters(region: str) -> list[dict[str, str]]:
    """``Filters`` for ``GetProducts`` on ``AmazonEKS``: one region's Auto Mode fee products."""
    filters = {"regionCode": region, "operation": AUTO_MODE_OPERATION}
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in filters.items()]


def is_auto_mode_product(attributes: Mapping[str, Any]) -> bool:
    """An ``AmazonEKS`` product is an Auto Mode fee: ``eksproducttype`` ``AutoMode`` where the
    product has that attribute, else ``operation`` ``EKSAutoUsage``."""
    kind = attributes.get("eksproducttype")
    if kind is not None:
        return bool(kind == AUTO_MODE_PRODUCT_TYPE)
    return bool(attributes.get("operation") == AUTO_MODE_OPERATION)


def auto_mode_fees_from_price_list(price_list: Iterable[str], sizes: Iterable[str]) -> dict[str, float]:
    """Per instance type of ``sizes``: the EKS Auto Mode fee in USD per hour from ``AmazonEKS``
    ``PriceList`` entries (other EKS products, other sizes and zero rates are left out). A size
    without an entry has no fee known (Auto Mode may not launch it in the region).

    Raises:
        PriceSourceError: a rate not per hour (``HOURLY_UNITS``), not in USD, or two different
            rates for one size.
    """
    wanted = set(sizes)
    fees: dict[str, float] = {}
    for raw in price_list:
        product = json.loads(raw)
        attributes = product.get("product", {}).get("attributes", {})
        if not is_auto_mode_product(attributes):
            continue
        size = attributes.get("instancetype", attributes.get("instanceType"))
        if size not in wanted:
            continue
        for offer in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in offer.get("priceDimensions", {}).values():
                unit = dimension.get("unit")
                if unit not in HOURLY_UNITS:
                    raise PriceSourceError(f"{size} Auto Mode fee: unit {unit!r}, expected one of {', '.join(HOURLY_UNITS)}")
                usd = dimension.get("pricePerUnit", {}).get("USD")
                if usd is None:
                    raise PriceSourceError(f"{size} Auto Mode fee: no USD price in {dimension.get('pricePerUnit')}")
                value = float(usd)
                if value <= 0:
                    continue
                seen = fees.get(str(size))
                if seen is not None and seen != value:
                    raise PriceSourceError(f"{size}: two Auto Mode fees in one region, {seen} and {value}")
                fees[str(size)] = value
    return fees


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


def merge(
    on_demand: Mapping[str, float],
    spot: Mapping[str, float],
    sizes: Iterable[str],
    auto_mode_fees: Mapping[str, float] | None = None,
) -> dict[str, Price]:
    """One ``Price`` per size that has any figure (``auto_mode_fees``: default none)."""
    fees = auto_mode_fees or {}
    return {
        size: Price(on_demand=on_demand.get(size), spot=spot.get(size), auto_mode_fee=fees.get(size))
        for size in sorted(sizes)
        if size in on_demand or size in spot or size in fees
    }


def price_list(pricing: Any, service_code: str, filters: list[dict[str, str]]) -> list[str]:
    """Every ``PriceList`` entry of ``GetProducts`` for ``service_code`` and ``filters``, all pages."""
    entries: list[str] = []
    for page in pricing.get_paginator("get_products").paginate(ServiceCode=service_code, Filters=filters, FormatVersion="aws_v1"):
        entries.extend(page["PriceList"])
    return entries


def fetch_region(
    region: str, sizes: Sequence[str], session: Any, days: int = DEFAULT_SPOT_DAYS, now: datetime | None = None
) -> dict[str, Price]:
    """The on-demand and Spot prices and the EKS Auto Mode fee of ``sizes`` in ``region``, through a
    boto3 ``session`` (credentials needed)."""
    pricing = session.client("pricing", region_name=PRICING_REGION)
    ec2_products = price_list(pricing, "AmazonEC2", get_products_filters(region))
    eks_products = price_list(pricing, EKS_SERVICE_CODE, auto_mode_filters(region))
    end = now or datetime.now(timezone.utc)
    start = end - timedelta(days=days)
    ec2 = session.client("ec2", region_name=region)
    history: list[Mapping[str, Any]] = []
    for page in ec2.get_paginator("describe_spot_price_history").paginate(
        InstanceTypes=list(sizes), ProductDescriptions=[SPOT_PRODUCT], StartTime=start, EndTime=end
    ):
        history.extend(page["SpotPriceHistory"])
    return merge(
        on_demand_from_price_list(ec2_products, sizes),
        spot_from_history(history, start, end),
        sizes,
        auto_mode_fees_from_price_list(eks_products, sizes),
    )

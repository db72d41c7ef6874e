"""The refresh command's parsers, against responses shaped as the documented APIs return them.

* Azure Retail Prices API: pages ``{"BillingCurrency", "CustomerEntityId", "CustomerEntityType",
  "Items", "NextPageLink", "Count"}`` (Microsoft Learn, "Azure Retail Prices overview": response
  format, pagination through ``NextPageLink``). The recorded items below carry every field the
  documented example item has.
* AWS: ``pricing:GetProducts`` and ``ec2:DescribeSpotPriceHistory`` served through botocore's
  ``Stubber``, which checks both the request parameters and the recorded responses against the
  services' own models (botocore ``data/pricing`` and ``data/ec2``), paging with ``NextToken``.
* The EKS Auto Mode fee's ``AmazonEKS`` products (``eks_product``): no AWS example response for them
  is public, so their shape follows the two tools that read them from the same Price List,
  vantage-sh/ec2instances.info @ 4ef36cd (``scraper/aws/ec2/eks_auto_mode.go`` and its test fixture:
  ``eksproducttype`` ``AutoMode``, lowercase ``instancetype``, ``regionCode``, one OnDemand offer with
  one price dimension, unit ``hours``) and awslabs/eks-node-viewer @ a410d6f (``pkg/aws/pricing.go``:
  ``ServiceCode`` ``AmazonEKS``, ``operation`` ``EKSAutoUsage``). The fee figures below are made up.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.error import URLError

import botocore.session
import pytest
from botocore.stub import Stubber
from gpupools.catalog.prices import Price, price_table, table_from_json
from gpupools.pricing import aws_price_list, azure_retail, refresh
from gpupools.pricing.azure_retail import PriceSourceError
from gpupools.specs import Cloud

# --- Azure ---------------------------------------------------------------------------------------


def meter(size: str, price: float, *, spot: bool = False, windows: bool = False, **changes: Any) -> dict[str, Any]:
    """One item as the Retail Prices API returns it (fields of the documented example)."""
    series = size.removeprefix("Standard_")
    sku = series.replace("_", " ") + (" Spot" if spot else "")
    item = {
        "currencyCode": "USD",
        "tierMinimumUnits": 0.0,
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": "eastus",
        "location": "US East",
        "effectiveStartDate": "2025-01-01T00:00:00Z",
        "meterId": "00000000-0000-0000-0000-000000000000",
        "meterName": sku,
        "productId": "DZH318Z0BQ4L",
        "skuId": "DZH318Z0BQ4L/00G1",
        "productName": "Virtual Machines NCasT4_v3 Series" + (" Windows" if windows else ""),
        "skuName": sku,
        "serviceName": "Virtual Machines",
        "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "isPrimaryMeterRegion": True,
        "armSkuName": size,
    }
    item.update(changes)
    return item


T4 = "Standard_NC4as_T4_v3"
PAGE_1 = {
    "BillingCurrency": "USD",
    "CustomerEntityId": "Default",
    "CustomerEntityType": "Retail",
    "Items": [
        meter(T4, 0.526),
        meter(T4, 0.0526, spot=True),
        meter(T4, 0.9, windows=True),
        meter(T4, 0.4, type="DevTestConsumption"),
        meter(T4, 0.1, skuName="NC4as T4 v3 Low Priority", meterName="NC4as T4 v3 Low Priority"),
    ],
    "NextPageLink": "https://prices.azure.com/api/retail/prices?$filter=...&$skip=1000",
    "Count": 5,
}
PAGE_2 = {
    "BillingCurrency": "USD",
    "CustomerEntityId": "Default",
    "CustomerEntityType": "Retail",
    "Items": [
        # A newer Spot meter replaces the older one; another size is ignored unless asked for.
        meter(T4, 0.06, spot=True, effectiveStartDate="2026-10-01T00:00:00Z"),
        meter("Standard_D4s_v5", 0.192),
        meter(T4, 99.0, unitOfMeasure="1/Month"),
    ],
    "NextPageLink": None,
    "Count": 3,
}


def recorded(url: str) -> dict[str, Any]:
    return PAGE_2 if "$skip=1000" in url else PAGE_1


def test_azure_pages_are_followed_and_only_linux_hourly_consumption_counts() -> None:
    seen: list[str] = []

    def fetch(url: str) -> dict[str, Any]:
        seen.append(url)
        return recorded(url)

    prices = azure_retail.region_prices("eastus", [T4], fetch)
    assert prices == {T4: Price(on_demand=0.526, spot=0.06)}
    assert len(seen) == 2 and "armRegionName%20eq%20%27eastus%27" in seen[0]
    assert "priceType%20eq%20%27Consumption%27" in seen[0] and "currencyCode=USD" in seen[0]


def test_azure_other_currency_is_refused() -> None:
    with pytest.raises(PriceSourceError, match="EUR"):
        azure_retail.parse_items([meter(T4, 0.5, currencyCode="EUR")], [T4])


def test_azure_a_page_without_items_is_refused() -> None:
    with pytest.raises(PriceSourceError, match="no Items"):
        list(azure_retail.pages("https://example.invalid", lambda url: {"error": "throttled"}))


# --- AWS -----------------------------------------------------------------------------------------


def product(size: str, usd: str, unit: str = "Hrs") -> str:
    """One ``PriceList`` entry: a JSON string, as GetProducts returns it."""
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": size,
                    "regionCode": "us-west-2",
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                },
                "sku": "ABCDEFGH12345678",
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    "ABCDEFGH12345678.JRTCKXETXF": {
                        "priceDimensions": {
                            "ABCDEFGH12345678.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": unit,
                                "pricePerUnit": {"USD": usd},
                                "description": f"$ per On Demand Linux {size} Instance Hour",
                            }
                        },
                        "sku": "ABCDEFGH12345678",
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def eks_product(
    size: str,
    usd: str,
    unit: str = "hours",
    key: str = "instancetype",
    product_type: str | None = "AutoMode",
    operation: str = "EKSAutoUsage",
) -> str:
    """One ``AmazonEKS`` ``PriceList`` entry of the Auto Mode fee (the module docstring says whose
    field names it follows); ``product_type`` None leaves ``eksproducttype`` out."""
    attributes = {key: size, "regionCode": "us-west-2", "operation": operation}
    if product_type is not None:
        attributes["eksproducttype"] = product_type
    return json.dumps(
        {
            "product": {"productFamily": "Compute", "attributes": attributes, "sku": "EKSAUTO123456789"},
            "serviceCode": "AmazonEKS",
            "terms": {
                "OnDemand": {
                    "EKSAUTO123456789.JRTCKXETXF": {
                        "priceDimensions": {
                            "EKSAUTO123456789.JRTCKXETXF.6YS6EN2CT7": {"unit": unit, "pricePerUnit": {"USD": usd}}
                        },
                        "sku": "EKSAUTO123456789",
                        "offerTermCode": "JRTCKXETXF",
                    }
                }
            },
        }
    )


NOW = datetime(2026, 11, 23, tzinfo=timezone.utc)


def spot(size: str, zone: str, price: str, hours_ago: float) -> dict[str, Any]:
    return {
        "AvailabilityZone": zone,
        "InstanceType": size,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": price,
        "Timestamp": NOW - timedelta(hours=hours_ago),
    }


class StubbedSession:
    """A boto3-like session handing out botocore clients with ``Stubber``s of recorded responses."""

    def __init__(self) -> None:
        core = botocore.session.get_session()
        self.pricing = core.create_client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        self.ec2 = core.create_client("ec2", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
        self.stubs = [Stubber(self.pricing), Stubber(self.ec2)]

    def client(self, name: str, region_name: str) -> Any:
        return {"pricing": self.pricing, "ec2": self.ec2}[name]


def test_aws_on_demand_and_spot_from_paged_responses() -> None:
    session = StubbedSession()
    pricing_stub, ec2_stub = session.stubs
    filters = aws_price_list.get_products_filters("us-west-2")
    base = {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1"}
    pricing_stub.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [product("g5.xlarge", "1.0060000000")], "NextToken": "page-2"},
        base,
    )
    pricing_stub.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [product("g4dn.xlarge", "0.5260000000"), product("x9.huge", "9")]},
        {**base, "NextToken": "page-2"},
    )
    # The Auto Mode fees: the second GetProducts query, on AmazonEKS (made-up figures), paged as well.
    eks = {"ServiceCode": "AmazonEKS", "Filters": aws_price_list.auto_mode_filters("us-west-2"), "FormatVersion": "aws_v1"}
    pricing_stub.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [eks_product("g5.xlarge", "0.1200000000")], "NextToken": "e2"},
        eks,
    )
    pricing_stub.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [eks_product("x9.huge", "1"), eks_product("g4dn.xlarge", "0.0", unit="Hrs")]},
        {**eks, "NextToken": "e2"},
    )
    start = NOW - timedelta(days=7)
    request = {
        "InstanceTypes": ["g4dn.xlarge", "g5.xlarge"],
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": start,
        "EndTime": NOW,
    }
    # Zone a: 0.40 for the first 6 days, 0.60 for the last day -> median 0.40. Zone b: 0.50 all week.
    ec2_stub.add_response(
        "describe_spot_price_history",
        {"SpotPriceHistory": [spot("g5.xlarge", "us-west-2a", "0.600000", 24)], "NextToken": "more"},
        request,
    )
    ec2_stub.add_response(
        "describe_spot_price_history",
        {
            "SpotPriceHistory": [
                spot("g5.xlarge", "us-west-2a", "0.400000", 24 * 8),
                spot("g5.xlarge", "us-west-2b", "0.500000", 24 * 9),
            ],
            "NextToken": "",
        },
        {**request, "NextToken": "more"},
    )
    for stub in session.stubs:
        stub.activate()
    prices = aws_price_list.fetch_region("us-west-2", ["g4dn.xlarge", "g5.xlarge"], session, days=7, now=NOW)
    for stub in session.stubs:
        stub.assert_no_pending_responses()
    # Median over zones of (0.40, 0.50); g4dn.xlarge's zero fee is no fee.
    assert prices == {"g4dn.xlarge": Price(0.526, None), "g5.xlarge": Price(1.006, 0.45, auto_mode_fee=0.12)}
    assert {f["Field"]: f["Value"] for f in eks["Filters"]} == {"regionCode": "us-west-2", "operation": "EKSAutoUsage"}


def test_time_weighted_median_weights_by_duration() -> None:
    start, end = NOW - timedelta(days=7), NOW
    changes = [(start - timedelta(days=1), 1.0), (end - timedelta(days=2), 3.0), (end - timedelta(days=1), 2.0)]
    # 1.0 held 5 days, 3.0 one day, 2.0 one day: the median hour is priced 1.0.
    assert aws_price_list.time_weighted_median(changes, start, end) == 1.0
    assert aws_price_list.time_weighted_median([(end - timedelta(days=6), 2.0), (start, 1.0)], start, end) == 2.0
    assert aws_price_list.time_weighted_median([], start, end) is None


def test_aws_price_in_another_unit_is_refused() -> None:
    with pytest.raises(PriceSourceError, match="Hrs"):
        aws_price_list.on_demand_from_price_list([product("g5.xlarge", "1.0", unit="Quantity")], ["g5.xlarge"])


def test_auto_mode_fees_are_read_from_auto_mode_products_only() -> None:
    entries = [
        eks_product("g5.xlarge", "0.1207000000"),
        eks_product("g6.xlarge", "0.0966000000", key="instanceType", unit="Hrs"),  # the camel-case key too
        eks_product("g4dn.xlarge", "0.0631000000", product_type=None),  # no eksproducttype: operation decides
        eks_product("m6i.xlarge", "0.0230000000", product_type="HybridNodes"),  # another EKS product
        eks_product("m7i.2xlarge", "0.0480000000", product_type=None, operation="HybridNodesUsage"),
        eks_product("p5.48xlarge", "5.0000000000"),  # not asked for
        eks_product("m6a.2xlarge", "0.0000000000"),  # a zero rate is no fee
    ]
    sizes = ["g5.xlarge", "g6.xlarge", "g4dn.xlarge", "m6i.xlarge", "m7i.2xlarge", "m6a.2xlarge"]
    fees = aws_price_list.auto_mode_fees_from_price_list(entries, sizes)
    assert fees == {"g5.xlarge": 0.1207, "g6.xlarge": 0.0966, "g4dn.xlarge": 0.0631}


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (eks_product("g5.xlarge", "0.12", unit="Quantity"), "unit 'Quantity'"),
        (eks_product("g5.xlarge", "0.12", unit="Mos"), "unit 'Mos'"),
    ],
)
def test_an_auto_mode_fee_not_per_hour_is_refused(entry: str, words: str) -> None:
    with pytest.raises(PriceSourceError, match=words):
        aws_price_list.auto_mode_fees_from_price_list([entry], ["g5.xlarge"])


def test_an_auto_mode_fee_without_usd_or_with_two_rates_is_refused() -> None:
    cny = json.loads(eks_product("g5.xlarge", "0.12"))
    dimension = next(iter(next(iter(cny["terms"]["OnDemand"].values()))["priceDimensions"].values()))
    dimension["pricePerUnit"] = {"CNY": "0.86"}
    with pytest.raises(PriceSourceError, match="no USD"):
        aws_price_list.auto_mode_fees_from_price_list([json.dumps(cny)], ["g5.xlarge"])
    with pytest.raises(PriceSourceError, match="two Auto Mode fees"):
        aws_price_list.auto_mode_fees_from_price_list(
            [eks_product("g5.xlarge", "0.12"), eks_product("g5.xlarge", "0.13")], ["g5.xlarge"]
        )


# --- the command ---------------------------------------------------------------------------------


def test_refresh_without_network_fails_clearly_and_keeps_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    before = refresh.table_path(Cloud.AZURE).read_text()

    def offline(region: str, sizes: Any) -> Any:
        raise URLError("[Errno -3] Temporary failure in name resolution")

    assert refresh.main(["refresh", "--cloud", "azure"], reader=offline) == 2
    err = capsys.readouterr().err
    assert "price refresh failed for azure" in err and "name resolution" in err and "unchanged" in err
    assert refresh.table_path(Cloud.AZURE).read_text() == before


def test_refresh_dry_run_prints_a_table_dated_today_with_every_region(capsys: pytest.CaptureFixture[str]) -> None:
    def reader(region: str, sizes: Any) -> Any:
        assert T4 in sizes and "Standard_D4s_v5" in sizes  # GPU and CPU/system sizes are priced
        return {T4: Price(0.5, 0.05)}

    today = date(2026, 11, 23)
    assert refresh.main(["refresh", "--cloud", "azure", "--regions", "eastus", "westeurope", "--dry-run"], reader, today) == 0
    table = table_from_json(json.loads(capsys.readouterr().out))
    assert table.read_on == today and sorted(table.prices) == ["eastus", "westeurope"]
    assert table.price("West Europe", T4) == Price(0.5, 0.05)
    assert "Retail Prices API" in table.source


def test_refresh_dry_run_writes_aws_auto_mode_fees(capsys: pytest.CaptureFixture[str]) -> None:
    def reader(region: str, sizes: Any) -> Any:
        return {"g5.xlarge": Price(1.006, 0.45, auto_mode_fee=0.12), "g4dn.xlarge": Price(0.526, 0.2)}

    assert refresh.main(["refresh", "--cloud", "aws", "--regions", "us-west-2", "--dry-run"], reader, date(2026, 11, 23)) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["regions"]["us-west-2"]["g5.xlarge"] == {"onDemand": 1.006, "spot": 0.45, "autoModeFee": 0.12}
    assert data["regions"]["us-west-2"]["g4dn.xlarge"] == {"onDemand": 0.526, "spot": 0.2}  # no key without a fee
    table = table_from_json(data)
    assert table.auto_mode_fee("us-west-2", "g5.xlarge") == 0.12 and table.auto_mode_fee("us-west-2", "g4dn.xlarge") is None
    assert "AmazonEKS" in table.source


def test_the_committed_tables_round_trip() -> None:
    for cloud in Cloud:
        path: Path = refresh.table_path(cloud)
        assert json.loads(path.read_text()) == price_table(cloud).to_json()

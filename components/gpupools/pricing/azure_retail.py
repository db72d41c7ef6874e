"""The Azure Retail Prices API: Linux pay-as-you-go and Spot hourly prices per VM size and region.

API: ``GET https://prices.azure.com/api/retail/prices`` (Microsoft Learn, "Azure Retail Prices
overview"; no credentials). The response is a JSON page ``{"BillingCurrency", "CustomerEntityId",
"CustomerEntityType", "Items": [...], "NextPageLink", "Count"}``; ``NextPageLink`` is the URL of the
next page and ``null`` on the last. Each item is one meter: ``armSkuName`` (``Standard_NC4as_T4_v3``),
``armRegionName`` (``eastus``), ``retailPrice``, ``currencyCode``, ``unitOfMeasure`` (``1 Hour``),
``type`` (``Consumption``, ``Reservation``, ``DevTestConsumption``), ``productName`` (``Virtual
Machines NCasT4_v3 Series``; Windows meters end in ``Windows``), ``skuName``/``meterName`` (Spot
meters end in ``Spot``, the retired low-priority meters in ``Low Priority``), ``effectiveStartDate``.
Filter values are case-sensitive since API version 2023-01-01-preview.

Azure's Spot retail meter is the price Spot VMs are billed at in that region (Microsoft Learn,
"Azure Spot Virtual Machines", Pricing: "Pricing for Azure Spot Virtual Machines is variable, based
on region and SKU"), read at the time of the refresh.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from gpupools.catalog.prices import Price

RETAIL_PRICES_URL = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
HOURLY = "1 Hour"

Fetch = Callable[[str], Mapping[str, Any]]
"""Reads one page: URL -> the decoded JSON response."""


class PriceSourceError(RuntimeError):
    """A price source answered with something the parser does not accept (currency, unit, shape)."""


def first_page_url(region: str) -> str:
    """The query for every Linux and Windows VM consumption meter of ``region`` (Windows ones are
    dropped while parsing: the API has no operating-system field to filter on)."""
    query = {
        "api-version": API_VERSION,
        "currencyCode": "USD",
        "$filter": f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and priceType eq 'Consumption'",
    }
    return f"{RETAIL_PRICES_URL}?{urllib.parse.urlencode(query, quote_via=urllib.parse.quote)}"


def http_fetch(url: str, timeout: float = 60.0) -> Mapping[str, Any]:
    """GET ``url`` and decode its JSON (``urllib``; raises ``OSError`` when the network is unreachable)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "gpupools-pricing"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def pages(url: str, fetch: Fetch, max_pages: int = 1000) -> Iterator[Mapping[str, Any]]:
    """Every page from ``url``, following ``NextPageLink`` until it is empty."""
    next_url: str | None = url
    for _ in range(max_pages):
        if not next_url:
            return
        page = fetch(next_url)
        if not isinstance(page.get("Items"), list):
            raise PriceSourceError(f"unexpected response from {next_url}: no Items list")
        yield page
        next_url = page.get("NextPageLink")
    raise PriceSourceError(f"more than {max_pages} pages from {url}: stopping")


def is_linux_hourly(item: Mapping[str, Any]) -> bool:
    """A pay-as-you-go Linux meter billed per hour (Windows, low-priority and other units excluded)."""
    return (
        item.get("type") == "Consumption"
        and item.get("unitOfMeasure") == HOURLY
        and not str(item.get("productName", "")).endswith("Windows")
        and "Low Priority" not in str(item.get("skuName", ""))
    )


def parse_items(items: Iterable[Mapping[str, Any]], sizes: Iterable[str]) -> dict[str, Price]:
    """Per size of ``sizes`` found in ``items``: its on-demand and Spot hourly price in USD.

    The newest meter (``effectiveStartDate``) wins where a size has several of one kind.

    Raises:
        PriceSourceError: a wanted meter priced in another currency.
    """
    wanted = set(sizes)
    found: dict[tuple[str, bool], tuple[str, float]] = {}
    for item in items:
        size = item.get("armSkuName")
        if size not in wanted or not is_linux_hourly(item):
            continue
        if item.get("currencyCode") != "USD":
            raise PriceSourceError(f"{size}: price in {item.get('currencyCode')}, expected USD")
        spot = str(item.get("skuName", "")).endswith("Spot")
        key = (str(size), spot)
        start = str(item.get("effectiveStartDate", ""))
        if key not in found or start >= found[key][0]:
            found[key] = (start, float(item["retailPrice"]))
    prices: dict[str, Price] = {}
    for size in sorted({size for size, _ in found}):
        regular_meter = found.get((size, False))
        spot_meter = found.get((size, True))
        prices[size] = Price(on_demand=regular_meter[1] if regular_meter else None, spot=spot_meter[1] if spot_meter else None)
    return prices


def region_prices(region: str, sizes: Iterable[str], fetch: Fetch = http_fetch) -> dict[str, Price]:
    """Every page of ``region``'s VM meters, parsed for ``sizes``."""
    items = (item for page in pages(first_page_url(region), fetch) for item in page["Items"])
    return parse_items(items, sizes)

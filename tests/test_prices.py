"""The committed price catalog: fresh, covering the example stacks, and plausible.

Plausible means: near the public list prices below, which are the clouds' published Linux
pay-as-you-go rates for these sizes (AWS EC2 On-Demand pricing page, us-east-1 and us-west-2 share
them; Azure Linux Virtual Machines pricing page, East US), as docs/costs.md states
them. They are typed here independently of the catalog, so a table refreshed from a wrong source,
in another currency or unit, or mis-parsed, fails.
"""

from __future__ import annotations

from datetime import date

import pytest
from gpupools import config
from gpupools.catalog.prices import MAX_AGE_DAYS, REFRESH_HINT, price_table
from gpupools.specs import Cloud
from gpupools.testing import stack_config

LIST_PRICES = {
    (Cloud.AWS, "us-west-2"): {
        "g4dn.xlarge": 0.526,
        "g5.xlarge": 1.006,
        "g6.xlarge": 0.8048,
        "g5.12xlarge": 5.672,
        "g6.12xlarge": 4.6016,
        "m6i.xlarge": 0.192,
        "m6i.2xlarge": 0.384,
        "m7i.2xlarge": 0.4032,
        "m6a.2xlarge": 0.3456,
    },
    (Cloud.AZURE, "eastus"): {
        "Standard_NC4as_T4_v3": 0.526,
        "Standard_NC24ads_A100_v4": 3.673,
        "Standard_D4s_v5": 0.192,
        "Standard_D8s_v5": 0.384,
    },
}
TOLERANCE = 0.15
"""List prices rarely move; 15 % allows for a repricing without letting a wrong unit or currency through."""


@pytest.mark.parametrize("cloud", list(Cloud))
def test_tables_are_fresh(cloud: Cloud) -> None:
    table = price_table(cloud)
    age = (date.today() - table.read_on).days
    assert age <= MAX_AGE_DAYS, (
        f"the {cloud.value} price table was read {age} days ago ({table.read_on}); "
        f"refresh it: {REFRESH_HINT.format(cloud=cloud.value)}"
    )


@pytest.mark.parametrize("cloud", list(Cloud))
def test_tables_say_where_and_when(cloud: Cloud) -> None:
    table = price_table(cloud)
    assert table.source and table.spot_basis and "Spot prices move" in table.spot_basis
    assert table.prices, "at least one region"
    assert all(table.prices.values()), "no empty region: a region is listed only with prices"


@pytest.mark.parametrize("stack", ["azure-dev", "aws-dev"])
def test_every_size_of_the_example_stacks_is_priced_in_its_region(stack: str) -> None:
    raw = stack_config(stack)
    region = raw.get("aws:region") or raw["azure-native:location"]
    spec = config.parse(raw, region=region)
    table = price_table(spec.cloud)
    sizes = {*spec.system_pool.instance_types, *(t for pool in spec.pools for t in pool.instance_types)}
    for size in sorted(sizes):
        price = table.price(region, size)
        assert price is not None and price.on_demand is not None, f"{size} in {region}"
        assert price.spot is not None and 0 < price.spot <= price.on_demand, f"{size}: Spot {price.spot}"


@pytest.mark.parametrize(("key", "sizes"), list(LIST_PRICES.items()), ids=lambda v: str(v[1]) if isinstance(v, tuple) else "")
def test_catalog_is_near_the_public_list_prices(key: tuple[Cloud, str], sizes: dict[str, float]) -> None:
    cloud, region = key
    table = price_table(cloud)
    for size, list_price in sizes.items():
        price = table.price(region, size)
        assert price is not None and price.on_demand is not None, size
        assert abs(price.on_demand - list_price) <= TOLERANCE * list_price, f"{size}: {price.on_demand} vs {list_price}"


def test_provenance_and_missing_reasons_round_trip_through_json() -> None:
    from datetime import date

    from gpupools.catalog.prices import Price, PriceTable, RegionSource, table_from_json
    from gpupools.specs import Cloud

    table = PriceTable(
        cloud=Cloud.AZURE,
        source="table source",
        read_on=date(2026, 11, 23),
        spot_basis="meter",
        prices={"eastus": {"A": Price(1.0, 0.1)}, "westeurope": {"A": Price(1.2, 0.12)}},
        region_sources={"westeurope": RegionSource("other source @ abc", date(2024, 8, 1), date(2026, 11, 24))},
        unpriced={"westeurope": {"B": "row rejected: Windows rate"}},
    )
    again = table_from_json(table.to_json())
    assert again == table_from_json(again.to_json())
    assert again.provenance("West Europe") == RegionSource("other source @ abc", date(2024, 8, 1), date(2026, 11, 24))
    assert again.provenance("eastus") == RegionSource("table source", date(2026, 11, 23), date(2026, 11, 23))
    assert again.missing_reason("westeurope", "B") == "row rejected: Windows rate"
    assert "not in the azure price catalog" in again.missing_reason("japaneast", "A")
    assert "no row for westeurope" in again.missing_reason("westeurope", "C")


def test_auto_mode_fees_round_trip_and_a_table_without_them_is_stored_as_before() -> None:
    from datetime import date

    from gpupools.catalog.prices import Price, PriceTable, table_from_json
    from gpupools.specs import Cloud

    def aws(rows: dict[str, Price]) -> PriceTable:
        return PriceTable(cloud=Cloud.AWS, source="s", read_on=date(2026, 11, 23), spot_basis="b", prices={"us-west-2": rows})

    with_fee = aws({"g5.xlarge": Price(1.0, 0.4, auto_mode_fee=0.1), "g4dn.xlarge": Price(0.5, 0.2)})
    stored = with_fee.to_json()
    assert stored["regions"]["us-west-2"] == {
        "g4dn.xlarge": {"onDemand": 0.5, "spot": 0.2},
        "g5.xlarge": {"onDemand": 1.0, "spot": 0.4, "autoModeFee": 0.1},
    }
    again = table_from_json(stored)
    assert again.auto_mode_fee("us-west-2", "g5.xlarge") == 0.1
    assert again.auto_mode_fee("us-west-2", "g4dn.xlarge") is None
    assert again.auto_mode_fee("us-west-2", "p5.48xlarge") is None  # no row at all
    assert again.auto_mode_fee("eu-west-1", "g5.xlarge") is None  # no region
    assert again.to_json() == stored
    # Without fees: rows of two keys, as every table stored before fees existed.
    plain = aws({"g4dn.xlarge": Price(0.5, 0.2)}).to_json()
    assert plain["regions"]["us-west-2"] == {"g4dn.xlarge": {"onDemand": 0.5, "spot": 0.2}}
    assert table_from_json(plain).price("us-west-2", "g4dn.xlarge") == Price(0.5, 0.2, None)

"""The European Azure prices imported from coroot's catalog, their checks, and the sizes no source prices.

Expected values are worked out here from the issue's figures and Azure's public Linux rates, not
copied from the importer's output: eastus NC4as_T4_v3 Linux is 0.526 USD/h (the Windows rate, 0.71,
is 1.35x that); westeurope D4s_v5 Linux is 0.23 (1.20x eastus 0.192), northeurope's coroot 0.398 is
the Windows rate (2.07x).
"""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

import pytest
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.catalog.prices import Price, price_table, table_from_json
from gpupools.pricing import import_coroot
from gpupools.pricing.import_coroot import check_row, import_region
from gpupools.specs import Cloud

EU_BAND = (1.00, 1.32)
"""Azure EU Linux list prices against East US: 1.0x to 1.3x (westeurope GPU sizes are 1.30x)."""
EUROPE = ("westeurope", "northeurope")
AZURE_SIZES = sorted({*GPU_SIZES, *CPU_SIZES})


def test_the_band_is_the_documented_one() -> None:
    assert import_coroot.ON_DEMAND_BAND == EU_BAND
    assert import_coroot.SPOT_RATIO_BAND == (0.05, 0.60)


def test_check_rejects_a_windows_rate() -> None:
    price, reason = check_row("Standard_NC4as_T4_v3", {"on_demand": 0.71, "spot": 0.062699}, Price(0.526, 0.062699))
    assert price is None
    assert reason is not None and "1.35x" in reason and "0.526" in reason


def test_check_rejects_a_rate_below_the_us_linux_price() -> None:
    price, reason = check_row("X", {"on_demand": 0.09, "spot": 0.01}, Price(0.1, 0.01))
    assert price is None and reason is not None and "0.90x" in reason


def test_check_drops_a_spot_figure_equal_to_on_demand_and_keeps_on_demand() -> None:
    # westeurope NC40ads_H100_v5: 9.08 = 1.30 x 6.98, and Spot 9.08 (the source's H100 flaw)
    price, reason = check_row("Standard_NC40ads_H100_v5", {"on_demand": 9.08, "spot": 9.08}, Price(6.98, 6.98))
    assert price == Price(9.08, None)
    assert reason is not None and "not below on-demand" in reason


def test_check_drops_an_implausible_spot_discount() -> None:
    price, reason = check_row("Standard_D4s_v5", {"on_demand": 0.23, "spot": 0.2}, Price(0.192, 0.02112))
    assert price == Price(0.23, None)
    assert reason is not None and "0.87x" in reason


def test_check_accepts_a_plausible_linux_row() -> None:
    assert check_row("Standard_D4s_v5", {"on_demand": 0.23, "spot": 0.0253}, Price(0.192, 0.02112)) == (Price(0.23, 0.0253), None)


def test_check_needs_a_reference() -> None:
    price, reason = check_row("Standard_D4s_v6", {"on_demand": 0.2, "spot": 0.05}, None)
    assert price is None and reason is not None and "eastus" in reason


def test_import_region_prices_checks_and_explains_every_size() -> None:
    rows = {"A": {"on_demand": 1.2, "spot": 0.12}, "B": {"on_demand": 2.0, "spot": 0.1}}
    reference = {"A": Price(1.0, 0.1), "B": Price(1.0, 0.1), "C": Price(1.0, 0.1)}
    result = import_region("westeurope", rows, reference, ["A", "B", "C"])
    assert dict(result.prices) == {"A": Price(1.2, 0.12)}
    assert set(result.rejected) == {"B", "C"}
    assert "2.00x" in result.rejected["B"] and "no public source" in result.rejected["C"]


@pytest.mark.parametrize("region", EUROPE)
def test_every_imported_row_is_within_the_band_of_its_eastus_price(region: str) -> None:
    table = price_table(Cloud.AZURE)
    eastus = table.prices["eastus"]
    assert len(table.prices[region]) >= 15, "most sizes priced"
    for size, price in table.prices[region].items():
        assert price.on_demand is not None
        reference = eastus[size].on_demand
        assert reference is not None
        assert EU_BAND[0] * reference <= price.on_demand <= EU_BAND[1] * reference, (size, price.on_demand, reference)
        if price.spot is not None:
            assert 0.05 * price.on_demand <= price.spot < 0.6 * price.on_demand, (size, price)


@pytest.mark.parametrize("region", ["eastus", "westus2", *EUROPE])
def test_every_catalog_size_is_priced_or_says_why_not(region: str) -> None:
    table = price_table(Cloud.AZURE)
    for size in AZURE_SIZES:
        price = table.price(region, size)
        if price is None or price.spot is None:
            reason = table.unpriced.get(region, {}).get(size)
            assert reason and len(reason) > 30, (region, size)
            assert table.missing_reason(region, size) == reason


def test_known_rows_and_rejections() -> None:
    table = price_table(Cloud.AZURE)
    assert table.price("West Europe", "Standard_D4s_v5") == Price(0.23, 0.0253)
    assert table.price("northeurope", "Standard_D4s_v5") is None
    assert "2.07x" in table.missing_reason("northeurope", "Standard_D4s_v5")
    assert table.price("westeurope", "Standard_NC4as_T4_v3") is None
    assert "Windows" in table.missing_reason("westeurope", "Standard_NC4as_T4_v3")
    h100 = table.price("westeurope", "Standard_ND96isr_H100_v5")
    assert h100 is not None and h100.spot is None
    assert "not below on-demand" in table.missing_reason("westeurope", "Standard_ND96isr_H100_v5")
    for region in ("eastus", "westus2", *EUROPE):
        assert "H200" in table.missing_reason(region, "Standard_ND96isr_H200_v5")


@pytest.mark.parametrize("region", EUROPE)
def test_european_provenance_names_the_source_and_its_date(region: str) -> None:
    table = price_table(Cloud.AZURE)
    origin = table.provenance(region)
    assert "coroot/cloud-pricing" in origin.source and "af03eada15b25d80863f2547ba281e71af9d5c91" in origin.source
    assert origin.source_date == date(2024, 8, 9)
    assert origin.read_on >= origin.source_date
    assert table.provenance("eastus").source == table.source
    again = table_from_json(table.to_json())
    assert again.provenance(region) == origin and again.unpriced == table.unpriced


def test_g6f_is_priced_where_offered_and_explained_where_not() -> None:
    table = price_table(Cloud.AWS)
    assert {"g6f.xlarge", "g6f.2xlarge"} <= set(INSTANCE_TYPES)
    for region in ("us-east-1", "us-west-2", "eu-central-1"):
        small, large = table.price(region, "g6f.xlarge"), table.price(region, "g6f.2xlarge")
        assert small and large and small.on_demand and large.on_demand and small.spot and large.spot
        # an eighth of an L4 costs less than a whole one (g6.xlarge), and the quarter twice the eighth
        whole = table.price(region, "g6.xlarge")
        assert whole is not None and whole.on_demand is not None and small.on_demand < whole.on_demand / 2
        assert large.on_demand == pytest.approx(2 * small.on_demand)
        assert 0 < small.spot < small.on_demand and 0 < large.spot < large.on_demand
    us = table.price("us-west-2", "g6f.xlarge")
    assert us is not None and us.spot == pytest.approx(0.0768)  # median of 0.0758, 0.0818, 0.0778, 0.0626
    assert "g6f" in table.source and "2c3d7ea" in table.source
    assert "eu-west-1" in table.missing_reason("eu-west-1", "g6f.xlarge")


def test_import_command_rebuilds_regions_from_a_downloaded_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = {
        "azure": {
            "compute": {
                "westeurope": {
                    "Standard_D4s_v5": {"on_demand": 0.23, "spot": 0.0253},
                    "Standard_D8s_v5": {"on_demand": 0.796, "spot": 0.05564},
                }
            }
        }
    }
    path = tmp_path / "cloud-pricing.json.gz"
    path.write_bytes(gzip.compress(json.dumps(source).encode()))
    assert import_coroot.main([str(path), "--regions", "westeurope", "--dry-run"], today=date(2026, 11, 24)) == 0
    table = table_from_json(json.loads(capsys.readouterr().out))
    assert dict(table.prices["westeurope"]) == {"Standard_D4s_v5": Price(0.23, 0.0253)}
    assert "2.07x" in table.missing_reason("westeurope", "Standard_D8s_v5")
    assert "no public source" in table.missing_reason("westeurope", "Standard_NC4as_T4_v3")
    assert table.provenance("westeurope").read_on == date(2026, 11, 24)
    assert table.prices["eastus"] == price_table(Cloud.AZURE).prices["eastus"], "other regions untouched"
    assert table.unpriced["westus2"] == price_table(Cloud.AZURE).unpriced["westus2"]


def test_import_command_refuses_a_region_with_no_usable_row(tmp_path: Path) -> None:
    path = tmp_path / "cloud-pricing.json"
    path.write_text(json.dumps({"azure": {"compute": {}}}))
    assert import_coroot.main([str(path), "--regions", "francecentral", "--dry-run"]) == 2

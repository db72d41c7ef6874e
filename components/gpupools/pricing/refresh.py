"""``python -m gpupools.pricing refresh``: rebuild a cloud's price table from its price sources.

    python -m gpupools.pricing refresh --cloud azure                      # no credentials needed
    python -m gpupools.pricing refresh --cloud aws                        # AWS credentials (boto3)
    python -m gpupools.pricing refresh --cloud aws --regions us-east-1 --days 7 --dry-run

On AWS the table also gets each size's EKS Auto Mode fee per region (a second ``GetProducts``
query, service code ``AmazonEKS``: ``gpupools.pricing.aws_price_list``), which the costs of
``provisioner: auto-mode`` stacks add to the EC2 price (docs/auto-mode.md).

Every size of the cloud's size catalogs (GPU and CPU) is priced in the table's regions (default:
the regions already in the table, which include the example stacks' and the most used ones; add
more with ``--regions``). The table is replaced only when every region answered; its ``readOn``
becomes today. Without network or credentials it stops with exit status 2 and says why, leaving
the committed table as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import date

from gpupools import _cli as cli
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.catalog.azure_vm_sizes import CPU_SIZES, GPU_SIZES
from gpupools.catalog.prices import Price, PriceTable, price_table, table_path
from gpupools.pricing import aws_price_list, azure_retail
from gpupools.specs import Cloud

DEFAULT_REGIONS = {
    Cloud.AZURE: ("eastus", "westus2", "westeurope", "northeurope"),
    Cloud.AWS: ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1"),
}

SOURCES = {
    Cloud.AZURE: (
        "Azure Retail Prices API (prices.azure.com/api/retail/prices, api-version "
        f"{azure_retail.API_VERSION}): Virtual Machines, Consumption, USD, per hour, Linux meters"
    ),
    Cloud.AWS: (
        "AWS Price List Query API (pricing:GetProducts, AmazonEC2, Linux, shared tenancy, capacitystatus Used) "
        "and ec2:DescribeSpotPriceHistory (Linux/UNIX); EKS Auto Mode fee: pricing:GetProducts, AmazonEKS, "
        f"operation {aws_price_list.AUTO_MODE_OPERATION}"
    ),
}


def spot_basis(cloud: Cloud, days: int) -> str:
    if cloud is Cloud.AZURE:
        return "Spot retail meter of the region on the read date (Azure sets Spot prices per region and size; they move)"
    return (
        f"median over the region's zones of each zone's time-weighted median Spot price over the {days} days "
        "before the read date (Spot prices move)"
    )


def sizes_of(cloud: Cloud) -> list[str]:
    """Every size the cloud's catalogs know: GPU pools', CPU pools' and the system pool's."""
    if cloud is Cloud.AZURE:
        return sorted({*GPU_SIZES, *CPU_SIZES})
    return sorted(INSTANCE_TYPES)


RegionReader = Callable[[str, Sequence[str]], Mapping[str, Price]]


def build_table(cloud: Cloud, regions: Sequence[str], read: RegionReader, today: date, days: int) -> PriceTable:
    """A new table from ``read`` (region, sizes) -> prices, for every region."""
    sizes = sizes_of(cloud)
    prices = {region: dict(read(region, sizes)) for region in regions}
    return PriceTable(cloud=cloud, source=SOURCES[cloud], read_on=today, spot_basis=spot_basis(cloud, days), prices=prices)


def aws_reader(days: int) -> RegionReader:
    try:
        import boto3
    except ImportError:
        raise SystemExit("refresh --cloud aws needs boto3: pip install 'gpupools[pricing]'") from None
    session = boto3.Session()

    def read(region: str, sizes: Sequence[str]) -> Mapping[str, Price]:
        return aws_price_list.fetch_region(region, sizes, session, days=days)

    return read


def azure_reader() -> RegionReader:
    def read(region: str, sizes: Sequence[str]) -> Mapping[str, Price]:
        return azure_retail.region_prices(region, sizes)

    return read


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gpupools.pricing", description=__doc__.split("\n")[0].replace("``", ""))
    commands = parser.add_subparsers(dest="command", required=True)
    refresh = commands.add_parser("refresh", help="rebuild a cloud's price table from its public price sources")
    refresh.add_argument("--cloud", required=True, choices=[c.value for c in Cloud])
    refresh.add_argument("--regions", nargs="+", help="regions to price (default: the table's regions)")
    refresh.add_argument("--days", type=int, default=aws_price_list.DEFAULT_SPOT_DAYS, help="AWS Spot history window")
    refresh.add_argument("--dry-run", action="store_true", help="print the table instead of writing it")
    return cli.parse_args(parser, argv)


def main(argv: Sequence[str] | None = None, reader: RegionReader | None = None, today: date | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cloud = Cloud(args.cloud)
    current = price_table(cloud)
    regions = tuple(args.regions or sorted(current.prices) or DEFAULT_REGIONS[cloud])
    read = reader or (aws_reader(args.days) if cloud is Cloud.AWS else azure_reader())
    try:
        table = build_table(cloud, regions, read, today or date.today(), args.days)
    except Exception as error:  # network, credentials, throttling, an unexpected response
        print(
            f"price refresh failed for {cloud.value} ({type(error).__name__}: {error}); "
            f"the committed table (read on {current.read_on}) is unchanged",
            file=sys.stderr,
        )
        return 2
    text = json.dumps(table.to_json(), indent=1, sort_keys=False) + "\n"
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    table_path(cloud).write_text(text)
    priced = sum(1 for sizes in table.prices.values() for p in sizes.values() if p.on_demand is not None)
    fees = sum(1 for sizes in table.prices.values() for p in sizes.values() if p.auto_mode_fee is not None)
    extra = f", {fees} EKS Auto Mode fees" if cloud is Cloud.AWS else ""
    print(f"wrote {table_path(cloud).name}: {priced} on-demand prices{extra} in {len(regions)} regions, read {table.read_on}")
    return 0

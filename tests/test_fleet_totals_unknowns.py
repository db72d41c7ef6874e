"""Fleet totals that survive an unknown price (issue 39, item 2), on the committed price catalog.

Every expected figure is computed here from the catalog's rows (what the sources said), not from
the code under test:

* westeurope T4: anycloud's Spot figure for ``Standard_NC4as_T4_v3`` is 0.472247, 0.72x the 0.658
  on-demand, outside the importer's band: kept and flagged, so the fleet's totals are numbers and
  the budget is checked;
* eastus2 ``Standard_NC40ads_H100_v5``: SkyPilot's Azure v6 row repeats the on-demand rate (6.98) as
  its Spot figure, so there is no Spot price at all. The on-demand price bounds it from above: the
  ceiling is known up to that bound and the budget is decided where the two bounds allow;
* ap-northeast-2 ``p5.48xlarge`` under Karpenter: no Spot price, but a NodePool's ceiling is its
  limit at its dearest capacity (on-demand), so the ceiling is exact.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.capacity import Scenario
from gpupools.catalog.prices import price_table
from gpupools.config import parse
from gpupools.errors import ConfigError
from gpupools.pricing.estimate import check_budget, fleet_cost, groups_of_spec
from gpupools.specs import Cloud, CostSpec
from gpupools.synth import main
from gpupools.synth.diff import diff_documents, render_markdown
from gpupools.testing import PROJECT_ROOT

T4, H100 = "Standard_NC4as_T4_v3", "Standard_NC40ads_H100_v5"


def stack_config(stack: str, **changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    values = copy.deepcopy(values)
    values.update(changes)
    return values


def project(root: Path, stack: str, config: dict[str, Any]) -> Path:
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_ROOT / name, root / name)
    shutil.copytree(PROJECT_ROOT / "stacks", root / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    return root


def synth(root: Path, stack: str, *flags: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([stack, "--root", str(root), "--out", str(root / "out"), *flags])
    return status, out.getvalue()


def westeurope_t4(budget: float) -> dict[str, Any]:
    """azure-dev (a T4 Spot pool with fallback, an A100 pool) in westeurope, with a budget."""
    return stack_config(
        "azure-dev",
        **{"azure-native:location": "westeurope", "gpupools:cost": {"budgetPerHour": budget, "gpuHoursPerMonth": 200}},
    )


def eastus2_h100() -> dict[str, Any]:
    """azure-dev in eastus2 with its A100 pool on NC40ads_H100_v5 (no Spot price in the catalog)."""
    config = stack_config("azure-dev", **{"azure-native:location": "eastus2"})
    for pool in config["gpupools:gpuPools"]:
        if pool["name"] == "a100":
            pool["instanceTypes"] = [H100]
    return config


def test_the_catalog_rows_these_tests_rest_on() -> None:
    table = price_table(Cloud.AZURE)
    t4 = table.price("westeurope", T4)
    assert t4 is not None and (t4.on_demand, t4.spot) == (0.658, 0.472247)
    assert "0.72x" in table.doubtful["westeurope"][T4]
    h100 = table.price("eastus2", H100)
    assert h100 is not None and h100.on_demand == 6.98 and h100.spot is None


def test_westeurope_with_a_t4_pool_shows_numeric_totals_and_a_checked_budget(tmp_path: Path) -> None:
    root = project(tmp_path, "we", westeurope_t4(100.0))
    status, out = synth(root, "we", "--json")
    assert status == 0
    cost = json.loads(out)["cost"]
    table = price_table(Cloud.AZURE)
    spot = table.price("westeurope", T4)
    assert spot is not None and spot.spot is not None
    # Ceiling from the catalog: every group at its max (azure-dev: t4 8 Spot + 2 fallback, a100 4 + 1, general 10 + 10, system 4).
    a100 = table.price("westeurope", "Standard_NC24ads_A100_v4")
    general = table.price("westeurope", "Standard_D8s_v5")
    system = table.price("westeurope", "Standard_D4s_v5")
    assert a100 and general and system and a100.spot and general.spot and system.on_demand
    assert a100.on_demand and general.on_demand and spot.on_demand
    ceiling = (
        8 * spot.spot + 2 * spot.on_demand + 4 * a100.spot + 1 * a100.on_demand + 10 * general.spot + 10 * general.on_demand
    ) + 4 * system.on_demand
    assert cost["ceilingPerHour"] == pytest.approx(ceiling, abs=1e-3)
    assert cost["monthly"] is not None and cost["savingsPercent"] is not None
    assert all(cost["exact"].values()) and cost["unknownParts"] == {}
    assert cost["doubtfulPrices"] == [f"{T4}: {table.doubtful['westeurope'][T4]}"]
    _, text = synth(root, "we", "--no-tree")
    assert "Budget: 100.00 per hour (checked against the ceiling)" in text
    assert "Doubtful price, used: Standard_NC4as_T4_v3:" in text
    # A budget below the ceiling fails, naming the ceiling.
    (tmp_path / "low").mkdir()
    root = project(tmp_path / "low", "we", westeurope_t4(5.0))
    with pytest.raises(ConfigError, match=r"must be at least the fleet's ceiling \(every group") as error:
        parse(westeurope_t4(5.0), region="westeurope")
    assert f"${ceiling:,.2f}/h" in str(error.value)
    assert synth(root, "we", "-q")[0] == 2


def test_an_unknown_spot_price_is_bounded_by_on_demand_and_the_figures_say_so() -> None:
    spec = parse(eastus2_h100(), region="eastus2")
    table = price_table(Cloud.AZURE)
    fleet = fleet_cost(groups_of_spec(spec), table, "eastus2", CostSpec())
    known = dict(fleet.known_per_hour)
    # The a100 pool's Spot group (4 nodes) is the only unknown: at its on-demand bound 6.98 it adds
    # 4 x 6.98 to the ceiling; at the known prices alone, nothing.
    assert fleet.ceiling is not None
    assert fleet.ceiling - known[Scenario.CEILING.value] == pytest.approx(4 * 6.98, abs=1e-6)
    assert not fleet.exact(Scenario.CEILING) and not fleet.exact(Scenario.SPOT_FIRST)
    assert fleet.exact(Scenario.SPOT_GONE) and fleet.exact(Scenario.IDLE)  # no Spot node in either
    parts = dict(fleet.unknown_parts)
    assert list(parts) == ["a100"] and "spot price unknown" in parts["a100"] and "6.9800" in parts["a100"]
    output = fleet.to_output()
    assert output["ceilingPerHour"] == pytest.approx(fleet.ceiling, abs=1e-4)
    assert output["exact"] == {"idle": True, "atMaxSpotFirst": False, "atMaxSpotGone": True, "ceiling": False}


def test_the_budget_is_decided_from_the_two_bounds() -> None:
    spec = parse(eastus2_h100(), region="eastus2")
    table = price_table(Cloud.AZURE)
    fleet = fleet_cost(groups_of_spec(spec), table, "eastus2", CostSpec())
    upper, lower = fleet.ceiling, dict(fleet.known_per_hour)[Scenario.CEILING.value]
    assert upper is not None and lower < upper

    def check(budget: float) -> None:
        check_budget(fleet_cost(groups_of_spec(spec), table, "eastus2", CostSpec(budget_per_hour=budget)))

    check(upper + 0.01)  # within the budget whatever the Spot price is: passes
    with pytest.raises(ConfigError, match=r"must be at least the fleet's ceiling .* from the known prices alone"):
        check(lower - 0.01)  # the known part alone exceeds it
    with pytest.raises(ConfigError, match=r"cannot be decided: .* may be up to \$") as error:
        check((lower + upper) / 2)
    assert f"or raise the budget to ${upper:,.2f}" in str(error.value) and "pool a100" in str(error.value)


def test_synth_shows_bounds_and_the_unknown_part(tmp_path: Path) -> None:
    config = eastus2_h100()
    config["gpupools:cost"] = {"gpuHoursPerMonth": 200, "budgetPerHour": 100}
    root = project(tmp_path, "e2", config)
    status, text = synth(root, "e2", "--no-tree")
    assert status == 0
    total = next(line for line in text.splitlines() if line.strip().startswith("TOTAL"))
    assert total.split()[-1].startswith("<=")
    assert "ceiling's upper bound" in text and "Unknown price, pool a100: spot price unknown" in text
    assert "Monthly estimate" in text and "<=" in text.split("Monthly estimate")[1].splitlines()[0]


def test_karpenter_ceiling_is_exact_with_an_unknown_spot_price_and_no_priority_expander_line(tmp_path: Path) -> None:
    table = price_table(Cloud.AWS)
    p5 = table.price("ap-northeast-2", "p5.48xlarge")
    assert p5 is not None and p5.on_demand is not None and p5.spot is None
    config = stack_config("aws-karpenter-dev", **{"aws:region": "ap-northeast-2"})
    config["gpupools:cluster"] = {
        **config["gpupools:cluster"],
        "zones": ["ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c"],
    }
    for pool in config["gpupools:gpuPools"]:
        if pool["name"] == "gpu4":
            pool["instanceTypes"] = ["p5.48xlarge"]
    # The catalog's source lists no m6a.2xlarge in ap-northeast-2 (one of the example's CPU types).
    for pool in config["gpupools:cpuPools"]:
        pool["instanceTypes"] = [t for t in pool["instanceTypes"] if t != "m6a.2xlarge"]
    root = project(tmp_path, "k", config)
    status, out = synth(root, "k", "--json")
    assert status == 0
    cost = json.loads(out)["cost"]
    assert cost["exact"]["ceiling"] is True and cost["exact"]["atMaxSpotFirst"] is False
    assert cost["priorityOrderOf"] == "Karpenter NodePool weights"
    _, text = synth(root, "k", "--no-tree")
    assert "Priority expander" not in text
    assert "Karpenter NodePool weights: pools ordered by size facts" in text


def test_synth_diff_cost_lines_mark_bounds_and_name_the_unknown_part(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before_root = project(tmp_path / "a", "s", stack_config("azure-dev", **{"azure-native:location": "eastus2"}))
    after_root = project(tmp_path / "b", "s", eastus2_h100())
    for root in (before_root, after_root):
        assert synth(root, "s", "-q")[0] == 0
    old = json.loads((before_root / "out" / "desired-state.json").read_text())
    new = json.loads((after_root / "out" / "desired-state.json").read_text())
    text = render_markdown([diff_documents(old, new, "s")])
    cost = next(line for line in text.splitlines() if line.startswith("💵 Cost"))
    assert "ceiling **$" in cost and "→ <=$" in cost and "(?/h)" in cost
    assert "Unknown prices (a `<=` figure is an upper bound" in text and "`a100`: spot price unknown" in text
    assert "Markdown for a pull-request comment" in text


def test_a_size_the_catalog_does_not_list_passes_with_the_override_and_stays_unpriced(tmp_path: Path) -> None:
    """gpupools:catalog.allowUnlisted: for a catalog that lags the cloud (the bad-input catalogue has
    the error without it). The size has no price there, so its figures are lower bounds, said so."""
    config = stack_config("azure-dev", **{"azure-native:location": "francecentral"})
    for pool in config["gpupools:gpuPools"]:
        if pool["name"] == "a100":
            pool["instanceTypes"] = ["Standard_ND96isr_H100_v5"]
    with pytest.raises(ConfigError, match=r"regions that list it: \w+, \w+, \w+, \w+, \w+ and \d+ more"):
        parse(config, region="francecentral")
    config["gpupools:catalog"] = {"allowUnlisted": ["Standard_ND96isr_H100_v5"]}
    root = project(tmp_path, "fc", config)
    status, out = synth(root, "fc", "--json")
    assert status == 0
    cost = json.loads(out)["cost"]
    assert cost["ceilingPerHour"] is None and cost["knownPerHour"]["ceiling"] > 0
    assert "no bound, left out" in cost["unknownParts"]["a100"]
    _, text = synth(root, "fc", "--no-tree")
    total = next(line for line in text.splitlines() if line.strip().startswith("TOTAL"))
    assert total.split()[-1].startswith(">=")


@pytest.mark.parametrize(
    ("stack", "summed"), [("aws-dev", True), ("azure-dev", True), ("aws-karpenter-dev", False), ("azure-nap-dev", False)]
)
def test_the_total_row_says_when_it_is_not_the_sum_of_its_column(stack: str, summed: bool) -> None:
    """Under Karpenter/NAP the ceiling counts a NodePool once at its limit and on-demand price, not
    the rows' Spot $/H AT MAX: the row itself says so; under cluster-autoscaler it is the sum."""
    from gpupools.synth import synthesize
    from gpupools.synth.summary import NOT_A_SUM, render

    document = synthesize(stack, PROJECT_ROOT).document
    total = next(line for line in render(document).splitlines() if line.strip().startswith("TOTAL"))
    rows = document["outputs"]["nodePools"]
    column = round(sum(p["costPerHourAtMax"] for p in rows), 2)
    assert (float(total.split()[-1].replace(",", "")) == pytest.approx(column, abs=0.011)) is summed
    assert (NOT_A_SUM in total) is not summed


def test_synth_diff_says_why_no_cost_figure_moved_when_capacity_changed(tmp_path: Path) -> None:
    """A capacity change in a pool whose size has no price moves no computable figure (its ceiling
    has no bound): the diff says why instead of printing no cost line at all."""
    config = stack_config("azure-dev", **{"azure-native:location": "francecentral"})
    config["gpupools:catalog"] = {"allowUnlisted": ["Standard_ND96isr_H100_v5"]}
    for pool in config["gpupools:gpuPools"]:
        if pool["name"] == "a100":
            pool["instanceTypes"] = ["Standard_ND96isr_H100_v5"]
    bigger = copy.deepcopy(config)
    for pool in bigger["gpupools:gpuPools"]:
        if pool["name"] == "a100":
            pool["maxSize"] = 5
    documents = []
    for name, values in (("a", config), ("b", bigger)):
        (tmp_path / name).mkdir()
        root = project(tmp_path / name, "s", values)
        assert synth(root, "s", "-q")[0] == 0
        documents.append(json.loads((root / "out" / "desired-state.json").read_text()))
    text = render_markdown([diff_documents(documents[0], documents[1], "s")])
    assert "💰" in text and "💵 Cost" not in text
    assert "Unknown prices" in text and "`a100`: spot and on-demand price unknown" in text and "no bound" in text


def test_a_budget_error_names_no_pool_above_the_ceiling_it_states() -> None:
    """Issue 48, 5.: with an unknown Spot price the error states the ceiling from the known prices;
    its drivers are from the same prices, so none exceeds it. Before, they were at the bounds: the
    a100 pool showed its Spot group at on-demand (4 x 6.98 more) beside a total without it."""
    spec = parse(eastus2_h100(), region="eastus2")
    table = price_table(Cloud.AZURE)
    lower = dict(fleet_cost(groups_of_spec(spec), table, "eastus2", CostSpec()).known_per_hour)[Scenario.CEILING.value]
    with pytest.raises(ConfigError) as caught:
        check_budget(fleet_cost(groups_of_spec(spec), table, "eastus2", CostSpec(budget_per_hour=lower - 0.01)))
    rule = caught.value.rule
    stated = float(re.search(r"\$([\d,.]+)/h", rule).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert stated == pytest.approx(lower, abs=0.01)
    drivers = [float(x.replace(",", "")) for x in re.findall(r"\w+ \$([\d,.]+)", rule.split(": ", 1)[1])]
    assert drivers and max(drivers) <= stated and sum(drivers) == pytest.approx(stated, abs=0.05)

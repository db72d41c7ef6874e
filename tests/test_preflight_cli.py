"""The preflight's command line, stack loading, demand and table: cloud-neutral behaviour.

A bad stack config must fail exactly as offline synth (and so ``pulumi up``) fails: the same
one-line ``ConfigError`` and the same exit status, before any cloud is asked anything.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.conventions import CapacityType
from gpupools.errors import ConfigError
from gpupools.preflight.cli import EXIT_MISSING_SDK, main
from gpupools.preflight.demand import gpu_pool_demands, stack_demands, zone_pairs
from gpupools.preflight.report import Check, CheckKind, Status, exit_status, render, tally
from gpupools.preflight.sdk import MissingSdkError, require
from gpupools.preflight.stack import target_from_values
from gpupools.specs import GpuPoolSpec
from gpupools.synth import EXIT_CONFIG_ERROR
from gpupools.synth import main as synth_main
from gpupools.testing import PROJECT_ROOT, _engine_config, stack_config

from tests.test_config import INVALID


def write_project(root: Path, config: dict[str, Any], stack: str = "probe") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text("name: gpupools\nruntime: python\n")
    (root / "__main__.py").write_text((PROJECT_ROOT / "__main__.py").read_text())
    (root / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return root


def example(stack: str) -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text())["config"])


# --- a bad stack config ----------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "raw", "path", "rule"), INVALID, ids=[c[0] for c in INVALID])
def test_every_invalid_config_fails_the_preflight_loader_as_it_fails_the_program(
    case: str, raw: dict[str, Any], path: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        target_from_values("probe", _engine_config(raw), environ={"AWS_REGION": "us-west-2"})
    assert path in caught.value.path and rule in str(caught.value), f"{case}: {caught.value}"


@pytest.mark.parametrize(
    ("stack", "change"),
    [
        ("azure-dev", lambda c: c["gpupools:gpuPools"][0].update(maxSzie=3)),
        ("aws-dev", lambda c: c["gpupools:gpuPools"][1].update(minSize=9)),
        ("azure-dev", lambda c: c.pop("azure-native:location")),
        ("aws-dev", lambda c: c["gpupools:cluster"].update(kubernetesVersion=1.3)),
    ],
    ids=["unknown-key", "min-above-max", "no-location", "version-as-number"],
)
def test_bad_stack_config_gives_synths_line_and_status(
    stack: str, change: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    config = example(stack)
    change(config)
    root = write_project(tmp_path / "project", config)
    assert synth_main(["probe", "--root", str(root), "--out", str(tmp_path / "out"), "--quiet"]) == EXIT_CONFIG_ERROR
    synth_err = capsys.readouterr().err
    assert main(["probe", "--root", str(root)]) == EXIT_CONFIG_ERROR
    captured = capsys.readouterr()
    assert captured.err == synth_err
    assert captured.err.count("\n") == 1 and captured.out == ""


def test_missing_stack_file_exits_2_naming_the_stacks_there(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-stack", "--root", str(PROJECT_ROOT)]) == EXIT_CONFIG_ERROR
    err = capsys.readouterr().err
    assert "Pulumi.no-such-stack.yaml" in err and "aws-dev" in err and "azure-dev" in err


def test_aws_stack_without_any_region_is_a_config_error() -> None:
    raw = stack_config("aws-dev", PROJECT_ROOT)
    del raw["aws:region"]
    with pytest.raises(ConfigError, match="aws:region"):
        target_from_values("aws-dev", _engine_config(raw), environ={})
    assert target_from_values("aws-dev", _engine_config(raw), environ={"AWS_REGION": "eu-west-1"}).region == "eu-west-1"


# --- a missing SDK -------------------------------------------------------------------------------


def test_missing_sdk_says_how_to_install_it() -> None:
    with pytest.raises(MissingSdkError) as caught:
        require("AWS", ("boto3", "no_such_sdk_module"))
    assert caught.value.modules == ["no_such_sdk_module"]
    assert "pip install 'gpupools[preflight]'" in str(caught.value)


def test_cli_without_the_aws_sdk_exits_3_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if not installed: importing it raises ImportError
    assert main(["aws-dev", "--root", str(PROJECT_ROOT)]) == EXIT_MISSING_SDK
    captured = capsys.readouterr()
    assert "boto3" in captured.err and "gpupools[preflight]" in captured.err and "Traceback" not in captured.err


def test_cli_without_the_azure_sdk_exits_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "azure.mgmt.containerservice", None)
    assert main(["azure-dev", "--root", str(PROJECT_ROOT)]) == EXIT_MISSING_SDK
    assert "azure-mgmt-containerservice" in capsys.readouterr().err


# --- what the stack asks for -----------------------------------------------------------------------


def pool(**changes: Any) -> GpuPoolSpec:
    return GpuPoolSpec(**{"name": "t4", "instance_types": ("Standard_NC4as_T4_v3",), "max_size": 8, **changes})


def test_spot_pool_asks_for_spot_and_its_fallback() -> None:
    spot, fallback = gpu_pool_demands(pool(on_demand_max_size=2), ["1", "2"])
    assert (spot.capacity, spot.max_nodes) == (CapacityType.SPOT, 8)
    assert (fallback.capacity, fallback.max_nodes) == (CapacityType.ON_DEMAND, 2)
    assert spot.zones == fallback.zones == ("1", "2")


def test_fallback_defaults_to_max_size_and_can_be_off() -> None:
    assert [d.max_nodes for d in gpu_pool_demands(pool(), ["1"])] == [8, 8]
    assert [d.capacity for d in gpu_pool_demands(pool(on_demand_fallback=False), ["1"])] == [CapacityType.SPOT]


def test_on_demand_pool_asks_for_one_on_demand_pool_of_max_size() -> None:
    [only] = gpu_pool_demands(pool(spot=False, on_demand_max_size=2), ["1"])
    assert (only.capacity, only.max_nodes) == (CapacityType.ON_DEMAND, 8)


def test_pool_zones_win_over_the_clusters() -> None:
    [spot, _] = gpu_pool_demands(pool(zones=("2",)), ["1", "2", "3"])
    assert spot.zones == ("2",)


def test_zone_pairs_check_a_spot_pool_and_its_fallback_once_per_zone() -> None:
    target = target_from_values("azure-dev", _engine_config(stack_config("azure-dev", PROJECT_ROOT)), environ={})
    demands = stack_demands(target.spec, target.spec.cluster.zones)
    pairs = zone_pairs(demands)
    assert len(pairs) == len(set(pairs))
    assert {(p, z) for p, _, z in pairs} == {(d.pool, z) for d in demands for z in d.zones}
    assert demands[0].pool == "system" and demands[0].capacity is CapacityType.ON_DEMAND


# --- the table -----------------------------------------------------------------------------------


def checks(*statuses: Status) -> list[Check]:
    return [Check(CheckKind.QUOTA, f"p{i}", "-", "found", "needed", s) for i, s in enumerate(statuses)]


@pytest.mark.parametrize(
    ("statuses", "plain", "strict"),
    [
        ((Status.OK, Status.OK), 0, 0),
        ((Status.OK, Status.UNKNOWN), 0, 1),
        ((Status.OK, Status.FAILED), 1, 1),
        ((Status.UNKNOWN, Status.FAILED), 1, 1),
        # Nothing answered (no credentials): a failure of its own, --strict or not.
        ((Status.UNKNOWN, Status.UNKNOWN), 4, 4),
        ((), 0, 0),
    ],
)
def test_exit_status(statuses: tuple[Status, ...], plain: int, strict: int) -> None:
    assert exit_status(checks(*statuses)) == plain
    assert exit_status(checks(*statuses), strict=True) == strict


def test_table_has_one_header_one_row_per_check_aligned_and_a_tally() -> None:
    rows = [
        Check(
            CheckKind.OFFERED,
            "gpu1",
            "us-west-2d",
            "g6.xlarge (not offered: g4dn.xlarge)",
            "g4dn.xlarge, g6.xlarge",
            Status.FAILED,
        ),
        Check(CheckKind.VERSION, "-", "-", "1.34: standard support", "EKS 1.34", Status.OK),
    ]
    lines = render(rows).splitlines()
    assert lines[0].split() == ["CHECK", "POOL", "ZONE", "FOUND", "NEEDED"]
    assert len(lines) == 1 + len(rows) + 1
    assert lines[0].index("FOUND") == lines[1].index("g6.xlarge") == lines[2].index("1.34")
    assert lines[1].endswith("✗") and lines[2].endswith("✓")
    assert lines[-1] == tally(rows) == "1 ✓  1 ✗  0 ?"

"""What the tools tell a person: full config paths, the right spelling, real package names, every command.

Each test pins one finding of issue 30 and fails on the code before it:

* a misspelled top-level key lost its ``gpupools:`` prefix (``cpuPool: is not a known key``);
* a VM size in the wrong case got no did-you-mean, and a hint that it was a non-GPU size;
* the preflight named a package ``botocore-config``, which does not exist on PyPI (``botocore.config``
  is a module of ``botocore``);
* ``python -m gpupools.pricing --help`` showed raw reST (````python -m ...````) and only ``refresh``.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

import pytest
from gpupools import config
from gpupools.errors import ConfigError
from gpupools.preflight.sdk import MissingSdkError, distribution, require
from gpupools.testing import stack_config


def parse_error(stack: str, region: str, **overrides: Any) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        config.parse({**stack_config(stack), **overrides}, region=region)
    return raised.value


def with_types(stack: str, types: list[str], key: str = "gpupools:gpuPools") -> dict[str, Any]:
    pools = [dict(p) for p in stack_config(stack)[key]]
    pools[0]["instanceTypes"] = types
    return {key: pools}


# --- config paths ----------------------------------------------------------------------------------


def test_a_misspelled_top_level_key_keeps_its_namespace() -> None:
    error = parse_error("azure-dev", "eastus", **{"gpupools:cpuPool": [{"name": "x"}]})
    assert str(error) == "gpupools:cpuPool: is not a known key, got 'cpuPool' (did you mean 'cpuPools'?)"
    assert error.path == "gpupools:cpuPool"


def test_nested_keys_keep_their_full_path_too() -> None:
    cluster = {**stack_config("azure-dev")["gpupools:cluster"], "zone": ["1"]}
    error = parse_error("azure-dev", "eastus", **{"gpupools:cluster": cluster})
    assert error.path == "gpupools:cluster.zone" and "did you mean 'zones'?" in str(error)


# --- spelling ---------------------------------------------------------------------------------------


def test_a_gpu_size_in_the_wrong_case_gets_the_right_spelling_not_a_non_gpu_hint() -> None:
    error = parse_error("azure-dev", "eastus", **with_types("azure-dev", ["standard_nc4as_t4_v3"]))
    assert str(error) == (
        "gpupools:gpuPools[0].instanceTypes[0]: must be spelled as the cloud lists the VM size (names match exactly), "
        "got 'standard_nc4as_t4_v3' (did you mean Standard_NC4as_T4_v3?)"
    )
    assert "non-GPU" not in str(error)


def test_a_near_miss_gpu_size_is_suggested_and_a_cpu_size_is_called_one() -> None:
    near = parse_error("azure-dev", "eastus", **with_types("azure-dev", ["Standard_NC4as_T4_v4"]))
    assert str(near).endswith("got 'Standard_NC4as_T4_v4' (did you mean Standard_NC4as_T4_v3?)")
    unknown = parse_error("azure-dev", "eastus", **with_types("azure-dev", ["Standard_XY9_v9"]))
    assert "non-GPU" not in str(unknown) and "gpupools:catalog.instanceTypes" in str(unknown)


def test_cpu_and_system_sizes_and_aws_types_get_the_right_spelling() -> None:
    cpu = parse_error("azure-dev", "eastus", **with_types("azure-dev", ["standard_d8s_v5"], "gpupools:cpuPools"))
    assert cpu.path == "gpupools:cpuPools[0].instanceTypes[0]" and cpu.hint == "did you mean Standard_D8s_v5?"
    system = {**stack_config("azure-dev")["gpupools:systemPool"], "instanceTypes": ["STANDARD_D4S_V5"]}
    error = parse_error("azure-dev", "eastus", **{"gpupools:systemPool": system})
    assert error.path == "gpupools:systemPool.instanceTypes[0]" and error.hint == "did you mean Standard_D4s_v5?"
    aws = parse_error("aws-dev", "us-west-2", **with_types("aws-dev", ["g4dn.xlarge", "G5.xlarge"]))
    assert aws.path == "gpupools:gpuPools[0].instanceTypes[1]" and aws.hint == "did you mean g5.xlarge?"


# --- package names ----------------------------------------------------------------------------------


def test_the_preflight_names_packages_that_exist() -> None:
    assert distribution("botocore.config") == "botocore"
    assert distribution("boto3") == "boto3"
    assert distribution("azure.mgmt.containerservice") == "azure-mgmt-containerservice"


def test_a_missing_submodule_is_reported_as_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore.config", None)  # importing it raises ImportError
    with pytest.raises(MissingSdkError) as caught:
        require("AWS", ("botocore.config",))
    assert caught.value.packages == ["botocore"]
    assert "needs botocore, which is not installed" in str(caught.value)
    # The preflight's own list, neither installed: both named as pip knows them.
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(MissingSdkError) as caught:
        require("AWS", ("boto3", "botocore.config"))
    assert caught.value.packages == ["boto3", "botocore"]
    assert "needs boto3, botocore, which are not installed" in str(caught.value)
    assert "botocore-config" not in str(caught.value)


# --- pricing --help -----------------------------------------------------------------------------------


def pricing(*argv: str) -> tuple[int, str, str]:
    from gpupools.pricing.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exit_:  # argparse's --help of a command
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()


def test_pricing_help_lists_every_command_in_plain_text() -> None:
    from gpupools.pricing.__main__ import COMMANDS

    status, out, _ = pricing("--help")
    assert status == 0
    assert {"refresh", "import-vms-csv"} <= set(COMMANDS)
    for command in COMMANDS:
        assert f"\n  {command} " in out, command
    assert "``" not in out


@pytest.mark.parametrize("command", ["refresh", "import-vms-csv"])
def test_each_pricing_command_has_plain_help(command: str) -> None:
    status, out, _ = pricing(command, "--help")
    assert status == 0 and f"python -m gpupools.pricing {command}" in out and "``" not in out


def test_pricing_without_or_with_an_unknown_command_exits_2() -> None:
    status, _, err = pricing()
    assert status == 2 and "import-vms-csv" in err
    status, _, err = pricing("refrsh")
    assert status == 2 and "unknown command 'refrsh'" in err

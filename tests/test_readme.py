"""The README stays in step with the code: its config reference names every key, its examples run."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi_kubernetes as k8s
import pytest
from gpupools import config
from gpupools.testing import PROJECT_ROOT, run_program

README = (Path(PROJECT_ROOT) / "README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


@pytest.mark.parametrize(
    ("section", "keys"),
    [
        ("cluster", config.CLUSTER_KEYS),
        ("network", config.NETWORK_KEYS),
        ("systemPool", config.SYSTEM_POOL_KEYS),
        ("gpuPools", config.GPU_POOL_KEYS),
        ("cpuPools", config.CPU_POOL_KEYS),
        ("devicePlugin", config.DEVICE_PLUGIN_KEYS),
        ("autoscaler", config.AUTOSCALER_KEYS),
        ("smokeTest", config.SMOKE_TEST_KEYS),
    ],
)
def test_config_reference_documents_every_key(section: str, keys: tuple[str, ...]) -> None:
    assert f"gpupools:{section}" in README
    for key in keys:
        assert re.search(rf"`[^`]*\b{re.escape(key)}\b[^`]*`", README), f"README config reference lacks {section}.{key}"


def test_every_top_level_key_is_documented() -> None:
    for key in config.TOP_LEVEL_KEYS:
        assert f"gpupools:{key}" in README


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_examples_run_on_the_mock_runtime(index: int) -> None:
    """Each README example builds real resources; the names it leaves to the reader are stubbed."""
    code = python_blocks()[index]
    subnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes"

    def program() -> None:
        namespace = {
            "my_kubeconfig": "{}",
            "my_cluster_id": "platform",
            "my_node_subnet_id": subnet,
            "my_node_role_arn": "arn:aws:iam::123456789012:role/nodes",
            "subnet_a": "subnet-0aaaaaaaaaaaaaaaa",
            "subnet_b": "subnet-0bbbbbbbbbbbbbbbb",
            "subnet_c": "subnet-0cccccccccccccccc",
        }
        if "k8s_provider" in code and "k8s_provider =" not in code:
            namespace["k8s_provider"] = k8s.Provider("readme", kubeconfig="{}", cluster_identifier="readme")
        exec(compile(code, f"README python block {index}", "exec"), namespace)

    result = run_program(program, {})
    assert result.registrations, "the example registers resources"

"""Issue 48, 2.: sizes the catalog lacks, declared in the stack file (``gpupools:catalog.instanceTypes``);
did-you-mean on both clouds; the known sizes listed in ``docs/instance-types.md``."""

from __future__ import annotations

from typing import Any

import pytest
from gpupools import config
from gpupools.catalog import sizes_doc, user_sizes
from gpupools.catalog.aws_instance_types import INSTANCE_TYPES
from gpupools.errors import ConfigError
from gpupools.testing import PROJECT_ROOT, run_stack, stack_config

from tests.test_config import AWS, AZURE, with_key

C6I = {"name": "c6i.4xlarge", "vcpus": 16, "memoryGib": 32}
GR6 = {"name": "gr6.4xlarge", "vcpus": 16, "memoryGib": 128, "gpus": 1, "gpuModel": "nvidia-l4"}


def cpu_pool(values: dict[str, Any], size: str) -> dict[str, Any]:
    return with_key(values, "gpupools:cpuPools", [{"name": "general", "instanceTypes": [size], "maxSize": 3}])


def declaring(values: dict[str, Any], *sizes: dict[str, Any]) -> dict[str, Any]:
    return with_key(values, "gpupools:catalog", {"instanceTypes": list(sizes)})


@pytest.fixture(autouse=True)
def catalog_as_shipped() -> Any:
    yield
    user_sizes.uninstall()


def test_a_size_the_catalog_lacks_is_refused_with_where_to_declare_it() -> None:
    with pytest.raises(ConfigError) as error:
        config.parse(cpu_pool(AWS, "c6i.4xlarge"))
    message = str(error.value)
    assert message.startswith("gpupools:cpuPools[0].instanceTypes[0]: must be an instance type gpupools knows, got 'c6i.4xlarge'")
    assert "gpupools:catalog.instanceTypes" in message and "docs/instance-types.md" in message
    assert "components/gpupools" not in message  # no more "edit the package's source"


@pytest.mark.parametrize(
    ("values", "pools", "typo", "meant"),
    [
        (AWS, "gpupools:gpuPools", "g5.xlarg", "g5.xlarge"),
        (AWS, "gpupools:cpuPools", "m6i.2xlarg", "m6i.2xlarge"),
        (AZURE, "gpupools:gpuPools", "Standard_NC4as_T4_v2", "Standard_NC4as_T4_v3"),
        (AZURE, "gpupools:cpuPools", "Standard_D8sv5", "Standard_D8s_v5"),
    ],
)
def test_a_misspelt_size_gets_the_nearest_known_one(values: dict[str, Any], pools: str, typo: str, meant: str) -> None:
    pool = {"name": "p", "instanceTypes": [typo], "maxSize": 2}
    with pytest.raises(ConfigError, match=rf"got '{typo}' \(did you mean {meant}\?"):
        config.parse(with_key(values, pools, [pool]))


def test_a_declared_size_is_accepted_with_its_facts() -> None:
    spec = config.parse(declaring(cpu_pool(AWS, "c6i.4xlarge"), C6I), "us-west-2")
    assert spec.cpu_pools[0].instance_types == ("c6i.4xlarge",)
    facts = INSTANCE_TYPES["c6i.4xlarge"]
    assert (facts.vcpus, facts.memory_mib, facts.gpus, facts.arch) == (16, 32 * 1024, 0, "x86_64")


def test_declared_sizes_do_not_outlive_their_config() -> None:
    config.parse(declaring(cpu_pool(AWS, "c6i.4xlarge"), C6I))
    with pytest.raises(ConfigError, match="must be an instance type gpupools knows"):
        config.parse(cpu_pool(AWS, "c6i.4xlarge"))
    assert "c6i.4xlarge" not in INSTANCE_TYPES


@pytest.mark.parametrize(
    ("values", "entry", "error"),
    [
        (
            AWS,
            {"name": "g5.xlarge", "vcpus": 4, "memoryGib": 16},
            r"instanceTypes\[0\]\.name: must be a size the catalog does not know",
        ),
        (AWS, {"name": "x1.large", "vcpus": 4}, r"instanceTypes\[0\]\.memoryGib: is required"),
        (AWS, {"name": "x1.large", "vcpus": 0, "memoryGib": 4}, r"instanceTypes\[0\]\.vcpus: must be >= 1"),
        (
            AWS,
            {"name": "x1.large", "vcpus": 4, "memoryGib": 16, "gpus": 1},
            r"instanceTypes\[0\]\.gpuModel: is required for a size with GPUs",
        ),
        (
            AZURE,
            {"name": "Standard_X8", "vcpus": 8, "memoryGib": 32, "efaInterfaces": 1},
            r"instanceTypes\[0\]\.efaInterfaces: is AWS only",
        ),
        (
            AWS,
            {"name": "x1.large", "vcpus": 4, "memoryGib": 16, "architecture": "riscv"},
            r"instanceTypes\[0\]\.architecture: must be one of",
        ),
    ],
)
def test_a_bad_declaration_is_one_error_naming_the_entry(values: dict[str, Any], entry: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError, match=rf"^gpupools:catalog\.{error}"):
        config.parse(declaring(values, entry))


def test_a_declared_gpu_type_sizes_the_karpenter_nodepool() -> None:
    """The NodePool's limits come from the declared facts: 16 vCPU and 1 GPU per node, time-sliced
    four ways, over the pool's maxSize."""
    pools = [dict(p) for p in stack_config("aws-karpenter-dev")["gpupools:gpuPools"]]
    pools[0]["instanceTypes"] = ["gr6.4xlarge"]
    run = run_stack("aws-karpenter-dev", overrides={"gpupools:gpuPools": pools, "gpupools:catalog": {"instanceTypes": [GR6]}})
    [nodepool] = [
        r for r in run.of_type("kubernetes:karpenter.sh/v1:NodePool") if r.inputs["metadata"]["name"] == pools[0]["name"]
    ]
    replicas = pools[0]["sharing"]["timeSlicing"]["replicas"]
    assert nodepool.inputs["spec"]["limits"] == {
        "cpu": str(16 * pools[0]["maxSize"]),
        "nodes": str(pools[0]["maxSize"]),
        "nvidia.com/gpu": str(1 * replicas * pools[0]["maxSize"]),
    }


@pytest.mark.parametrize(
    ("stack", "entry"), [("aws-dev", C6I), ("azure-dev", {"name": "Standard_D8s_v7", "vcpus": 8, "memoryGib": 32})]
)
def test_a_stack_with_a_declared_cpu_size_runs(stack: str, entry: dict[str, Any]) -> None:
    pools = [{"name": "general", "instanceTypes": [entry["name"]], "maxSize": 3}]
    run = run_stack(stack, overrides={"gpupools:cpuPools": pools, "gpupools:catalog": {"instanceTypes": [entry]}})
    sizes = [str(r.inputs.get("vmSize") or r.inputs.get("instanceTypes")) for r in run.registrations]
    assert any(entry["name"] in size for size in sizes)


def test_the_committed_page_lists_the_catalog() -> None:
    page = (PROJECT_ROOT / "docs" / "instance-types.md").read_text()
    assert page == sizes_doc.render(), "run: python -m gpupools.catalog.sizes_doc --write docs/instance-types.md"
    assert all(f"`{name}`" in page for name in INSTANCE_TYPES)

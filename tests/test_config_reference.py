"""docs/configuration.md's reference table is generated from the code's rules, and a changed rule shows up in it.

The page is compared with ``gpupools.config_reference`` (a stale page fails here, naming the command
that refreshes it); the monkeypatch tests change a default, a bound or a key list in the code and
check that the generated text follows; the boundary tests check that each documented bound is the
one the rules enforce, so moving a literal in a rule without its constant fails too.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest
from gpupools import config, config_keys, config_reference, rules, sharing
from gpupools.config_doc import Doc
from gpupools.config_keys import Key
from gpupools.errors import ConfigError
from gpupools.specs import AmiType, Cloud
from gpupools.testing import PROJECT_ROOT

PAGE = Path(PROJECT_ROOT) / "docs" / "configuration.md"


def test_committed_page_is_the_generated_one() -> None:
    page = PAGE.read_text()
    assert config_reference.render(page) == page, (
        "docs/configuration.md is out of date: run python -m gpupools.config_reference --write docs/configuration.md"
    )


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
        ("cost", config.COST_KEYS),
        ("maintenance", config.MAINTENANCE_KEYS),
        ("queueing", config.QUEUEING_KEYS),
        ("queueing.teams[]", config.TEAM_KEYS),
    ],
)
def test_every_key_is_in_the_table(section: str, keys: tuple[str, ...]) -> None:
    table = config_reference.table()
    assert f"gpupools:{section}" in table
    for key in keys:
        assert re.search(rf"`[^`|]*\b{re.escape(key)}\b[^`|]*`", table), f"no row for {section}.{key}"


def test_every_top_level_key_is_in_the_table() -> None:
    table = config_reference.table()
    for key in config.TOP_LEVEL_KEYS:
        assert f"gpupools:{key}" in table


def _row(table: str, key: str, nth: int = 0) -> str:
    rows = [line for line in table.splitlines() if line.startswith(f"| `{key}")]
    assert len(rows) > nth, f"no row {key!r}"
    return rows[nth]


def test_defaults_are_what_the_loader_fills_in() -> None:
    table = config_reference.table()
    azure = config.parse(
        {
            "gpupools:cloud": "azure",
            "gpupools:cluster": {"name": "x"},
            "gpupools:gpuPools": [{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 2}],
        }
    )
    assert f'`"{azure.cluster.kubernetes_version}"`' in _row(table, "gpupools:cluster.kubernetesVersion")
    assert f"{azure.system_pool.min_size} / {azure.system_pool.max_size}" in _row(table, "gpupools:systemPool.minSize")
    assert f"`{azure.device_plugin.version}`" in _row(table, "gpupools:devicePlugin.version")
    assert f"`{azure.autoscaler.max_node_provision_time}`" in _row(table, "gpupools:autoscaler.maxNodeProvisionTime")


def test_a_changed_default_shows_up(monkeypatch: pytest.MonkeyPatch) -> None:
    before = config_reference.table()
    monkeypatch.setattr(config, "DEFAULT_GPU_DISK_GB", {Cloud.AZURE: 256, Cloud.AWS: 100})
    monkeypatch.setattr(
        config, "DEFAULT_SYSTEM_INSTANCE_TYPES", {**config.DEFAULT_SYSTEM_INSTANCE_TYPES, Cloud.AZURE: ("Standard_D8s_v5",)}
    )
    after = config_reference.table()
    assert after != before
    assert "Azure 256, AWS 100" in _row(after, "…diskSizeGb")
    assert "Azure `[Standard_D8s_v5]`" in _row(after, "gpupools:systemPool.instanceTypes")
    assert config_reference.render(PAGE.read_text()) != PAGE.read_text(), "the committed page would now be stale"


def test_a_changed_bound_shows_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "CLUSTER_NAME_MAX", 30)
    monkeypatch.setattr(rules, "AKS_GPU_POOL_NAME_MAX", 6)
    monkeypatch.setattr(sharing, "MAX_REPLICAS", 32)
    monkeypatch.setattr(rules, "DISK_GB_RANGE", {Cloud.AZURE: (64, 2048), Cloud.AWS: (20, 16384)})
    monkeypatch.setattr(rules, "MAINTENANCE_MAX_HOURS", 12)
    table = config_reference.table()
    assert "at most 30 characters" in _row(table, "gpupools:cluster.name")
    assert "Azure at most 6 " in _row(table, "…name")
    assert "pods per GPU, 2-32" in _row(table, "…sharing.timeSlicing.replicas")
    assert "Azure 64-2048 GiB" in _row(table, "gpupools:systemPool.diskSizeGb")
    assert "int, 4-12" in _row(table, "gpupools:maintenance.durationHours")


def test_a_default_the_rules_refuse_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defaults come from parsing, so the generator cannot document a default the rules reject."""
    monkeypatch.setattr(config, "DEFAULT_KUBERNETES_VERSION", "1.20")
    with pytest.raises(ConfigError, match="kubernetesVersion"):
        config_reference.table()


def _changed(key: Key, path: tuple[str, ...], change: Callable[[Key], Key]) -> Key:
    """A copy of the declaration ``key`` with the key at ``path`` (names below ``key``) replaced by ``change(it)``."""
    if not path:
        return change(key)
    return replace(key, keys=tuple(_changed(sub, path[1:], change) if sub.name == path[0] else sub for sub in key.keys))


def _added(path: tuple[str, ...], new: Key) -> Key:
    """A copy of the declaration with ``new`` appended to the section at ``path``."""
    return _changed(config_keys.STACK, path, lambda section: replace(section, keys=(*section.keys, new)))


@pytest.mark.parametrize(
    ("path", "shown"),
    [(("cost",), r"gpupools:cost\.currency"), (("gpuPools",), r"gpupools:gpuPools\[\]\.currency"), ((), "gpupools:currency")],
)
def test_a_key_without_a_doc_fails_naming_it(path: tuple[str, ...], shown: str) -> None:
    """Adding a key to the declaration without its doc makes the reference (and so the page check and
    the schema's descriptions) fail, naming the key and where its doc goes."""
    stack = _added(path, Key("currency", "string"))
    with pytest.raises(
        config_reference.UndocumentedKeyError, match=rf"{shown} has no doc: add a doc to its Key in gpupools\.config_keys"
    ):
        config_reference.rows(stack=stack)


def test_a_key_with_a_doc_gets_its_row_from_the_declaration_alone() -> None:
    """One ``Key`` with its ``Doc`` is the whole reference entry: the row (type from the kind, default
    from the declaration, notes computed from the parsed defaults) and the schema's description."""
    doc = Doc(notes=lambda d: f"the currency of the estimate; {d.aws.cloud.value} and {d.azure.cloud.value} alike")
    stack = _added(("cost",), Key("currency", "string", default="USD", doc=doc))
    rows = config_reference.rows(stack=stack)
    assert (
        config_reference.Row("gpupools:cost.currency", "string", "`USD`", "the currency of the estimate; aws and azure alike")
        in rows
    )
    keys = [row.key for row in rows]
    assert keys.index("gpupools:cost.currency") == keys.index("gpupools:cost.redoneShare") + 1
    assert [row for row in rows if row.key != "gpupools:cost.currency"] == config_reference.rows()


def test_a_shared_row_must_name_the_keys_it_documents() -> None:
    """``systemPool.maxSize`` says it is documented on ``minSize``'s row; a row that stopped naming
    it would leave it undocumented, so the reference fails instead."""
    doc = config_keys.section("systemPool").key("minSize").doc
    assert doc is not None and doc.key_tail
    unnamed = replace(doc, key_tail="")
    stack = _changed(config_keys.STACK, ("systemPool", "minSize"), lambda key: replace(key, doc=unnamed))
    with pytest.raises(
        config_reference.UndocumentedKeyError, match=r"gpupools:systemPool\.maxSize is documented on systemPool\.minSize's row"
    ):
        config_reference.rows(stack=stack)


# --- the documented bounds are the enforced ones ---------------------------------------------------


def _azure(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "gpupools:cloud": "azure",
        "gpupools:cluster": {"name": "docs"},
        "gpupools:gpuPools": [{"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 2}],
    }
    values.update({f"gpupools:{k}": v for k, v in overrides.items()})
    return values


def _accepts(values: dict[str, Any]) -> bool:
    try:
        config.parse(values)
    except ConfigError:
        return False
    return True


def test_cluster_name_bound_is_enforced() -> None:
    assert _accepts(_azure(cluster={"name": "a" * rules.CLUSTER_NAME_MAX}))
    assert not _accepts(_azure(cluster={"name": "a" * (rules.CLUSTER_NAME_MAX + 1)}))


def test_disk_bounds_are_enforced() -> None:
    low, high = rules.DISK_GB_RANGE[Cloud.AZURE]
    for size, ok in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
        assert _accepts(_azure(systemPool={"diskSizeGb": size})) is ok, size


def test_system_pool_minimum_is_enforced() -> None:
    assert _accepts(_azure(systemPool={"minSize": rules.SYSTEM_POOL_MIN_NODES}))
    assert not _accepts(_azure(systemPool={"minSize": rules.SYSTEM_POOL_MIN_NODES - 1}))
    too_small = f"Standard_D{rules.AKS_SYSTEM_POOL_MIN_VCPUS // 2}s_v5"
    assert not _accepts(_azure(systemPool={"instanceTypes": [too_small]}))


def test_cidr_prefix_bounds_are_enforced() -> None:
    low, high = rules.CIDR_PREFIX_RANGE
    assert _accepts(_azure(network={"cidr": f"10.40.0.0/{low}"}))
    assert _accepts(_azure(network={"cidr": f"10.40.0.0/{high}"}))
    assert not _accepts(_azure(network={"cidr": f"10.40.0.0/{high + 1}"}))
    assert not _accepts(_azure(network={"cidr": f"10.0.0.0/{low - 1}"}))


def test_autoscaler_minutes_bound_is_enforced() -> None:
    assert _accepts(_azure(autoscaler={"scaleDownUnneededTime": f"{rules.AUTOSCALER_MINUTES_MAX}m"}))
    assert not _accepts(_azure(autoscaler={"scaleDownUnneededTime": f"{rules.AUTOSCALER_MINUTES_MAX + 1}m"}))


def test_sharing_replica_bounds_are_enforced() -> None:
    def pool(replicas: int) -> dict[str, Any]:
        return {
            "gpuPools": [
                {
                    "name": "t4",
                    "instanceTypes": ["Standard_NC4as_T4_v3"],
                    "maxSize": 2,
                    "sharing": {"mps": {"replicas": replicas}},
                }
            ]
        }

    assert _accepts(_azure(**pool(sharing.MIN_REPLICAS)))
    assert _accepts(_azure(**pool(sharing.MAX_REPLICAS)))
    assert not _accepts(_azure(**pool(sharing.MIN_REPLICAS - 1)))
    assert not _accepts(_azure(**pool(sharing.MAX_REPLICAS + 1)))


# --- the command -----------------------------------------------------------------------------------


def test_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text(f"# Configuration\n\n{config_reference.BEGIN}\n| old |\n{config_reference.END}\n\nafter\n")
    assert config_reference.main(["--check", str(stale)]) == 1
    assert "-| old |" in capsys.readouterr().out
    assert config_reference.main(["--write", str(stale)]) == 0
    assert config_reference.main(["--check", str(stale)]) == 0
    text = stale.read_text()
    assert text.startswith("# Configuration\n") and text.endswith("\n\nafter\n")
    assert "| `gpupools:cloud` |" in text


def test_page_without_markers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="markers"):
        config_reference.render("# no markers\n")


def test_the_instance_types_rows_state_what_each_provisioner_enforces() -> None:
    """configuration.md once said AWS types share one shape whatever the provisioner, while eks.md
    (and ``rules.check_aws_gpu_types``) let a Karpenter pool mix sizes of one GPU count. Each example
    the rows give is checked against the rule for its provisioner."""
    text = " ".join(PAGE.read_text().split())
    assert "under `karpenter` of one GPU count and architecture, sizes may differ (`[g6.xlarge, g6.2xlarge]`)" in text
    assert "under `karpenter` of one architecture (`[m6i.xlarge, m6i.2xlarge]`)" in text
    rules.check_aws_gpu_types(["g6.xlarge", "g6.2xlarge"], "p", karpenter=True)
    with pytest.raises(ConfigError, match=r"must have the shape of g6\.xlarge"):
        rules.check_aws_gpu_types(["g6.xlarge", "g6.2xlarge"], "p", karpenter=False)
    rules.check_aws_cpu_types(["m6i.xlarge", "m6i.2xlarge"], AmiType.AL2023_STANDARD, "p", karpenter=True)
    rules.check_aws_cpu_types(["m6i.2xlarge", "m7i.2xlarge", "m6a.2xlarge"], AmiType.AL2023_STANDARD, "p")
    with pytest.raises(ConfigError, match=r"must have the shape of m6i\.xlarge"):
        rules.check_aws_cpu_types(["m6i.xlarge", "m6i.2xlarge"], AmiType.AL2023_STANDARD, "p")

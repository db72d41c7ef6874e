"""The engine's pinned build and environment (fast: no Go, no engine, no cluster)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gpupools.sim import engine, engine_build, layout

MODULES = layout.checkout_root() / "sim"


def copy_modules(tmp_path: Path) -> Path:
    root = tmp_path / "sim"
    for name in engine_build.MODULE_DIRS:
        shutil.copytree(MODULES / name, root / name)
    return root


def test_the_pinned_versions_come_from_the_module_files(tmp_path: Path) -> None:
    root = copy_modules(tmp_path)
    before = engine_build.required_versions(root)
    assert before[engine_build.PULUMI_PKG].startswith("v3.")
    go_mod = root / engine_build.PROVIDER_MODULE_DIR / "go.mod"
    go_mod.write_text(go_mod.read_text().replace(before[engine_build.PROVIDER_SDK], "v4.99.0"))
    assert engine_build.required_versions(root)[engine_build.PROVIDER_SDK] == "v4.99.0"


def test_the_cache_key_follows_the_module_files(tmp_path: Path) -> None:
    root = copy_modules(tmp_path)
    key = engine_build.cache_key(root, "go1.26.8")
    assert engine_build.cache_key(root, "go1.26.8") == key
    assert engine_build.cache_key(root, "go1.27.0") != key
    go_sum = root / engine_build.ENGINE_MODULE_DIR / "go.sum"
    go_sum.write_text(go_sum.read_text() + "example.com/x v1.0.0 h1:AAAA=\n")
    assert engine_build.cache_key(root, "go1.26.8") != key


def test_the_embedded_files_are_what_generate_go_writes(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(json.dumps({"name": "kubernetes", "version": "", "resources": {"a": 1}}, indent=2))
    (tmp_path / "terraform-mapping.json").write_text(json.dumps({"provider": {"x": [1, 2]}}, indent=4))
    engine_build.embed_files(tmp_path, "4.25.0")
    schema = json.loads((tmp_path / "schema-embed.json").read_text())
    assert schema == {"name": "kubernetes", "version": "4.25.0", "resources": {"a": 1}}
    mapping = (tmp_path / "terraform-mapping-embed.json").read_text()
    assert json.loads(mapping) == {"provider": {"x": [1, 2]}} and "\n" not in mapping and " " not in mapping


def test_the_engine_finds_its_plugins_on_path_and_never_downloads(tmp_path: Path) -> None:
    build = engine_build.EngineBuild(root=tmp_path, versions={})
    env = engine.engine_env(build)
    assert env["PATH"].split(":")[0] == str(tmp_path / "bin")
    assert env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"
    assert env["PULUMI_CONFIG_PASSPHRASE"] == engine.PASSPHRASE


def test_has_state_reads_the_checkpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(layout.STATE_ENV, str(tmp_path))
    assert not engine.has_state("azure-dev")
    path = engine.state_dir("azure-dev") / ".pulumi" / "stacks" / engine.PROJECT / "azure-dev.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 3, "checkpoint": {"stack": "azure-dev", "latest": {"resources": []}}}))
    assert not engine.has_state("azure-dev")  # a destroyed stack keeps its file, with no resources
    path.write_text(json.dumps({"version": 3, "checkpoint": {"latest": {"resources": [{"urn": "urn:pulumi:x"}]}}}))
    assert engine.has_state("azure-dev")


def test_comments_in_go_mod_do_not_change_the_cache_key(tmp_path: Path) -> None:
    root = copy_modules(tmp_path)
    key = engine_build.cache_key(root, "go1.26.8")
    go_mod = root / engine_build.ENGINE_MODULE_DIR / "go.mod"
    go_mod.write_text("// a note on a pin\n" + go_mod.read_text())
    assert engine_build.cache_key(root, "go1.26.8") == key

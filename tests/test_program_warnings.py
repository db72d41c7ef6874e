"""Issue 48, 5.: what the stack program warns about reaches synth like ``pulumi up`` (in ``--json`` as
``programWarnings``, in the text summary within 160 columns), and AKS MIG pools that may sit at zero
get a warning (Azure/AKS #4216: scale-from-zero of MIG pools is an open request). Before, the node
group quota warning went to stderr as one long line, and was missing from ``--json``."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.synth.summary import WIDTH
from gpupools.testing import PROJECT_ROOT, run_stack, stack_config


def mig_pools(min_size: int) -> list[dict[str, Any]]:
    pools = copy.deepcopy(stack_config("azure-dev")["gpupools:gpuPools"])
    a100 = next(p for p in pools if p["name"] == "a100")
    a100["sharing"] = {"mig": {"profile": "MIG1g"}}
    a100["minSize"] = min_size
    return pools


def test_an_aks_mig_pool_at_zero_is_warned_about() -> None:
    [warning] = run_stack("azure-dev", overrides={"gpupools:gpuPools": mig_pools(0)}).warnings
    assert warning.startswith("gpupools:gpuPools[1].sharing.mig: pool a100 may not scale up from zero nodes")
    assert "Azure/AKS #4216" in warning
    assert run_stack("azure-dev", overrides={"gpupools:gpuPools": mig_pools(1)}).warnings == []


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    """A project whose EKS stack has more managed node groups than EKS's default quota (30): eight
    GPU pools of three zones, each with a Spot and an on-demand group."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(PROJECT_ROOT / name, tmp_path / name)
    shutil.copytree(PROJECT_ROOT / "stacks", tmp_path / "stacks")
    config = copy.deepcopy(stack_config("aws-dev"))
    first = config["gpupools:gpuPools"][0]
    config["gpupools:gpuPools"] = [{**first, "name": f"gpu{i}", "labels": {}} for i in range(8)]
    (tmp_path / "Pulumi.crowded.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def _synth(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "components")}
    command = [sys.executable, "-m", "gpupools.synth", "crowded", "--root", str(project), "--out", str(project / "out"), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_synth_shows_the_quota_warning_in_json_and_within_160_columns(crowded: Path) -> None:
    data = json.loads(_synth(crowded, "--json").stdout)
    [warning] = data["programWarnings"]
    assert "more than EKS's default quota of 30" in warning
    text = _synth(crowded, "--no-tree")
    assert text.returncode == 0, text.stderr
    assert "quota" not in text.stderr  # not a stray line on stderr any more
    lines = text.stdout.splitlines()
    assert "The program warns (pulumi up shows these too):" in lines
    assert max(len(line) for line in lines) <= WIDTH
    assert "EKS's default quota" in " ".join(lines)

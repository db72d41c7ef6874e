"""Every command-line entry point: ``--help`` exits 0 with a usage, an unknown option exits 2 with
one error line naming it (argparse's convention), even where a required argument is also missing.

``test_every_entry_point_is_listed`` finds the entry points (``__main__.py`` modules, modules with a
``__main__`` guard, the scripts) so a new one cannot skip these checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

# entry point -> the command that runs it (python -m for package modules, the file for scripts).
MODULES = {
    "gpupools.synth": [PY, "-m", "gpupools.synth"],
    "gpupools.synth diff": [PY, "-m", "gpupools.synth", "diff"],
    "gpupools.synth.diff": [PY, "-m", "gpupools.synth.diff"],
    "gpupools.preflight": [PY, "-m", "gpupools.preflight"],
    "gpupools.pricing": [PY, "-m", "gpupools.pricing"],
    "gpupools.pricing refresh": [PY, "-m", "gpupools.pricing", "refresh"],
    "gpupools.pricing import-vms-csv": [PY, "-m", "gpupools.pricing", "import-vms-csv"],
    # --cluster-name is required (issue 37): given, so the unknown-option check reaches the unknown option.
    "gpupools.aws.deployer_policy": [PY, "-m", "gpupools.aws.deployer_policy", "--cluster-name", "ml-dev"],
    "gpupools.config": [PY, "-m", "gpupools.config", "schema"],
    "gpupools.config_reference": [PY, "-m", "gpupools.config_reference"],
    "gpupools.catalog.sizes_doc": [PY, "-m", "gpupools.catalog.sizes_doc"],
    "gpupools.sim": [PY, "-m", "gpupools.sim"],
    "gpupools.sim.build": [PY, "-m", "gpupools.sim.build"],
    "gpupools.sim.engine_build": [PY, "-m", "gpupools.sim.engine_build"],
    "gpupools.sim.autoscaler_build": [PY, "-m", "gpupools.sim.autoscaler_build"],
    "gpupools.sim.relay": [PY, "-m", "gpupools.sim.relay"],
}
PYTHON_SCRIPTS = {
    name: [PY, str(ROOT / name)]
    for name in (
        "scripts/scan-manifests",
        "scripts/update-crd-schemas",
        "scripts/test-wheel",
        "benchmarks/synth_scale.py",
        "benchmarks/fallback_time.py",
        "benchmarks/time_to_gpu.py",
        "tests/consumer/run_consumer.py",
    )
}
SHELL_SCRIPTS = {
    name: [str(ROOT / name)] for name in ("scripts/test", "scripts/update-snapshots", "scripts/build-sim", "scripts/test-sim")
}
SHELL_SCRIPTS.update(
    {
        name: [str(ROOT / name)]
        for name in (
            "scripts/build-engine",
            "scripts/engine-preview",
            "scripts/build-autoscaler",
            "scripts/setup",
            "scripts/talk",
        )
    }
)
COMMANDS = {**MODULES, **PYTHON_SCRIPTS, **SHELL_SCRIPTS}


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "components"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(command, cwd=ROOT, env=env, text=True, capture_output=True, timeout=120)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_prints_usage_and_exits_0(name: str) -> None:
    result = _run([*COMMANDS[name], "--help"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:"), result.stdout[:200]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_unknown_option_exits_2_with_one_error_line(name: str) -> None:
    result = _run([*COMMANDS[name], "--no-such-option"])
    assert result.returncode == 2, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0] == result.stderr.splitlines()[-1], result.stderr
    assert errors[0].endswith("error: unrecognized arguments: --no-such-option"), errors
    assert result.stdout == ""


def _python_entry_points() -> set[str]:
    found: set[str] = set()
    package = ROOT / "components"
    for path in package.rglob("*.py"):
        module = ".".join(path.relative_to(package).with_suffix("").parts)
        text = path.read_text()
        if path.name == "__main__.py":
            found.add(module.removesuffix(".__main__"))
        elif 'if __name__ == "__main__"' in text:
            found.add(module)
    for folder in ("scripts", "benchmarks", "tests/consumer"):
        for path in (ROOT / folder).iterdir():
            if path.is_file():
                text = path.read_text()
                if text.startswith("#!/usr/bin/env bash") or 'if __name__ == "__main__"' in text:
                    found.add(str(path.relative_to(ROOT)))
    return found


def test_every_entry_point_is_listed() -> None:
    found = _python_entry_points()
    assert "gpupools.preflight" in found and "scripts/scan-manifests" in found  # the scan itself works
    assert found - set(COMMANDS) == set()

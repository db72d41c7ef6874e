"""Issue 48, 5.: a stack file that is not valid YAML (an indentation slip) is one line naming the file,
the line and column and the offending line, exit status 2, not PyYAML's 60-line traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gpupools import config
from gpupools.errors import ConfigError
from gpupools.testing import PROJECT_ROOT, stack_config

BROKEN = """\
config:
  gpupools:cloud: azure
  azure-native:location: eastus
  gpupools:cluster:
    name: ml-dev
  gpupools:systemPool:
   instanceTypes: [Standard_D4s_v5]
    minSize: 2
"""
"""``instanceTypes`` one column left of ``minSize``: the mapping at line 7 ends, line 8 is a stray key."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(PROJECT_ROOT / name, tmp_path / name)
    (tmp_path / "Pulumi.broken.yaml").write_text(BROKEN)
    return tmp_path


def test_the_stack_file_is_one_config_error_at_its_line(project: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        stack_config("broken", project)
    error = caught.value
    assert error.path == "Pulumi.broken.yaml line 8, column 5"
    assert error.rule.startswith("must be valid YAML: ") and "at line 7" in error.rule
    assert error.value == "    minSize: 2"
    assert "indentation" in (error.hint or "")
    with pytest.raises(ConfigError) as again:
        config.load_file(project / "Pulumi.broken.yaml")
    assert again.value.path == error.path


def test_synth_prints_one_line_and_exits_2(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "components")}
    result = subprocess.run(
        [sys.executable, "-m", "gpupools.synth", "broken", "--root", str(project), "--out", str(project / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Pulumi.broken.yaml line 8, column 5: must be valid YAML"), result.stderr
    assert "Traceback" not in result.stderr

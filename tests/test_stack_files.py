"""Every stack file in the project, a user's own too (issue 48, 3.): valid against the JSON Schema and
synthesized by the program. And a user's stack file breaks none of the project's checks: a copy of
the project with one added runs the checks that read stack files.

Before, the checks ran over every ``Pulumi.<stack>.yaml`` they found: a user's own stack (the docs
tell users to add theirs to the project) failed 20 tests (no snapshot, not in the docs' stack
tables, no schema line, a ``KeyError`` on a stack without ``gpupools:systemPool``). They now run over
``tests.examples.EXAMPLE_STACKS``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gpupools.synth import committed_stacks, synthesize
from gpupools.testing import PROJECT_ROOT

from tests.examples import EXAMPLE_FILES, EXAMPLE_STACKS
from tests.test_config_schema import schema_paths

USER_STACK = """\
# A second new user's stack (issue 48): AKS japaneast, A100 MIG inference with Kueue and a budget,
# no systemPool (the default), no schema line.
config:
  gpupools:cloud: azure
  azure-native:location: japaneast
  gpupools:cluster:
    name: tokyo-inf
  gpupools:gpuPools:
    - name: a100
      instanceTypes: [Standard_NC24ads_A100_v4]
      maxSize: 4
      spot: true
      onDemandFallback: true
      sharing:
        mig:
          profile: MIG1g
  gpupools:queueing:
    enabled: true
    namespaces: [inference]
  gpupools:cost:
    budgetPerHour: 40
"""

CHECKS_THAT_READ_STACK_FILES = (
    "tests/test_config_schema.py",
    "tests/test_docs_drift.py",
    "tests/test_regions.py",
    "tests/test_synth_json.py",
    "tests/test_synth_snapshots.py",
    "tests/test_synth_layout.py",
    "tests/test_stack_files.py::test_every_stack_file_is_valid_and_synthesizes",
)
"""The modules whose checks failed, or would, on a user's stack file (the list of issue 48, 3.)."""


def test_every_example_has_its_file() -> None:
    assert all(path.is_file() for path in EXAMPLE_FILES), [p.name for p in EXAMPLE_FILES if not p.is_file()]


@pytest.mark.parametrize("stack", committed_stacks(PROJECT_ROOT))
def test_every_stack_file_is_valid_and_synthesizes(stack: str) -> None:
    document = yaml.safe_load((PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text())
    assert sorted(schema_paths(document["config"])) == [], stack
    synthesis = synthesize(stack, PROJECT_ROOT)  # a bad config raises its one ConfigError here
    assert synthesis.document["resources"], stack


def _copy_project(target: Path) -> None:
    """The checkout's files as git sees them, tracked or new (``git ls-files``: no caches, no
    virtual environment, nothing ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=PROJECT_ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.mark.skipif(not (PROJECT_ROOT / ".git").exists(), reason="the copy is made from git's list of tracked files")
def test_a_users_stack_file_breaks_none_of_the_checks(tmp_path: Path) -> None:
    _copy_project(tmp_path)
    (tmp_path / "Pulumi.tokyo-inference.yaml").write_text(USER_STACK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "components"), str(tmp_path)])}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-n",
            "0",
            *CHECKS_THAT_READ_STACK_FILES,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # The user's stack ran in the one check that takes every stack file, and passed.
    assert (
        "tokyo-inference"
        in subprocess.run(
            [sys.executable, "-m", "pytest", "--co", "-p", "no:cacheprovider", CHECKS_THAT_READ_STACK_FILES[-1]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    )


def test_the_examples_are_the_committed_stack_files_here() -> None:
    """In this repository no other stack file is committed: the examples list is complete."""
    assert sorted(EXAMPLE_STACKS) == committed_stacks(PROJECT_ROOT)

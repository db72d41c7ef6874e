"""The consumer programs (tests/consumer) and the wheel driver (scripts/test-wheel).

CI runs the whole driver once (``scripts/test``: build, fresh environment, consumer run). Here, the
cheap parts: the consumer checks against this checkout's package, proof that they can fail, proof
that the consumer directory really shadows a library installed as ``components`` (the old layout),
and the driver's archive checks on archives with something missing.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONSUMER = ROOT / "tests" / "consumer"


def _driver() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("test_wheel_driver", str(ROOT / "scripts" / "test-wheel"))
    spec = importlib.util.spec_from_loader("test_wheel_driver", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture
def consumer(tmp_path: Path) -> Path:
    """A copy of tests/consumer outside the repository (its own ``components`` package included)."""
    target = tmp_path / "consumer"
    shutil.copytree(CONSUMER, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _run(directory: Path, *args: str, pythonpath: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, *args], cwd=directory, env=env, text=True, capture_output=True, timeout=600)


def test_consumer_programs_pass_against_this_checkout(consumer: Path) -> None:
    import gpupools

    result = _run(consumer, "run_consumer.py", "--expect-version", gpupools.__version__)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "consumer: 7 passed, 0 failed", result.stdout
    assert "ok   nap_node_pools" in lines and "ok   plain_set_mocks" in lines


def test_consumer_checks_fail_on_a_wrong_version_and_location(consumer: Path, tmp_path: Path) -> None:
    result = _run(consumer, "run_consumer.py", "--expect-version", "9.9.9", "--site-packages", str(tmp_path / "elsewhere"))
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == "consumer: 6 passed, 1 failed", result.stdout
    assert "FAIL installed_gpupools: AssertionError: gpupools imported from" in result.stdout


def test_the_consumer_directory_shadows_a_library_installed_as_components(consumer: Path, tmp_path: Path) -> None:
    """The old layout's bug, reproduced: a library shipped as a top-level ``components`` package is
    unreachable from a directory with its own ``components``; so the consumer run would catch it."""
    site = tmp_path / "site"
    (site / "components").mkdir(parents=True)
    (site / "components" / "__init__.py").write_text("")
    (site / "components" / "azure.py").write_text("GpuNodePool = object\n")
    (consumer / "probe.py").write_text(
        "import components\nprint(components.__file__)\nfrom components.azure import GpuNodePool\nprint('reachable')\n"
    )
    result = _run(consumer, "probe.py", pythonpath=str(site))
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == str(consumer / "components" / "__init__.py")
    assert "No module named 'components.azure'" in result.stderr
    # Without the consumer's own package the same library is found: the shadowing is the directory's.
    shutil.rmtree(consumer / "components")
    assert _run(consumer, "probe.py", pythonpath=str(site)).stdout.splitlines()[-1] == "reachable"


def _wheel(path: Path, names: list[str], version: str = "0.2.0") -> Path:
    metadata = f"Metadata-Version: 2.1\nName: gpupools\nVersion: {version}\nRequires-Dist: pulumi-azure-native<4,>=3.13.0\n\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "")
        archive.writestr(f"gpupools-{version}.dist-info/METADATA", metadata)
    return path


def test_wheel_check_accepts_the_package_data_and_flags_what_is_missing(tmp_path: Path) -> None:
    driver = _driver()
    complete = _wheel(tmp_path / "gpupools-0.2.0-py3-none-any.whl", list(driver.PACKAGE_DATA))
    assert driver.check_wheel(complete, "0.2.0") == ([], ["pulumi-azure-native<4,>=3.13.0"])

    broken_dir = tmp_path / "broken"
    broken_dir.mkdir()
    broken = _wheel(broken_dir / "gpupools-0.2.0-py3-none-any.whl", ["gpupools/py.typed", "components/__init__.py"])
    problems, _ = driver.check_wheel(broken, "0.2.0")
    assert "wheel lacks gpupools/catalog/prices_aws.json" in problems
    assert "wheel has top-level entries besides gpupools: ['components']" in problems
    assert any("does not carry version 0.3.0" in p for p in driver.check_wheel(complete, "0.3.0")[0])


def test_sdist_check_flags_missing_price_tables(tmp_path: Path) -> None:
    driver = _driver()
    source = tmp_path / "gpupools-0.2.0"
    for path in ("PKG-INFO", "pyproject.toml", "README.md", *(f"components/{p}" for p in driver.PACKAGE_DATA)):
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text("Metadata-Version: 2.1\nName: gpupools\nVersion: 0.2.0\n" if path == "PKG-INFO" else "")
    sdist = tmp_path / "gpupools-0.2.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(source, arcname=source.name)
    assert driver.check_sdist(sdist, "0.2.0") == []

    (source / "components/gpupools/catalog/prices_azure.json").unlink()
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(source, arcname=source.name)
    assert driver.check_sdist(sdist, "0.2.0") == ["sdist lacks components/gpupools/catalog/prices_azure.json"]

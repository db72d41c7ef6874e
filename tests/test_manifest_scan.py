"""scripts/scan-manifests: what it writes, how it reads Checkov's report, and when it fails.

Checkov itself lives in its own environment (the script creates ``.venv-scan``), so these tests
exercise the script's own logic on report documents shaped like Checkov's JSON output; the scan
proper runs as its own CI step. When a Checkov executable is available (``SCAN_CHECKOV`` or the
scan venv), the last test runs the whole scan.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "scan-manifests"


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("scan_manifests", str(SCRIPT))
    spec = importlib.util.spec_from_loader("scan_manifests", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["scan_manifests"] = module  # dataclasses look their module up while the class is built
    loader.exec_module(module)
    return module


scan = load_script()


def finding(check_id: str, resource: str = "DaemonSet.kube-system.x", reason: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "check_id": check_id,
        "check_name": f"name of {check_id}",
        "resource": resource,
        "file_path": "/azure-dev/daemonset-kube-system-x.yaml",
        "check_result": {"result": "SKIPPED" if reason is not None else "FAILED"},
    }
    if reason:
        item["check_result"]["suppress_comment"] = reason
    return item


def report(
    failed: Sequence[dict[str, Any]] = (), skipped: Sequence[dict[str, Any]] = (), parsing_errors: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "check_type": "kubernetes",
        "results": {
            "passed_checks": [{"check_id": "CKV_K8S_20"}],
            "failed_checks": list(failed),
            "skipped_checks": list(skipped),
            "parsing_errors": list(parsing_errors),
        },
        "summary": {"passed": 1, "failed": len(failed), "skipped": len(skipped), "parsing_errors": len(parsing_errors)},
    }


def test_manifest_filenames() -> None:
    daemonset = {"kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin", "namespace": "kube-system"}}
    assert scan.manifest_filename(daemonset) == "daemonset-kube-system-nvidia-device-plugin.yaml"
    assert (
        scan.manifest_filename({"kind": "ClusterRole", "metadata": {"name": "cluster-autoscaler"}})
        == "clusterrole-cluster-cluster-autoscaler.yaml"
    )
    assert (
        scan.manifest_filename({"kind": "ConfigMap", "metadata": {"name": "a/b c", "namespace": "x"}}) == "configmap-x-a-b-c.yaml"
    )


def test_clean_report_passes() -> None:
    verdict = scan.judge(report())
    assert verdict.ok
    assert verdict.passed == 1


def test_failed_check_fails_the_scan() -> None:
    verdict = scan.judge(report(failed=[finding("CKV_K8S_22")]))
    assert not verdict.ok
    assert [f.check_id for f in verdict.failed] == ["CKV_K8S_22"]
    assert "FAILED  CKV_K8S_22 name of CKV_K8S_22: DaemonSet.kube-system.x" in scan.render(verdict, [], Path("out"))


def test_justified_skip_passes_and_is_listed_with_verbose() -> None:
    verdict = scan.judge(report(skipped=[finding("CKV_K8S_11", reason="no CPU limit on a node-critical agent")]))
    assert verdict.ok
    assert "SKIPPED CKV_K8S_11 DaemonSet.kube-system.x" in scan.render(verdict, [], Path("out"), verbose=True)
    assert "no CPU limit on a node-critical agent" in scan.render(verdict, [], Path("out"), verbose=True)


def test_justified_skips_are_one_line_by_default() -> None:
    """The scan used to end with one long SKIPPED line per skip (73 for the example stacks)."""
    skipped = [
        finding("CKV_K8S_11", resource=f"DaemonSet.kube-system.{name}", reason="node-critical agent") for name in ("a", "b", "c")
    ] + [finding("CKV_K8S_8", resource="Deployment.kube-system.d", reason="no endpoint to probe")]
    verdict = scan.judge(report(skipped=skipped))
    rendered = scan.render(verdict, [], Path("out"))
    skip_lines = [line for line in rendered.splitlines() if line.startswith("SKIPPED")]
    assert skip_lines == [
        "SKIPPED 4 (each with its reason in the object's annotations; --verbose lists them): CKV_K8S_11 x3, CKV_K8S_8 x1"
    ]
    assert "DaemonSet.kube-system.a" not in rendered


def test_skip_without_a_reason_fails_the_scan() -> None:
    verdict = scan.judge(report(skipped=[finding("CKV_K8S_11", reason="")]))
    assert not verdict.ok
    assert [f.check_id for f in verdict.unjustified] == ["CKV_K8S_11"]


def test_parsing_error_fails_the_scan() -> None:
    verdict = scan.judge(report(parsing_errors=["/aws-dev/broken.yaml"]))
    assert not verdict.ok
    assert "PARSE ERROR /aws-dev/broken.yaml" in scan.render(verdict, [], Path("out"))


def test_skip_annotations_are_read_with_their_reasons() -> None:
    manifest = {
        "metadata": {
            "annotations": {
                "checkov.io/skip1": "CKV_K8S_8=no endpoint to probe",
                "checkov.io/skip2": "CKV2_K8S_6=node-local agent, no listener",
                "checkov.io/skipx": "CKV_K8S_9=not a skip key",
                "other": "CKV_K8S_10=not a skip key",
            }
        }
    }
    assert scan.skip_annotations(manifest) == {"CKV_K8S_8": "no endpoint to probe", "CKV2_K8S_6": "node-local agent, no listener"}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return scan.synthesize(scan.DEFAULT_STACKS, tmp_path_factory.mktemp("manifests"))


def test_synthesis_writes_every_kubernetes_object(synthesized: list[Path]) -> None:
    expected = sum(len(list(scan.stack_run(stack).kubernetes_objects())) for stack in scan.DEFAULT_STACKS)
    assert len(synthesized) == expected > 0
    kinds = set()
    for path in synthesized:
        document = yaml.safe_load(path.read_text())
        assert document["apiVersion"] and document["kind"] and document["metadata"]["name"]
        assert path.name == scan.manifest_filename(document)
        assert path.parent.name in scan.DEFAULT_STACKS
        kinds.add(document["kind"])
    assert "DaemonSet" in kinds
    assert any(path.name == "daemonset-kube-system-aws-efa-k8s-device-plugin.yaml" for path in synthesized)


def test_every_skip_in_the_example_stacks_has_a_reason(synthesized: list[Path]) -> None:
    for path in synthesized:
        document = yaml.safe_load(path.read_text())
        annotations = (document["metadata"].get("annotations") or {}).items()
        skip_keys = [k for k, _ in annotations if k.startswith("checkov.io/skip")]
        skips = scan.skip_annotations(document)
        assert len(skips) == len(skip_keys), f"{path.name}: a checkov.io/skip annotation is not CHECK_ID=reason"
        for check, reason in skips.items():
            assert len(reason) >= 10, f"{path.name}: skip of {check} needs a real justification, got {reason!r}"


def _checkov() -> Path | None:
    configured = os.environ.get("SCAN_CHECKOV")
    candidate = Path(configured) if configured else scan.scan_venv() / "bin" / "checkov"
    return candidate if candidate.exists() else None


@pytest.mark.skipif(_checkov() is None, reason="no Checkov here (the scan runs as its own CI step: scripts/scan-manifests)")
def test_the_scan_passes_on_the_example_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    status = scan.main(["--checkov", str(_checkov())])
    output = capsys.readouterr().out
    assert status == 0, output
    assert "manifest scan: OK" in output


def test_skip_annotations_helper_numbers_in_check_order_and_needs_reasons() -> None:
    from gpupools.kubernetes.scan_skips import skip_annotations

    assert skip_annotations({"CKV_K8S_9": "second reason", "CKV_K8S_11": "first reason"}) == {
        "checkov.io/skip1": "CKV_K8S_11=first reason",
        "checkov.io/skip2": "CKV_K8S_9=second reason",
    }
    for bad in (" ", "two\nlines"):
        with pytest.raises(ValueError, match="needs a one-line reason"):
            skip_annotations({"CKV_K8S_8": bad})


def test_device_plugin_skips_reach_the_synthesized_manifests(synthesized: list[Path]) -> None:
    from gpupools.kubernetes import efa_device_plugin
    from gpupools.kubernetes.device_plugin import SCAN_SKIPS

    daemonsets = [p for p in synthesized if p.name == "daemonset-kube-system-nvidia-device-plugin.yaml"]
    assert len(daemonsets) == len(scan.DEFAULT_STACKS)
    for path in daemonsets:
        assert scan.skip_annotations(yaml.safe_load(path.read_text())) == SCAN_SKIPS
    [efa] = [p for p in synthesized if p.name == "daemonset-kube-system-aws-efa-k8s-device-plugin.yaml"]
    assert scan.skip_annotations(yaml.safe_load(efa.read_text())) == efa_device_plugin.SCAN_SKIPS


def test_dcgm_exporter_objects_are_scanned_with_their_skips(synthesized: list[Path]) -> None:
    """Every example stack's DCGM exporter reaches the scan: a DaemonSet per served GPU pool, each
    carrying the component's justified skips, and its scrape Services and counters ConfigMap."""
    from gpupools.kubernetes.dcgm_exporter import SCAN_SKIPS
    from gpupools.testing import stack_config

    for stack in scan.DEFAULT_STACKS:
        # Every GPU pool of these stacks is served (AL2023 or AKS, gpuDriver install).
        pools = sorted(pool["name"] for pool in stack_config(stack.partition("+")[0])["gpupools:gpuPools"])
        mine = [p for p in synthesized if p.parent.name == stack and "dcgm-exporter" in p.name]
        daemonsets = sorted(p.name for p in mine if p.name.startswith("daemonset-"))
        services = sorted(p.name for p in mine if p.name.startswith("service-"))
        assert daemonsets == [f"daemonset-kube-system-dcgm-exporter-{pool}.yaml" for pool in pools], stack
        assert services == [f"service-kube-system-dcgm-exporter-{pool}.yaml" for pool in pools], stack
        assert [p for p in mine if p.name == "configmap-kube-system-dcgm-exporter-counters.yaml"], stack
        for path in mine:
            if path.name.startswith("daemonset-"):
                assert scan.skip_annotations(yaml.safe_load(path.read_text())) == SCAN_SKIPS

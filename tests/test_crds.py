"""The upstream CRDs vendored in the package (``gpupools.kubernetes.crds``), issue 29 (m2): main fetched
the ProvisioningRequest CRD from raw.githubusercontent.com at every preview (egress needed, no pin on
the bytes); now each pinned autoscaler tag has its file in the package, checked here."""

from __future__ import annotations

import hashlib

import pytest
from gpupools.kubernetes import crds
from gpupools.versions import CLUSTER_AUTOSCALER_IMAGE_TAGS

from tests.example_runs import example_run

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def test_every_pinned_autoscaler_tag_has_its_crd_and_nothing_else_is_vendored() -> None:
    assert set(crds.PROVISIONING_REQUEST_CRDS) == set(CLUSTER_AUTOSCALER_IMAGE_TAGS.values())
    files = {p.name for p in (crds.CRD_DIR / "provisioningrequests").glob("*.yaml")}
    assert files == {f"{c.tag}.yaml" for c in crds.PROVISIONING_REQUEST_CRDS.values()}


@pytest.mark.parametrize("image_tag", sorted(crds.PROVISIONING_REQUEST_CRDS))
def test_each_file_is_the_recorded_upstream_bytes_of_its_tag(image_tag: str) -> None:
    """The SHA-256 recorded when the file was copied from kubernetes/autoscaler at the tag (the
    file of ``crds.UPSTREAM_PATH``), and the tag is the image's (``v1.35.2`` -> ``cluster-autoscaler-1.35.2``)."""
    vendored = crds.PROVISIONING_REQUEST_CRDS[image_tag]
    assert vendored.tag == "cluster-autoscaler-" + image_tag.removeprefix("v")
    assert hashlib.sha256(crds.provisioning_request_crd_path(image_tag).read_bytes()).hexdigest() == vendored.sha256
    crd = crds.provisioning_request_crd(image_tag)
    assert crd["kind"] == "CustomResourceDefinition" and crd["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    served = {v["name"] for v in crd["spec"]["versions"] if v["served"]}
    assert "v1" in served  # the version Kueue's ProvisioningRequest admission check writes


def test_the_stack_registers_the_vendored_crd_and_fetches_nothing() -> None:
    """aws-training-dev (queueing with atomic scale-up): one CustomResourceDefinition whose spec is the
    vendored file's, before the autoscaler release; no ``yaml/v2:ConfigFile`` of a URL any more."""
    result = example_run("aws-training-dev")
    assert not [r for r in result.registrations if r.type.startswith("kubernetes:yaml/")]
    [crd] = [r for r in result.of_type(CRD) if r.inputs["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"]
    tag = CLUSTER_AUTOSCALER_IMAGE_TAGS["1.35"]
    assert crd.inputs["spec"] == crds.provisioning_request_crd(tag)["spec"]
    [release] = [r for r in result.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "cluster-autoscaler"]
    assert crd.urn in release.dependencies

"""Upstream CustomResourceDefinitions shipped with the package, so that nothing is fetched at
preview or ``up`` time (no egress needed from the runner, and the bytes cannot change under a tag).

``provisioningrequests/cluster-autoscaler-<version>.yaml``: the ProvisioningRequest CRD
(``autoscaling.x-k8s.io``, ``v1`` and ``v1beta1``), byte for byte the file
``cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml`` of
kubernetes/autoscaler (Apache-2.0) at the release tag ``cluster-autoscaler-<version>`` of every
cluster-autoscaler image gpupools pins (``gpupools.versions.CLUSTER_AUTOSCALER_IMAGE_TAGS``): the API
that autoscaler was built against. ``PROVISIONING_REQUEST_CRDS`` records each file's tag, commit and
SHA-256, which ``tests/test_crds.py`` checks, with one file per pinned image tag. To add a tag:
``git show cluster-autoscaler-<version>:<that path>`` in a clone of kubernetes/autoscaler, into this
directory, and a row here.

Importable by path: ``provisioning_request_crd_path("v1.35.2")`` (the sim uses the same files).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CRD_DIR = Path(__file__).resolve().parent
UPSTREAM_PATH = "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"


@dataclass(frozen=True)
class VendoredCrd:
    """One vendored file: the upstream tag and commit it is a copy of, and its SHA-256."""

    tag: str
    commit: str
    sha256: str


PROVISIONING_REQUEST_CRDS: dict[str, VendoredCrd] = {
    "v1.33.6": VendoredCrd(
        "cluster-autoscaler-1.33.6",
        "be4b5a18814a53539d0fe6299c92839152cae54c",
        "7f523beb246ceaa3ba4d924cd7c7d82d625419d03932be658784935802836e85",
    ),
    "v1.34.5": VendoredCrd(
        "cluster-autoscaler-1.34.5",
        "cb2123ed13148c38fbdb1ede42d8e99761ee2909",
        "04f2b030fa57282363bd30f0d01ce36dc4b421a77ede6b8eba300f73e74d658f",
    ),
    "v1.35.2": VendoredCrd(
        "cluster-autoscaler-1.35.2",
        "2d42588803c71fe9b35dcd9e3669ac6bb550ca22",
        "064b0c2c6156bdf39225a11a7d3e199107e1126c714f336e695a269395946782",
    ),
    "v1.36.1": VendoredCrd(
        "cluster-autoscaler-1.36.1",
        "35e8a280425c76a4040f57ae0fa232a952c02024",
        "e76c84cba9188a45117445abe4ff24fb28f8d52cacf7a90ccf11e47915a95162",
    ),
}
"""Keyed by cluster-autoscaler image tag (``CLUSTER_AUTOSCALER_IMAGE_TAGS`` values)."""


def provisioning_request_crd_path(image_tag: str) -> Path:
    """The vendored ProvisioningRequest CRD for the autoscaler ``image_tag`` (``v1.35.2``).

    Raises:
        KeyError: no file is vendored for that tag.
    """
    crd = PROVISIONING_REQUEST_CRDS[image_tag]
    return CRD_DIR / "provisioningrequests" / f"{crd.tag}.yaml"


def provisioning_request_crd(image_tag: str) -> dict[str, Any]:
    """The CRD object of ``provisioning_request_crd_path`` (the file holds one YAML document)."""
    documents = [d for d in yaml.safe_load_all(provisioning_request_crd_path(image_tag).read_text()) if d]
    if len(documents) != 1:
        raise ValueError(f"{provisioning_request_crd_path(image_tag).name}: expected one CRD, found {len(documents)}")
    return dict(documents[0])


CAPACITY_BUFFER_UPSTREAM_PATH = "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_capacitybuffers.yaml"

CAPACITY_BUFFER_CRDS: dict[str, VendoredCrd] = {
    "v1.35.2": VendoredCrd(
        "cluster-autoscaler-1.35.2",
        "2d42588803c71fe9b35dcd9e3669ac6bb550ca22",
        "cb5f5b1daa39355d5a57035cafe381e6ea50728e962a5e76d5fa1b3035f2a61d",
    ),
    "v1.36.1": VendoredCrd(
        "cluster-autoscaler-1.36.1",
        "35e8a280425c76a4040f57ae0fa232a952c02024",
        "3a35aeeca65ac8ee36ec804ad9d8a7a7271088866de1b5f88ab6af16b46149da",
    ),
}
"""``capacitybuffers/cluster-autoscaler-<version>.yaml``: the CapacityBuffer CRD (``v1alpha1`` served,
``v1beta1`` served and stored), byte for byte ``CAPACITY_BUFFER_UPSTREAM_PATH`` at the tag, for the
autoscaler images gpupools uses CapacityBuffers with (``gpupools.warm.CAPACITY_BUFFER_AUTOSCALER_TAGS``).
The chart (9.59.0) grants the autoscaler access to ``capacitybuffers`` but does not install the CRD."""


def capacity_buffer_crd(image_tag: str) -> dict[str, Any]:
    """The CapacityBuffer CRD object for the autoscaler ``image_tag`` (one YAML document).

    Raises:
        KeyError: no file is vendored for that tag.
    """
    crd = CAPACITY_BUFFER_CRDS[image_tag]
    path = CRD_DIR / "capacitybuffers" / f"{crd.tag}.yaml"
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if len(documents) != 1:
        raise ValueError(f"{path.name}: expected one CRD, found {len(documents)}")
    return dict(documents[0])


def capacity_buffer_crd_path(image_tag: str) -> Path:
    """The vendored CapacityBuffer CRD file for ``image_tag`` (the sim installs the same file)."""
    return CRD_DIR / "capacitybuffers" / f"{CAPACITY_BUFFER_CRDS[image_tag].tag}.yaml"


AUTO_MODE_NODE_CLASS_SCHEMA = CRD_DIR / "eks-auto-mode" / "eks.amazonaws.com_nodeclasses.yaml"
"""EKS Auto Mode's ``eks.amazonaws.com/v1`` NodeClass schema, in ``tests/crds``' format (a ``source``
block, group, kind, scope and the ``openAPIV3Schema`` per served version). AWS publishes no source for
this CRD (Auto Mode installs it on the cluster); the file is datreeio/CRDs-catalog's copy
(``eks.amazonaws.com/nodeclass_v1.json``, MIT), taken from a cluster's CRD and converted to JSON
Schema, which closes every object with ``additionalProperties: false``. Not deployed by gpupools:
``tests/crd_schema.py`` checks the stacks' NodeClasses against it, and the sim installs it as a CRD
(``auto_mode_node_class_crd``) where Auto Mode would have."""


def _structural(node: Any) -> Any:
    """The schema without the catalog's ``additionalProperties: false`` (not part of the CRD, and not
    allowed beside ``properties`` in a CRD's structural schema: the API server prunes unknown fields)."""
    if isinstance(node, dict):
        return {k: _structural(v) for k, v in node.items() if not (k == "additionalProperties" and v is False)}
    if isinstance(node, list):
        return [_structural(v) for v in node]
    return node


def auto_mode_node_class_crd() -> dict[str, Any]:
    """``AUTO_MODE_NODE_CLASS_SCHEMA`` as a ``CustomResourceDefinition`` an API server accepts."""
    pinned = yaml.safe_load(AUTO_MODE_NODE_CLASS_SCHEMA.read_text())
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{pinned['plural']}.{pinned['group']}"},
        "spec": {
            "group": pinned["group"],
            "names": {
                "kind": pinned["kind"],
                "listKind": f"{pinned['kind']}List",
                "plural": pinned["plural"],
                "singular": pinned["kind"].lower(),
            },
            "scope": pinned["scope"],
            "versions": [
                {
                    "name": v["name"],
                    "served": v["served"],
                    "storage": v["storage"],
                    "schema": {"openAPIV3Schema": _structural(v["openAPIV3Schema"])},
                    "subresources": {"status": {}},
                }
                for v in pinned["versions"]
            ],
        },
    }

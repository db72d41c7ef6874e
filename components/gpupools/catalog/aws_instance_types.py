"""EC2 GPU instance types for EKS GPU node groups: vCPU, memory, GPU count and model.

Source: cluster-autoscaler's static EC2 instance list
(``cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go`` in kubernetes/autoscaler), which is
what the autoscaler itself uses to build a scale-from-zero node template, cross-checked against
the EC2 accelerated-computing instance type pages (GPU model). Only x86_64 NVIDIA types the
``AL2023_x86_64_NVIDIA`` and ``BOTTLEROCKET_x86_64_NVIDIA`` AMIs support are GPU rows; a few
general-purpose types (x86_64 and Graviton arm64) are listed with 0 GPUs for the system pool and
``cpuPools``, so that a CPU type in a GPU pool (or a GPU type in a CPU pool) is recognised, and ``g6f`` (fractional GPU, which the autoscaler counts as
0 GPUs) is listed with 0 so it is rejected from GPU pools.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ec2InstanceType:
    """Facts about one EC2 instance type, as cluster-autoscaler sees them."""

    name: str
    vcpus: int
    memory_mib: int
    gpus: int
    gpu_model: str = ""
    arch: str = "x86_64"
    efa_interfaces: int = 0
    """The most EFA interfaces the type takes (one per network card that supports EFA); 0: no EFA.
    See ``EFA_INTERFACES``."""

    @property
    def efa_supported(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def shape(self) -> tuple[int, int, int, str]:
        """(vCPU, memory MiB, GPUs, architecture): what must match across the types of one node
        group (cluster-autoscaler builds one template from the first type, and one AMI serves them all)."""
        return (self.vcpus, self.memory_mib, self.gpus, self.arch)


EFA_INTERFACES: dict[str, int] = {
    # Which types support EFA: Amazon EC2 User Guide, "Elastic Fabric Adapter", "Supported instance
    # types" (efa.html#efa-instance-types), as aws/eks-charts ``stable/aws-efa-k8s-device-plugin/values.yaml``
    # (``supportedInstanceLabels``, commit 050f81ee) lists them: the g4dn/g5/g6/g6e sizes below, p4d,
    # p4de, p5, p5e, p5en; the smaller sizes, g6f and the general-purpose types here do not.
    # How many: EC2's ``NetworkInfo.EfaInfo.MaximumEfaInterfaces`` (DescribeInstanceTypes; botocore's
    # ec2 model has the field, not per-type figures), one EFA interface per EFA-capable network card.
    # The figures are those of meta-pytorch/torchx ``torchx/specs/named_resources_aws.py`` (EFA device
    # counts per type: p4d/p4de 4, p5/p5e 32, p5en 16, g6e.24xlarge 2, g6e.48xlarge 4, the g4dn and g5
    # sizes 1); g6 and g6e.8xlarge-16xlarge, absent there, have one network card, hence 1. Refresh
    # against ``aws ec2 describe-instance-types --filters Name=network-info.efa-supported,Values=true``.
    "g4dn.8xlarge": 1,
    "g4dn.12xlarge": 1,
    "g4dn.16xlarge": 1,
    "g4dn.metal": 1,
    "g5.8xlarge": 1,
    "g5.12xlarge": 1,
    "g5.16xlarge": 1,
    "g5.24xlarge": 1,
    "g5.48xlarge": 1,
    "g6.8xlarge": 1,
    "g6.12xlarge": 1,
    "g6.16xlarge": 1,
    "g6.24xlarge": 1,
    "g6.48xlarge": 1,
    "g6e.8xlarge": 1,
    "g6e.12xlarge": 1,
    "g6e.16xlarge": 1,
    "g6e.24xlarge": 2,
    "g6e.48xlarge": 4,
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
}
"""Maximum EFA interfaces by instance type, for the EFA-capable types of this catalog (absent: no EFA)."""


def _family(model: str, *rows: tuple[str, int, int, int]) -> dict[str, Ec2InstanceType]:
    return {
        name: Ec2InstanceType(name, cpu, mem, gpus, model if gpus else "", efa_interfaces=EFA_INTERFACES.get(name, 0))
        for name, cpu, mem, gpus in rows
    }


INSTANCE_TYPES: dict[str, Ec2InstanceType] = {
    **_family(
        "nvidia-tesla-t4",
        ("g4dn.xlarge", 4, 16384, 1),
        ("g4dn.2xlarge", 8, 32768, 1),
        ("g4dn.4xlarge", 16, 65536, 1),
        ("g4dn.8xlarge", 32, 131072, 1),
        ("g4dn.16xlarge", 64, 262144, 1),
        ("g4dn.12xlarge", 48, 196608, 4),
        ("g4dn.metal", 96, 393216, 8),
    ),
    **_family(
        "nvidia-a10g",
        ("g5.xlarge", 4, 16384, 1),
        ("g5.2xlarge", 8, 32768, 1),
        ("g5.4xlarge", 16, 65536, 1),
        ("g5.8xlarge", 32, 131072, 1),
        ("g5.16xlarge", 64, 262144, 1),
        ("g5.12xlarge", 48, 196608, 4),
        ("g5.24xlarge", 96, 393216, 4),
        ("g5.48xlarge", 192, 786432, 8),
    ),
    **_family(
        "nvidia-l4",
        ("g6.xlarge", 4, 16384, 1),
        ("g6.2xlarge", 8, 32768, 1),
        ("g6.4xlarge", 16, 65536, 1),
        ("g6.8xlarge", 32, 131072, 1),
        ("g6.16xlarge", 64, 262144, 1),
        ("g6.12xlarge", 48, 196608, 4),
        ("g6.24xlarge", 96, 393216, 4),
        ("g6.48xlarge", 192, 786432, 8),
    ),
    **_family(
        "nvidia-l40s",
        ("g6e.xlarge", 4, 32768, 1),
        ("g6e.2xlarge", 8, 65536, 1),
        ("g6e.4xlarge", 16, 131072, 1),
        ("g6e.8xlarge", 32, 262144, 1),
        ("g6e.16xlarge", 64, 524288, 1),
        ("g6e.12xlarge", 48, 393216, 4),
        ("g6e.24xlarge", 96, 786432, 4),
        ("g6e.48xlarge", 192, 1572864, 8),
    ),
    **_family("nvidia-l4", ("g6f.xlarge", 4, 16384, 0), ("g6f.2xlarge", 8, 32768, 0)),
    **_family("nvidia-a100", ("p4d.24xlarge", 96, 1179648, 8)),
    **_family("nvidia-a100-80gb", ("p4de.24xlarge", 96, 1179648, 8)),
    **_family("nvidia-h100", ("p5.48xlarge", 192, 2097152, 8)),
    # p5e.48xlarge is not in cluster-autoscaler's static list (last updated 2026-01-22); its facts
    # are EC2's (the same as p5en.48xlarge), and the autoscaler reads them with
    # ec2:DescribeInstanceTypes, which the EKS autoscaler policy grants.
    **_family("nvidia-h200", ("p5e.48xlarge", 192, 2097152, 8), ("p5en.48xlarge", 192, 2097152, 8)),
    **_family(
        "",
        ("m6i.large", 2, 8192, 0),
        ("m6i.xlarge", 4, 16384, 0),
        ("m6i.2xlarge", 8, 32768, 0),
        ("m7i.large", 2, 8192, 0),
        ("m7i.xlarge", 4, 16384, 0),
        ("m7i.2xlarge", 8, 32768, 0),
        ("m5.large", 2, 8192, 0),
        ("m5.xlarge", 4, 16384, 0),
        ("m5.2xlarge", 8, 32768, 0),
        ("c6i.xlarge", 4, 8192, 0),
        ("c6i.2xlarge", 8, 16384, 0),
        ("r6i.xlarge", 4, 32768, 0),
        ("t3.medium", 2, 4096, 0),
        ("t3.large", 2, 8192, 0),
        ("m6i.4xlarge", 16, 65536, 0),
        ("m7i.4xlarge", 16, 65536, 0),
        ("m6a.xlarge", 4, 16384, 0),
        ("m6a.2xlarge", 8, 32768, 0),
        ("m6a.4xlarge", 16, 65536, 0),
        ("m7a.2xlarge", 8, 32768, 0),
        ("c7i.2xlarge", 8, 16384, 0),
        ("r7i.2xlarge", 8, 65536, 0),
    ),
    # Graviton (arm64) general-purpose and compute types, for CPU pools with an ARM_64 AMI type.
    **{
        name: Ec2InstanceType(name, cpu, mem, 0, "", "arm64")
        for name, cpu, mem in (
            ("m6g.xlarge", 4, 16384),
            ("m6g.2xlarge", 8, 32768),
            ("m7g.xlarge", 4, 16384),
            ("m7g.2xlarge", 8, 32768),
            ("m7g.4xlarge", 16, 65536),
            ("m8g.2xlarge", 8, 32768),
            ("c7g.2xlarge", 8, 16384),
            ("c8g.2xlarge", 8, 16384),
        )
    },
}
"""Instance facts by type name."""

"""Run the consumer programs the way a platform team would: ``gpupools`` installed, their own
``components`` package beside the programs, Pulumi's mock runtime instead of a cloud.

    python run_consumer.py [--expect-version 0.2.0] [--site-packages DIR]

Run it from this directory (``scripts/test-wheel`` copies it out of the repository first), so this
directory is ``sys.path[0]``, ahead of wherever gpupools is installed. Each check prints one line,
and the last line is ``consumer: <n> passed, <m> failed``; the exit status is 1 when any failed.

``--expect-version``: ``gpupools.__version__`` and the installed distribution's metadata must equal
it (the wheel's version). ``--site-packages``: ``gpupools`` must be imported from there (the fresh
environment the wheel went into), not from a checkout.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.resources
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent

CHECKS: list[tuple[str, Callable[[argparse.Namespace], None]]] = []


def check(function: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
    CHECKS.append((function.__name__, function))
    return function


def _path_index(directory: Path) -> int:
    for index, entry in enumerate(sys.path):
        if Path(entry or ".").resolve() == directory.resolve():
            return index
    raise AssertionError(f"{directory} is not on sys.path: {sys.path}")


@check
def own_components_package_first(_: argparse.Namespace) -> None:
    """The consumer's ``components`` is its own package, found before the directory gpupools lives in."""
    import components.network
    import gpupools

    import components

    assert Path(components.__file__).resolve().parent == HERE / "components", components.__file__
    assert components.OWNER == "platform-team"
    assert components.network.AKS_CLUSTER == "ml-platform"
    gpupools_dir = Path(gpupools.__file__).resolve().parents[1]
    assert _path_index(HERE) < _path_index(gpupools_dir), (sys.path, gpupools_dir)
    # What a library still shipped as ``components`` would meet here: its modules unreachable.
    assert importlib.util.find_spec("components.azure") is None
    assert not (gpupools_dir / "components").exists(), f"something installed a top-level components package in {gpupools_dir}"


@check
def installed_gpupools(args: argparse.Namespace) -> None:
    """``gpupools`` comes from where it was installed, with the version of the distribution."""
    import gpupools

    location = Path(gpupools.__file__).resolve()
    if args.site_packages:
        site = Path(args.site_packages).resolve()
        assert site in location.parents, f"gpupools imported from {location}, not from {site}"
    if args.expect_version:
        assert gpupools.__version__ == args.expect_version, (gpupools.__version__, args.expect_version)
        assert importlib.metadata.version("gpupools") == args.expect_version
    assert (importlib.resources.files("gpupools") / "py.typed").is_file(), "py.typed missing"
    if args.site_packages:
        # No checkout around an installed package: the repository's stack helpers look in the cwd.
        from gpupools.testing import PROJECT_ROOT

        assert Path.cwd() == PROJECT_ROOT, PROJECT_ROOT


@check
def price_tables(_: argparse.Namespace) -> None:
    """The price tables are package data, readable from the installed package."""
    from gpupools.catalog.prices import price_table
    from gpupools.specs import Cloud

    azure = price_table(Cloud.AZURE).price("eastus", "Standard_NC4as_T4_v3")
    aws = price_table(Cloud.AWS).price("us-west-2", "g4dn.xlarge")
    assert azure is not None and aws is not None, (azure, aws)
    for price in (azure, aws):
        assert 0 < price.spot < price.on_demand, price


def _kinds(run: Any) -> set[str]:
    return {r.type for r in run.registrations}


@check
def aks_pool(_: argparse.Namespace) -> None:
    """A GPU pool on an existing AKS cluster by names: a Spot and an on-demand agent pool, the device
    plugin and the priority expander."""
    import aks_program
    from gpupools.testing import run_program

    run = run_program(aks_program.program, project="platform")
    pools = run.of_type("azure-native:containerservice:AgentPool")
    assert sorted(p.inputs.get("scaleSetPriority", "Regular") for p in pools) == ["Regular", "Spot"], pools
    assert {p.inputs["resourceName"] for p in pools} == {"ml-platform"}
    assert {p.inputs["resourceGroupName"] for p in pools} == {"rg-platform-ml"}
    assert {"kubernetes:apps/v1:DaemonSet", "kubernetes:core/v1:ConfigMap"} <= _kinds(run), _kinds(run)
    assert len(run.outputs["agentPools"]) == 2


@check
def eks_node_group(_: argparse.Namespace) -> None:
    """A GPU node group on an existing EKS cluster: per zone Spot and on-demand groups, their
    scale-from-zero ASG tags (naming the ASGs the mocks fabricate), the device plugin, the expander."""
    import eks_program
    from gpupools.testing import run_program

    run = run_program(eks_program.program, project="platform")
    groups = run.of_type("aws:eks/nodeGroup:NodeGroup")
    assert len(groups) == 4, [g.name for g in groups]
    assert {g.inputs["capacityType"] for g in groups} == {"SPOT", "ON_DEMAND"}
    tags = run.of_type("aws:autoscaling/tag:Tag")
    assert tags and all(t.inputs["autoscalingGroupName"].startswith("eks-") for t in tags), tags[:1]
    assert {"kubernetes:apps/v1:DaemonSet", "kubernetes:core/v1:ConfigMap"} <= _kinds(run), _kinds(run)


@check
def nap_node_pools(_: argparse.Namespace) -> None:
    """NAP NodePools from plain pool mappings, and the device plugin on their GPU nodes."""
    import nap_program
    from gpupools.testing import run_program

    run = run_program(nap_program.program, project="platform")
    kinds = _kinds(run)
    nodepools = [r for r in run.kubernetes_objects() if r.type.endswith(":NodePool")]
    assert nodepools, sorted(kinds)
    assert any(r.type.endswith(":AKSNodeClass") for r in run.kubernetes_objects()), sorted(kinds)
    assert "kubernetes:apps/v1:DaemonSet" in kinds, sorted(kinds)


@check
def plain_set_mocks(_: argparse.Namespace) -> None:
    """The documented way for a consumer's own tests: ``GpupoolsMocks`` given to plain
    ``pulumi.runtime.set_mocks``; Pulumi's default echoing mocks stop with a message naming it."""
    import eks_program
    import pulumi
    from gpupools.errors import MissingOutputError
    from gpupools.testing import GpupoolsMocks
    from pulumi.runtime import settings

    class EchoMocks(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            return f"{args.name}-id", dict(args.inputs)

        def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
            return {}

    def asg_names(mocks: pulumi.runtime.Mocks) -> list[str]:
        settings.ROOT.set(None)
        pulumi.runtime.set_mocks(mocks, project="platform", stack="test", preview=False)
        names: list[str] = []

        @pulumi.runtime.test
        def test() -> Any:
            import gpupools.aws

            group = gpupools.aws.GpuNodeGroup(
                "t4",
                eks_program.POOL,
                cluster_name="ml-platform",
                node_role_arn="arn:aws:iam::123456789012:role/n",
                subnet_ids_by_zone={"us-west-2a": "subnet-0aaaaaaaaaaaaaaa1"},
            )
            tags = [tag for tags in group.asg_tags.values() for tag in tags]
            return pulumi.Output.all(*[t.autoscaling_group_name for t in tags]).apply(names.extend)

        test()
        return names

    names = asg_names(GpupoolsMocks())
    assert names and all(n.startswith("eks-ml-platform-t4-") for n in names), names
    try:
        asg_names(EchoMocks())
    except MissingOutputError as error:
        assert "GpupoolsMocks" in str(error) and "aws.eks.NodeGroup(t4-" in str(error), error
    else:
        raise AssertionError("echoing mocks gave a node group an Auto Scaling group")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_consumer.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--expect-version", help="the version gpupools must report (the wheel's)")
    parser.add_argument("--site-packages", help="the directory gpupools must be imported from")
    args = parser.parse_args(argv)
    if sys.path[0] and Path(sys.path[0]).resolve() != HERE:
        parser.error(f"run me as a script from {HERE.name}/ (sys.path[0] is {sys.path[0]})")
    passed = failed = 0
    for name, function in CHECKS:
        try:
            function(args)
        except Exception as error:
            failed += 1
            print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
            traceback.print_exc(limit=-3, file=sys.stdout)
        else:
            passed += 1
            print(f"ok   {name}", flush=True)
    print(f"consumer: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

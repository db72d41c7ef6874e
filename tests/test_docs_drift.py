"""The docs cannot drift from the code: counts, lists and claims that change with the code are
checked here against the code itself.

Each test names the finding of issue 30 it pins: ``venv`` where Pulumi.yaml uses ``.venv``; the
bad-input counts of safety.md; the pages of index.md; the stacks and the layout of how-it-works.md,
README.md and synth.md; karpenter-nap.md's reservation-interruption rule; costs.md's European
regions; the library page's autoscaler requirements, child names and the one name for the pool
collections (``node_pools``) on both clouds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpupools.specs import Cloud
from gpupools.testing import PROJECT_ROOT, run_program

from tests.examples import EXAMPLE_STACKS

ROOT = Path(PROJECT_ROOT)
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
STACKS = list(EXAMPLE_STACKS)


def code_blocks(page: Path) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) in ("bash", "sh", "")]


# --- .venv --------------------------------------------------------------------------------------------


def venvs_in(text: str) -> list[str]:
    """Every virtualenv a command creates (``-m venv X``) or runs from (``X/bin/...``)."""
    found = []
    for line in text.splitlines():
        command = line.split("#", 1)[0]
        for match in re.finditer(r"-m venv\s+(\S+)|(\S*venv)/bin/", command):
            found.append(match.group(1) or match.group(2))
    return found


def test_the_venv_finder_sees_what_the_old_pages_had() -> None:
    assert venvs_in("python3 -m venv venv && venv/bin/pip install -r requirements.txt") == ["venv", "venv"]
    assert venvs_in("venv/bin/python -m gpupools.preflight aws-dev   # or .venv") == ["venv"]
    assert venvs_in("python3 -m venv policy/.venv && policy/.venv/bin/python -m pip") == ["policy/.venv", "policy/.venv"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_doc_command_uses_dot_venv(page: Path) -> None:
    """Pulumi.yaml runs the program from ``.venv``; a page that creates ``venv`` leaves the CLI
    without the packages (aks.md, eks.md and preflight.md did)."""
    for block in code_blocks(page):
        for venv in venvs_in(block):
            assert Path(venv).name == ".venv", f"{page.name}: a command uses the virtualenv {venv!r}, not .venv"


def test_pulumi_yaml_and_the_policy_pack_name_dot_venv() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    pack = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert pack["runtime"]["options"]["virtualenv"] == ".venv"
    for workflow in (ROOT / ".github" / "workflows").glob("*.yml"):
        for venv in venvs_in(workflow.read_text()):
            assert Path(venv).name == ".venv", f"{workflow.name} uses the virtualenv {venv!r}"


# --- counts and lists ----------------------------------------------------------------------------------


def test_safety_states_the_bad_input_catalogues_counts() -> None:
    from tests import test_bad_input_catalogue as catalogue

    stack_configs = len(catalogue.STACK_CASES) + len(catalogue.CPU_POOL_BAD)
    components = len(catalogue.COMPONENT_CASES)
    text = " ".join((DOCS / "safety.md").read_text().split())
    expected = f"runs {stack_configs} bad stack configs through the real program and {components} bad component arguments"
    assert expected in text, f"docs/safety.md: write '{expected}' (the catalogue's counts)"


def test_index_lists_every_page() -> None:
    index = (DOCS / "index.md").read_text()
    table = index[index.index("## Pages") :]
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", table))
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages - linked == set(), f"docs/index.md's page table lacks {sorted(pages - linked)}"


def test_mkdocs_nav_lists_every_page() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def files(entries: Any) -> set[str]:
        if isinstance(entries, str):
            return {entries}
        if isinstance(entries, list):
            return set().union(*(files(e) for e in entries))
        if isinstance(entries, dict):
            return set().union(*(files(v) for v in entries.values()))
        return set()

    assert files(nav) == {p.name for p in DOCS.glob("*.md")}


STACK_LISTS = [
    (ROOT / "README.md", ".venv/bin/python -m gpupools.synth azure-dev"),
    (DOCS / "synth.md", ".venv/bin/python -m gpupools.synth azure-dev"),
    (DOCS / "how-it-works.md", "Pulumi.yaml, Pulumi.<stack>.yaml"),
]
"""Lines that list the example stacks: each must name every committed stack."""


@pytest.mark.parametrize(("page", "marker"), STACK_LISTS, ids=[f"{p.name}" for p, _ in STACK_LISTS])
def test_stack_lists_name_every_committed_stack(page: Path, marker: str) -> None:
    [line] = [line for line in page.read_text().splitlines() if line.startswith(marker)]
    named = set(re.findall(r"\b(?:aws|azure)-[a-z0-9-]*dev\b", line))
    assert named == set(STACKS), f"{page.name}: the line '{marker} ...' names {sorted(named)}, the stacks are {STACKS}"


def layout_block() -> list[str]:
    text = (DOCS / "how-it-works.md").read_text()
    section = text[text.index("## Development") :]
    return FENCE.search(section).group(2).splitlines()  # type: ignore[union-attr]


def test_how_it_works_layout_names_paths_that_exist_and_every_subpackage() -> None:
    package = ROOT / "components" / "gpupools"
    named: set[str] = set()
    for line in layout_block():
        indented = line.startswith("  ")
        names = line.strip().split("  ", 1)[0]
        for name in (n.strip() for n in names.split(",")):
            if not name or "<" in name:
                continue
            path = (package / name) if indented else (ROOT / name)
            assert path.exists(), f"docs/how-it-works.md's layout names {name}, which does not exist"
            if indented:
                named.add(name.rstrip("/"))
    subpackages = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages <= named, f"docs/how-it-works.md's layout leaves out {sorted(subpackages - named)}"


# --- claims --------------------------------------------------------------------------------------------


def test_karpenter_nap_says_the_reservation_interruption_rule_comes_with_reservations() -> None:
    from gpupools.aws import karpenter_iam

    assert karpenter_iam.RESERVATION_INTERRUPTION_EVENTS, "the rule exists in the code"
    text = " ".join((DOCS / "karpenter-nap.md").read_text().split())
    sentence = next(s for s in re.split(r"(?<=\.) ", text) if "capacity-reservation interruption" in s)
    assert "is omitted" not in sentence
    assert "registered when a pool has `reservations`" in sentence


def test_costs_does_not_deny_european_prices_the_table_has() -> None:
    from gpupools.catalog.prices import price_table

    european = {r for r in price_table(Cloud.AZURE).prices if "europe" in r}
    text = (DOCS / "costs.md").read_text()
    if european:
        assert "no European regions" not in text
        for region in sorted(european):
            assert region in text, f"docs/costs.md does not name {region}, which the Azure table prices"


def test_the_library_page_covers_the_autoscaler_of_an_existing_cluster() -> None:
    from gpupools.aws.autoscaler import BALANCING_LABELS, EXPANDER
    from gpupools.azure.autoscaler_profile import EXPANDER as AKS_EXPANDER

    text = (DOCS / "library.md").read_text()
    assert f"autoScalerProfile.expander: {AKS_EXPANDER}" in text
    assert f"--expander={EXPANDER}" in text
    for label in BALANCING_LABELS:
        assert f"--balancing-label={label}" in text
    assert "autoscaler_profile(" in text and "cluster-autoscaler-priority-expander" in text


def test_the_library_pages_child_names_are_the_components() -> None:
    from gpupools.aws import GpuNodeGroup
    from gpupools.azure import GpuNodePool

    def program() -> None:
        GpuNodePool(
            "t4",
            {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4},
            resource_group_name="rg",
            cluster_name="aks",
        )
        GpuNodeGroup(
            "gpu",
            {"name": "gpu", "instanceTypes": ["g5.xlarge"], "maxSize": 4},
            cluster_name="eks",
            node_role_arn="arn:aws:iam::123456789012:role/nodes",
            subnet_ids_by_zone={"us-west-2a": "subnet-0a", "us-west-2b": "subnet-0b"},
        )

    run = run_program(program)
    names = {r.name for r in run.registrations}
    text = (DOCS / "library.md").read_text()
    table = text[text.index("| component | child | logical name |") :].split("\n\n", 1)[0]
    documented = set()
    for row in table.splitlines()[2:]:
        cell = row.split("|")[3]
        documented |= {n for n in re.findall(r"`([^`]+)`", cell) if "..." not in n}
    assert documented and documented <= names, f"library.md names children no run has: {sorted(documented - names)}"
    spot = run.named("t4-spot")
    assert re.fullmatch(r"t4s[0-9a-f]{4}", spot.inputs["agentPoolName"])
    assert re.fullmatch(r"eks-gpu-spot-a-[0-9a-f]{4}", run.named("gpu-spot-us-west-2a").inputs["nodeGroupName"])


# --- one name for the pool collections ---------------------------------------------------------------------


def test_every_pool_component_has_node_pools_the_same_list_as_its_old_name() -> None:
    from gpupools.aws import CpuNodeGroup, GpuNodeGroup, KarpenterNodePools
    from gpupools.azure import CpuNodePool, GpuNodePool, NapNodePools

    made: dict[str, Any] = {}
    aws_args = {
        "cluster_name": "eks",
        "node_role_arn": "arn:aws:iam::123456789012:role/nodes",
        "subnet_ids_by_zone": {"us-west-2a": "subnet-0a", "us-west-2b": "subnet-0b"},
    }

    def program() -> None:
        made["GpuNodePool"] = GpuNodePool(
            "t4",
            {"name": "t4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4},
            resource_group_name="rg",
            cluster_name="aks",
        )
        made["CpuNodePool"] = CpuNodePool(
            "cpu",
            {"name": "cpu", "instanceTypes": ["Standard_D8s_v5"], "maxSize": 4},
            resource_group_name="rg",
            cluster_name="aks",
        )
        made["GpuNodeGroup"] = GpuNodeGroup("gpu", {"name": "gpu", "instanceTypes": ["g5.xlarge"], "maxSize": 4}, **aws_args)
        made["CpuNodeGroup"] = CpuNodeGroup("gen", {"name": "gen", "instanceTypes": ["m6i.2xlarge"], "maxSize": 4}, **aws_args)
        made["NapNodePools"] = NapNodePools(
            "nap", [{"name": "nt4", "instanceTypes": ["Standard_NC4as_T4_v3"], "maxSize": 4}], location="eastus"
        )
        made["KarpenterNodePools"] = KarpenterNodePools(
            "karp",
            [{"name": "kg", "instanceTypes": ["g5.xlarge"], "maxSize": 4}],
            cluster_name="eks",
            node_role_name="nodes",
            zones=["us-west-2a", "us-west-2b"],
        )

    run_program(program)
    for kind, component in made.items():
        old = component.groups if kind.endswith("NodeGroup") else component.pools
        assert component.node_pools is old and component.node_pools, kind
    assert [p.capacity.value for p in made["GpuNodeGroup"].node_pools[:2]] == ["spot", "on-demand"]

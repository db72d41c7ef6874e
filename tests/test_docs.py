"""The README and docs/ stay true: every Python snippet runs as written, every relative link and
anchor resolves, and the version they install is the package's.

Snippets run on Pulumi's mock runtime through ``gpupools.testing.run_program`` (what they register
is recorded, nothing is deployed); a snippet that calls ``run_program`` itself (a test of a user's
program, or one with its own ``set_mocks``), or a script that says so in its first line
(``# A script, not a Pulumi program``), runs as plain Python. Only ```python blocks run: ```bash, ```yaml and untagged blocks are
shell, config or output, not programs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
from gpupools import __version__
from gpupools.testing import PROJECT_ROOT, run_program

ROOT = Path(PROJECT_ROOT)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def snippets(language: str = "python") -> list[Snippet]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            if match.group(1) == language:
                found.append(Snippet(page, text.count("\n", 0, match.start()) + 1, match.group(2)))
    return found


def without_fences(text: str) -> str:
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def prose(text: str) -> str:
    """``text`` without fenced blocks and inline code, where brackets are not links."""
    return re.sub(r"`[^`\n]*`", "", without_fences(text))


def _params() -> list[object]:
    return [pytest.param(snippet, id=snippet.id) for snippet in snippets()]


SCRIPT_MARK = "# A script, not a Pulumi program"
"""First line of a snippet that runs outside a Pulumi program (it registers nothing)."""


def test_the_pages_have_python_snippets() -> None:
    pages = {s.page.name for s in snippets()}
    assert {"README.md", "library.md", "workloads.md", "karpenter-nap.md"} <= pages


@pytest.mark.parametrize("snippet", _params())
def test_python_snippet_runs_as_written(snippet: Snippet) -> None:
    code = compile(snippet.code, snippet.id, "exec")
    if "run_program(" in snippet.code or "set_mocks(" in snippet.code or snippet.code.startswith(SCRIPT_MARK):
        exec(code, {"__name__": "snippet"})  # it runs its own program on the mock runtime and asserts
        return

    def program() -> None:
        exec(code, {"__name__": "snippet"})

    run = run_program(program)
    assert run.registrations, f"{snippet.id} registers no resource"


def test_snippets_leave_nothing_undefined() -> None:
    """The bug the README had: names a reader must invent (``my_kubeconfig``, ``k8s_provider``)."""
    for snippet in snippets():
        for name in ("my_kubeconfig", "my_cluster_id", "my_node_subnet_id", "my_node_role_arn"):
            assert name not in snippet.code, f"{snippet.id} uses {name}"
        if "k8s_provider" in snippet.code:
            assert "k8s_provider =" in snippet.code, f"{snippet.id} uses k8s_provider without defining it"


def test_aks_snippets_put_every_pool_in_the_same_subnet_setting() -> None:
    """AKS takes either every pool of a cluster in a custom subnet or none."""
    for snippet in snippets():
        pools = snippet.code.count("GpuNodePool(") + snippet.code.count("CpuNodePool(")
        if pools > 1:
            subnets = snippet.code.count("subnet_id=")
            assert subnets in (0, pools), f"{snippet.id}: {subnets} of {pools} pools set subnet_id"


# --- links -----------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's heading anchor (Python-Markdown's toc extension gives the same for these headings)."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in without_fences(page.read_text()).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = slug(match.group(1))
            name, n = base, 1
            while name in found:
                name, n = f"{base}-{n}", n + 1
            found.add(name)
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(prose(page.read_text()))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    for target in links(page):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert resolved.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert resolved.suffix == ".md", f"{page.name}: {target} has an anchor into a non-Markdown file"
            assert anchor in anchors(resolved), f"{page.name}: {target}: no heading #{anchor} in {resolved.name}"


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(ROOT / "README.md") if target.startswith("docs/")}
    for page in (ROOT / "docs").glob("*.md"):
        assert page.resolve() in linked, f"README.md does not link docs/{page.name}"


def test_the_link_checker_catches_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Deploy to AWS (`aws-dev`)\n\n[ok](#deploy-to-aws-aws-dev) `[not](a-link.md)` [bad](#deploy)\n")
    assert links(page) == ["#deploy-to-aws-aws-dev", "#deploy"]
    assert anchors(page) == {"title", "deploy-to-aws-aws-dev"}


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move detail into docs/"


# --- versions --------------------------------------------------------------------------------------


def test_install_commands_carry_no_made_up_org() -> None:
    """``github.com/<org>/gpupools`` ran nowhere as written; the repository names no public home, so
    install commands say how to get the URL of the copy a user cloned (or use a local checkout)."""
    for path in [*PAGES, ROOT / "CHANGELOG.md", ROOT / "package" / "PulumiPlugin.yaml"]:
        assert "<org>" not in path.read_text(), f"{path.name}: an install command with <org>"


def test_the_changelog_keeps_unreleased_changes_under_unreleased() -> None:
    """Keep a Changelog 1.1.0: "Keep an Unreleased section at the top"; a version heading carries its
    release date. The version in code is the next release's until it is tagged."""
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "[Unreleased]"
    assert not any("unreleased" in h.lower() for h in headings[1:]), headings


def test_install_instructions_name_the_package_version() -> None:
    for page in PAGES:
        text = page.read_text()
        for version in re.findall(r"gpupools-(\d+\.\d+\.\d+)|gpupools@v(\d+\.\d+\.\d+)|[Vv]ersion:? (\d+\.\d+\.\d+)", text):
            found = next(v for v in version if v)
            assert found == __version__, f"{page.name} names version {found}, the package is {__version__}"

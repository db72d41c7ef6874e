"""No import circle among the modules of ``components/gpupools`` (issue 40).

The graph holds every import a module can run: the statements at module level, including those
under ``if TYPE_CHECKING:`` (a type-only circle is still a circle a reader has to untangle, and the
one in ``capacity.py`` was of that kind), and those inside function bodies (deferred, but a circle
all the same: ``gpupools.synth`` dispatching to ``gpupools.synth.diff``, which imported
``gpupools.synth`` back, was one). A command line that needs a module which depends on its own
package lives in the package's ``__main__.py`` (``gpupools.config``, ``gpupools.synth``), which
nothing imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gpupools.testing import PROJECT_ROOT

COMPONENTS = Path(PROJECT_ROOT) / "components"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(COMPONENTS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of the module, function bodies included (an import there runs when the function does)."""
    return list(ast.walk(tree))


def imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in import_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return {module for module in found if module in modules and module != name}


def graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in COMPONENTS.joinpath("gpupools").rglob("*.py")}
    return {name: imports(path, set(paths)) for name, path in paths.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walk_finds_a_circle_when_there_is_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_type_checking_and_function_level_imports() -> None:
    edges = graph()
    assert "gpupools.capacity" in edges["gpupools.pricing.estimate"]
    assert "gpupools.specs" in edges["gpupools.config"]
    # Imported inside functions only (sim.objects reads the build's module root when asked).
    assert "gpupools.sim.build" in edges["gpupools.sim.objects"]
    assert "gpupools.config_schema" in edges["gpupools.config.__main__"]


def test_components_gpupools_has_no_import_circle() -> None:
    assert cycles(graph()) == []

"""The shape of the code: imports flow one way, facts are read only through the knowledge layer,
and the CLI only parses, calls the API and prints."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "lmi_config"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """Every lmi_config module this file imports, at module level or inside functions (not TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("lmi_config"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if module.startswith("lmi_config"):
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        # "from lmi_config.x import y" names module x (and y, when y is a module)
        graph[name] = {target for target in _imports(path) if target in modules and target != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _without_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    # importing lmi_config.shape.types runs lmi_config/shape/__init__.py first; a package's
    # __init__ re-exporting its own submodules is not a cycle between layers
    return {
        name: {
            target
            for target in targets
            if not (name.startswith(target + ".") or target.startswith(name + "."))
        }
        for name, targets in graph.items()
    }


def test_the_import_graph_of_lmi_config_has_no_cycle() -> None:
    cycle = _cycle(_without_package_inits(_graph()))
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_detector_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_data_files_are_read_only_through_the_knowledge_layer() -> None:
    readers = [
        _module_name(path)
        for path in PACKAGE.rglob("*.py")
        if "load_data" in path.read_text(encoding="utf-8")
        and "knowledge" not in path.relative_to(PACKAGE).parts
    ]
    assert readers == []


def test_the_cli_only_parses_calls_the_api_and_prints() -> None:
    judged = {
        "lmi_config.shape",
        "lmi_config.planner",
        "lmi_config.sizing",
        "lmi_config.render",
        "lmi_config.explain",
        "lmi_config.lint",
    }
    imported = {
        target.rsplit(".", 1)[0] if target.count(".") > 1 else target
        for path in (PACKAGE / "cli").glob("*.py")
        for target in _imports(path)
    }
    assert not imported & judged, imported & judged

"""The package's shape: no import cycles among calib's modules, and imports inside functions only where
they keep start-up light (the CLI's commands, the lazy public API) or load a heavy optional package."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parent.parent / "calib"
# Modules whose functions may import calib modules: the CLI imports a command's library only when
# the command runs, and `calib/__init__.py` resolves its public names on first use.
LAZY_BY_DESIGN = ("cli/",)


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.find_modules_directly_imported_by(module)):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def test_no_import_cycles_among_calib_modules() -> None:
    graph = grimp.build_graph("calib", include_external_packages=False)
    assert len(graph.modules) > 50  # the whole package was read, not an installed stub
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.y", imported="a.z")
    assert _cycles(graph) == [["a.x", "a.y"]]


def _function_imports(path: Path) -> list[str]:
    """`file:line module` of every import of a calib module inside a function of `path`."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("calib"):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{inner.lineno} {inner.module}")
                elif isinstance(inner, ast.Import):
                    found += [
                        f"{path.relative_to(PACKAGE.parent)}:{inner.lineno} {alias.name}"
                        for alias in inner.names
                        if alias.name.startswith("calib")
                    ]
    return found


def test_calib_modules_are_imported_at_module_level() -> None:
    offenders = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE).as_posix().startswith(LAZY_BY_DESIGN)
        for hit in _function_imports(path)
    ]
    assert offenders == []

"""The import graph of a Python package, read with `ast` (nothing is imported), and the layering rules
rootrank holds itself to.

Every import counts, the ones under `if TYPE_CHECKING:` and inside functions included: a circle that
only type-checkers see is still a circle a reader has to untangle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layering:
    """The rules: `adapters` may import the engine, never the reverse; `editor_only` libraries may be
    imported only inside `editor_package`."""

    package: str  # the top-level package name, e.g. "rootrank"
    adapters: frozenset[str]  # modules/packages of front ends, e.g. {"rootrank.cli", "rootrank.lsp"}
    editor_package: str  # e.g. "rootrank.lsp"
    editor_only: frozenset[str]  # e.g. {"pygls", "lsprotocol"}
    user_env_only: frozenset[str] = frozenset()  # e.g. {"torch"}: never imported by the package itself
    user_env_packages: frozenset[str] = frozenset()  # modules that run inside the user's interpreter


def module_name(root: Path, path: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts]) if parts else package


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(source: str, current: str, is_package: bool, known: set[str]) -> set[str]:
    """Every module `current` imports (`from a import b` counts as `a.b` when that is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(current, is_package, node)
            found.add(target)
            for alias in node.names:
                child = f"{target}.{alias.name}"
                if child in known:
                    found.add(child)
    return found


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (parents of a module excluded: importing
    `a.b.c` runs `a/__init__` and `a/b/__init__`, which is not an edge of the code's own making)."""
    files = {module_name(root, p, package): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        raw = imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
        edges[name] = {m for m in raw if m in known and m != name and not name.startswith(m + ".")}
    return edges


def external_imports(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the top-level names of the other distributions it imports."""
    out: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = module_name(root, path, package)
        raw = imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", set())
        out[name] = {m.split(".")[0] for m in raw if m and m.split(".")[0] != package}
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
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

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(found)


def _inside(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def violations(root: Path, rules: Layering) -> list[str]:
    """Every broken rule, one sentence each (empty when the package holds to its layering)."""
    edges = graph(root, rules.package)
    problems = [f"import circle: {' -> '.join(c)}" for c in cycles(edges)]
    for module, targets in sorted(edges.items()):
        if _inside(module, rules.adapters):
            continue
        for target in sorted(targets):
            if _inside(target, rules.adapters):
                problems.append(f"engine module {module} imports the front end {target}")
    for module, names in sorted(external_imports(root, rules.package).items()):
        for name in sorted(names & rules.editor_only):
            if not _inside(module, [rules.editor_package]):
                problems.append(f"{module} imports {name} (only {rules.editor_package} may)")
        for name in sorted(names & rules.user_env_only):
            if not _inside(module, rules.user_env_packages):
                problems.append(f"{module} imports {name}, which lives only in the user's environment")
    return problems

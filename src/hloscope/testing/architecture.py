"""The package's import graph, read from the source: cycles and private names taken across modules.

The layer contract itself is import-linter's (``[tool.importlinter]`` in pyproject.toml); this
module checks what import-linter does not: that no two modules import each other, directly or
round a longer circle, and that no module takes another module's private name (``from m
import _x``, or ``m._x`` on an imported module). Imports under ``if TYPE_CHECKING:`` are
annotations, not imports at run time, and are left out. Imports inside functions count: a
cycle hidden in a function is still a cycle.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ImportGraph", "PrivateUse", "read_import_graph"]


@dataclass(frozen=True, slots=True)
class PrivateUse:
    """``module`` (at ``line``) uses ``name``, private to ``owner``."""

    module: str
    line: int
    owner: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} uses {self.owner}.{self.name}"


@dataclass(slots=True)
class ImportGraph:
    """Modules of one package and the modules each imports (at run time)."""

    modules: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)
    private_uses: list[PrivateUse] = field(default_factory=list)

    def cycles(self) -> list[list[str]]:
        """The strongly connected components of more than one module (Tarjan), each sorted."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        out: list[list[str]] = []
        counter = 0
        for root in sorted(self.modules):
            if root in index:
                continue
            # Iterative Tarjan: (node, iterator over its successors)
            work = [(root, iter(sorted(self.edges.get(root, ()))))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                node, successors = work[-1]
                advanced = False
                for succ in successors:
                    if succ not in self.modules:
                        continue
                    if succ not in index:
                        index[succ] = low[succ] = counter
                        counter += 1
                        stack.append(succ)
                        on_stack.add(succ)
                        work.append((succ, iter(sorted(self.edges.get(succ, ())))))
                        advanced = True
                        break
                    if succ in on_stack:
                        low[node] = min(low[node], index[succ])
                if advanced:
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
                        out.append(sorted(component))
        return out


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                todo.extend(child.orelse)
                continue
            todo.append(child)
    return out


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def read_import_graph(src: Path, package: str = "hloscope") -> ImportGraph:
    """The run-time import graph of ``package`` under ``src`` (the folder that holds it)."""
    root = src
    modules = {_module_name(p, root): p for p in sorted((src / package).rglob("*.py"))}
    graph = ImportGraph(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        edges = graph.edges.setdefault(name, set())
        aliases: dict[str, str] = {}  # local name -> hloscope module it is bound to
        nodes = _runtime_nodes(tree)
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == package:
                        edges.add(a.name)
                        if a.asname:
                            aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != package:
                    continue
                for a in node.names:
                    full = f"{target}.{a.name}"
                    if full in modules:
                        edges.add(full)
                        aliases[a.asname or a.name] = full
                    else:
                        edges.add(target)
                        if _is_private(a.name) and target != name:
                            graph.private_uses.append(PrivateUse(name, node.lineno, target, a.name))
        for node in nodes:
            if (isinstance(node, ast.Attribute) and _is_private(node.attr)
                    and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and aliases[node.value.id] != name):
                graph.private_uses.append(PrivateUse(name, node.lineno, aliases[node.value.id], node.attr))
        edges.discard(name)
    return graph

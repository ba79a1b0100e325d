"""The server's modules import one way: no cycle among them, counting every import (top
level, in functions, and under ``TYPE_CHECKING``) — in particular none between
``protocol.core`` and the method handlers, nor between ``bindings`` and ``rest``."""

from __future__ import annotations

import ast
from pathlib import Path

import a2m_server

ROOT = Path(a2m_server.__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in (ROOT / "a2m_server").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            named = {f"{base}.{alias.name}" for alias in node.names} & modules.keys()
            # "from pkg import submodule" imports the submodule; otherwise the module itself.
            out |= named or ({base} & modules.keys())
    out.discard(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return cycles


def test_no_module_of_the_server_imports_itself_round_a_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "a2m_server.protocol.core" in graph
    assert _cycles(graph) == []

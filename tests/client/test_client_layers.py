"""The client README: ``a2m.transports`` holds the bindings, and only they import httpx.
Every other module of ``a2m`` imports it, if at all, under ``TYPE_CHECKING`` (for
annotations), never when it runs."""

from __future__ import annotations

import ast
from pathlib import Path

import a2m

PACKAGE = Path(a2m.__file__).resolve().parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_httpx_imports(tree: ast.AST) -> list[int]:
    """Lines importing httpx outside ``if TYPE_CHECKING:`` blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                skipped.update(id(n) for n in ast.walk(inner))
    lines = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[0] == "httpx" for name in names):
            lines.append(node.lineno)
    return lines


def test_only_the_transports_import_httpx_at_run_time() -> None:
    offenders = {}
    transport_importers = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        lines = _runtime_httpx_imports(ast.parse(path.read_text(encoding="utf-8")))
        if relative.parts[0] == "transports":
            if lines:
                transport_importers.add(relative.as_posix())
        elif lines:
            offenders[relative.as_posix()] = lines
    assert offenders == {}, "httpx imported outside a2m.transports"
    assert "transports/http.py" in transport_importers  # the check sees real imports


def test_the_check_finds_a_runtime_import_and_spares_type_checking() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import httpx\n"
    assert _runtime_httpx_imports(ast.parse(source)) == []
    assert _runtime_httpx_imports(
        ast.parse(source + "def f():\n    from httpx import Client\n")
    ) == [5]

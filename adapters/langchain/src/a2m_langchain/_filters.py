"""Filters on a document's metadata for :class:`~a2m_langchain.A2MVectorStore`, as
LangChain vector stores take them: a callable on the document, or a mapping of field to
value or to operators (``$eq $ne $gt $gte $lt $lte $in $nin $exists``, ``$and`` / ``$or``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document

DocumentFilter = Callable[[Document], bool] | Mapping[str, Any]
"""What ``filter=`` accepts."""

_MISSING = object()
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"})


def check(filter: DocumentFilter | None) -> None:
    """Refuse a filter that cannot be evaluated, before anything is sent."""
    if filter is None or callable(filter):
        return
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a mapping or a callable, not {type(filter).__name__}")
    for name, expected in filter.items():
        if name in ("$and", "$or"):
            if not isinstance(expected, Sequence) or isinstance(expected, str):
                raise ValueError(f"{name} takes a list of filters")
            for branch in expected:
                check(branch)
        elif name.startswith("$"):
            raise ValueError(f"unknown filter operator {name!r}")
        elif isinstance(expected, Mapping) and any(op.startswith("$") for op in expected):
            unknown = set(expected) - _OPERATORS
            if unknown:
                raise ValueError(f"unknown filter operator(s) {', '.join(sorted(unknown))}")


_PUSHABLE = frozenset({"$eq", "$gt", "$gte", "$lt", "$lte", "$in"})


def _plain(value: Any) -> bool:
    # operands whose every comparison runs alike here and on a server: strings and
    # numbers (a stored boolean meets neither, in either place)
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def as_where(
    filter: DocumentFilter | None, operators: frozenset[str], field: str
) -> dict[str, Any] | None:
    """``filter`` as an A2M ``where`` on ``metadata.{field}.…`` paths, when the server
    declares every operator it needs and it means the same there; ``None`` otherwise (the
    filter is then applied here)."""
    if filter is None or callable(filter) or not operators:
        return None
    where: dict[str, Any] = {}
    for name, expected in filter.items():
        if name.startswith("$") or "." in name:
            return None
        path = f"metadata.{field}.{name}"
        if _plain(expected):
            if "$eq" not in operators:
                return None
            where[path] = {"$eq": expected}
            continue
        if not isinstance(expected, Mapping) or not expected:
            return None
        for op, operand in expected.items():
            if op not in _PUSHABLE or op not in operators:
                return None
            if op == "$in":
                if not isinstance(operand, (list, tuple)) or not operand:
                    return None
                if not all(map(_plain, operand)):
                    return None
            elif not _plain(operand):
                return None
        where[path] = {op: list(v) if op == "$in" else v for op, v in expected.items()}
    return where


def matches(filter: DocumentFilter | None, document: Document) -> bool:
    """Whether ``document`` passes ``filter`` (``None`` passes everything)."""
    if filter is None:
        return True
    if callable(filter):
        return bool(filter(document))
    return _matches(filter, document.metadata)


def _matches(filter: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    for name, expected in filter.items():
        if name == "$and":
            if not all(_matches(branch, metadata) for branch in expected):
                return False
        elif name == "$or":
            if not any(_matches(branch, metadata) for branch in expected):
                return False
        elif not _field(_lookup(metadata, name), expected):
            return False
    return True


def _lookup(metadata: Mapping[str, Any], path: str) -> Any:
    if path in metadata:
        return metadata[path]
    current: Any = metadata
    for part in path.split("."):  # a nested path, "author.name"
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING
        current = current[part]
    return current


def _field(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping) and expected and all(op in _OPERATORS for op in expected):
        return all(_operator(op, actual, operand) for op, operand in expected.items())
    return actual is not _MISSING and _equal(actual, expected)


def _equal(actual: Any, expected: Any) -> bool:
    """Equality as the server's ``where`` has it (docs/adapters.md), so that a filter
    means the same wherever it runs: a boolean equals only a boolean (``True`` is not
    ``1``), inside lists and objects too."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return actual.keys() == expected.keys() and all(
            _equal(actual[key], expected[key]) for key in actual
        )
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(map(_equal, actual, expected))
    return bool(actual == expected)


def _operator(op: str, actual: Any, operand: Any) -> bool:
    if op == "$exists":
        return (actual is not _MISSING) == bool(operand)
    if op == "$ne":
        return actual is _MISSING or not _equal(actual, operand)
    if op == "$nin":
        return actual is _MISSING or not any(_equal(actual, item) for item in operand)
    if actual is _MISSING:
        return False
    if op == "$eq":
        return _equal(actual, operand)
    if op == "$in":
        return any(_equal(actual, item) for item in operand)
    if isinstance(actual, bool) or isinstance(operand, bool):
        return False  # booleans are equal or not, never ordered (as on the server)
    try:
        if op == "$gt":
            return bool(actual > operand)
        if op == "$gte":
            return bool(actual >= operand)
        if op == "$lt":
            return bool(actual < operand)
        return bool(actual <= operand)
    except TypeError:  # incomparable types never match, as in a database
        return False

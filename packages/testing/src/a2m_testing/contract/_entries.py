"""What the contract suite accepts as an entry and how it checks one against the REST
draft's shape (§6.1): every field present, ``meta`` with server-set timestamps.

An adapter may return entries as plain dicts (the draft's ``-> dict``) or as pydantic
models such as ``a2m_types.Entry``; both are read as the same JSON-shaped dict."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = [
    "ENTRY_FIELDS",
    "META_FIELDS",
    "as_entry",
    "as_hits",
    "check_entry",
    "instant",
    "same_json",
    "same_vector",
]

ENTRY_FIELDS = ("id", "key", "namespace", "type", "value", "embedding", "meta")
"""The draft says every one is present in a read response (null when unset)."""

META_FIELDS = (
    "source_agent",
    "source_framework",
    "created_at",
    "updated_at",
    "ttl_s",
    "tags",
    "confidence",
)


def as_entry(entry: Any) -> dict[str, Any]:
    """``entry`` as a dict: a mapping as it is, a pydantic model by ``model_dump``."""
    dump = getattr(entry, "model_dump", None)
    if callable(dump):
        entry = dump(mode="json")
    if not isinstance(entry, Mapping):
        raise AssertionError(
            f"an entry is a mapping (or pydantic model) in the draft's shape, got {entry!r}"
        )
    result = dict(entry)
    if isinstance(result.get("meta"), Mapping):
        result["meta"] = dict(result["meta"])
    return result


def as_hits(results: Any) -> list[tuple[dict[str, Any], float]]:
    """A query's ``[{"entry", "score"}]`` as ``(entry, score)`` pairs, in the order given."""
    assert isinstance(results, Sequence), f"query returns a list of {{entry, score}}: {results!r}"
    assert not isinstance(results, (str, bytes)), f"query returns a list, not {results!r}"
    hits = []
    for result in results:
        dump = getattr(result, "model_dump", None)
        item = dump(mode="json") if callable(dump) else result
        assert isinstance(item, Mapping), f"each query result is {{entry, score}}: {result!r}"
        assert {"entry", "score"} <= set(item), f"each query result is {{entry, score}}: {item!r}"
        score = item["score"]
        assert isinstance(score, (int, float)), f"a score is a number, got {score!r}"
        assert not isinstance(score, bool), f"a score is a number, got {score!r}"
        assert math.isfinite(score), f"a score is finite, got {score!r}"
        hits.append((as_entry(item["entry"]), float(score)))
    return hits


def instant(value: Any) -> datetime:
    """An ISO 8601 timestamp (string or aware datetime) as an aware datetime."""
    if isinstance(value, str):
        # fromisoformat accepts a trailing Z only from Python 3.11.
        text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise AssertionError(f"not an ISO 8601 timestamp: {value!r}") from None
    assert isinstance(value, datetime), f"a timestamp is an ISO 8601 string, got {value!r}"
    assert value.tzinfo is not None, f"a timestamp carries its UTC offset, got {value!r}"
    return value


def same_json(actual: Any, expected: Any) -> bool:
    """JSON equality: numbers by value (``1 == 1.0``), but ``true`` is not ``1``, and
    objects and arrays compared member by member."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return actual == expected
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and set(actual) == set(expected)
            and all(same_json(actual[name], expected[name]) for name in expected)
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(same_json(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return type(actual) is type(expected) and bool(actual == expected)


def same_vector(actual: Any, expected: Sequence[float] | None) -> bool:
    """Equal vectors, to float32 precision (the draft's embeddings are float32)."""
    if expected is None:
        return actual is None
    return (
        isinstance(actual, (list, tuple))
        and len(actual) == len(expected)
        and all(
            math.isclose(a, e, rel_tol=1e-6, abs_tol=1e-7)
            for a, e in zip(actual, expected, strict=True)
        )
    )


def check_entry(
    entry: Any,
    *,
    key: str,
    namespace: str,
    type: str,
    value: Any,
    embedding: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Assert that ``entry`` is in the draft's shape and is the one described; returns it
    as a dict."""
    found = as_entry(entry)
    missing = [name for name in ENTRY_FIELDS if name not in found]
    assert not missing, f"the entry lacks {missing} (every field is present): {found!r}"
    assert isinstance(found["id"], str), f"id is a string: {found!r}"
    assert found["id"], f"id is not empty: {found!r}"
    assert found["key"] == key, f"key {found['key']!r}, expected {key!r}"
    assert found["namespace"] == namespace, (
        f"namespace {found['namespace']!r}, expected the adapter's {namespace!r}"
    )
    assert found["type"] == type, f"type {found['type']!r}, expected {type!r}"
    assert same_json(found["value"], value), f"value {found['value']!r}, expected {value!r}"
    assert same_vector(found["embedding"], embedding), (
        f"embedding {found['embedding']!r}, expected {embedding!r}"
    )
    meta = found["meta"]
    assert isinstance(meta, Mapping), f"meta is an object: {found!r}"
    missing = [name for name in META_FIELDS if name not in meta]
    assert not missing, f"meta lacks {missing} (every field is present): {meta!r}"
    created, updated = instant(meta["created_at"]), instant(meta["updated_at"])
    assert updated >= created, f"updated_at {updated} is before created_at {created}"
    tags = meta["tags"]
    assert isinstance(tags, list), f"meta.tags is a list (default []), got {tags!r}"
    assert all(isinstance(tag, str) for tag in tags), f"meta.tags holds strings: {tags!r}"
    return found

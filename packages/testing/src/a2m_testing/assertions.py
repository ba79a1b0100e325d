"""Assertions about what a store holds, for tests of agents that write memory: "the agent
remembered the user's city under ``user/city``" in one line, with a failure message that
lists what the store does hold.

They read the whole store with ``memory/timeline``, so they are meant for the small stores
of tests, through an in-process server or any client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from a2m import A2MClient, AsyncA2MClient, Record

if TYPE_CHECKING:
    from a2m_server.server import A2MServer

__all__ = [
    "assert_not_remembered",
    "assert_not_remembered_async",
    "assert_remembered",
    "assert_remembered_async",
    "matching_records",
]

_LISTED = 20


def matching_records(
    records: Sequence[Record],
    *,
    content: str | None = None,
    contains: str | None = None,
    key: str | None = None,
    tier: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[Record]:
    """The records meeting every criterion given: ``content`` exactly, ``contains`` as a
    case-insensitive substring of the content, ``key`` and ``tier`` exactly, and each
    ``metadata`` item equal to the record's."""
    wanted = contains.casefold() if contains is not None else None
    found = []
    for record in records:
        if content is not None and record.content != content:
            continue
        if wanted is not None and wanted not in record.content.casefold():
            continue
        if key is not None and record.key != key:
            continue
        if tier is not None and record.tier != tier:
            continue
        if metadata and any(
            name not in (record.metadata or {}) or (record.metadata or {})[name] != value
            for name, value in metadata.items()
        ):
            continue
        found.append(record)
    return found


def assert_remembered(
    source: A2MServer | A2MClient,
    *,
    content: str | None = None,
    contains: str | None = None,
    key: str | None = None,
    tier: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Record:
    """Assert that the store behind ``source`` (a server object or a client) holds a record
    meeting the criteria (see :func:`matching_records`) and return the newest such record.

    ```python
    record = assert_remembered(a2m_server, key="user/city", contains="Lisbon")
    ```
    """
    criteria = _criteria(content, contains, key, tier, metadata)
    return _one(_timeline(source), criteria)


def assert_not_remembered(
    source: A2MServer | A2MClient,
    *,
    content: str | None = None,
    contains: str | None = None,
    key: str | None = None,
    tier: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Assert that no record in the store behind ``source`` meets the criteria."""
    criteria = _criteria(content, contains, key, tier, metadata)
    _none(_timeline(source), criteria)


async def assert_remembered_async(
    client: AsyncA2MClient,
    *,
    content: str | None = None,
    contains: str | None = None,
    key: str | None = None,
    tier: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Record:
    """:func:`assert_remembered` through an :class:`~a2m.AsyncA2MClient`."""
    criteria = _criteria(content, contains, key, tier, metadata)
    return _one((await client.timeline()).records, criteria)


async def assert_not_remembered_async(
    client: AsyncA2MClient,
    *,
    content: str | None = None,
    contains: str | None = None,
    key: str | None = None,
    tier: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """:func:`assert_not_remembered` through an :class:`~a2m.AsyncA2MClient`."""
    criteria = _criteria(content, contains, key, tier, metadata)
    _none((await client.timeline()).records, criteria)


def _criteria(
    content: str | None,
    contains: str | None,
    key: str | None,
    tier: str | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    given = {"content": content, "contains": contains, "key": key, "tier": tier}
    criteria: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if metadata:
        criteria["metadata"] = dict(metadata)
    if not criteria:
        raise TypeError("name at least one criterion: content, contains, key, tier or metadata")
    return criteria


def _timeline(source: A2MServer | A2MClient) -> list[Record]:
    if isinstance(source, A2MClient):
        return list(source.timeline().records)
    with source.connect() as connection:
        result = connection.call("memory/timeline")
    return [Record.model_validate(record) for record in result["records"]]


def _one(records: list[Record], criteria: dict[str, Any]) -> Record:
    found = matching_records(records, **criteria)
    if not found:
        raise AssertionError(
            f"no record matches {_describe(criteria)}; the store holds {_listing(records)}"
        )
    return found[-1]  # the timeline is oldest first


def _none(records: list[Record], criteria: dict[str, Any]) -> None:
    found = matching_records(records, **criteria)
    if found:
        raise AssertionError(
            f"expected no record matching {_describe(criteria)}, found {_listing(found)}"
        )


def _describe(criteria: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in criteria.items())


def _listing(records: Sequence[Record]) -> str:
    if not records:
        return "no records"
    lines = [
        f"  key={record.key!r} tier={record.tier!r} content={record.content[:80]!r}"
        for record in records[-_LISTED:]
    ]
    more = f" (the newest {_LISTED} shown)" if len(records) > _LISTED else ""
    return f"{len(records)} record(s){more}:\n" + "\n".join(lines)

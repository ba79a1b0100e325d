"""Records per (owner, agent, framework, tier), kept by both stores in the writing
transaction (schema v5), so the memory page's agents index counts exactly, in time
independent of the store's size.

A record's agent is its metadata's ``source_agent`` (as every adapter stamps it), else
its ``observation_agent`` (an observation's tenant), else its owner, else ``""``; its
framework is ``source_framework``, else ``""``. Only non-empty strings count, and none
holding a NUL or the text ``\\u0000`` (SQLite's JSON functions cut a string at its NUL,
differently by version; what is left out is what its JSON text shows as ``\\u0000``).

The Python functions here and the SQL expressions of each store say the same thing: the
SQLite store adds inserted records from Python (one upsert per group, not one per
record), PostgreSQL by a statement trigger; triggers take deletes and changes of tier,
owner or metadata."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .base import AgentCount, NewRecord, StoredRecord

__all__ = [
    "AGENT_KEYS",
    "FRAMEWORK_KEY",
    "AgentCount",
    "agent_of",
    "framework_of",
    "pg_agent",
    "pg_framework",
    "sqlite_agent",
    "sqlite_framework",
    "tally",
]

AGENT_KEYS = ("source_agent", "observation_agent")
"""The metadata keys naming a record's agent, the first non-empty string winning."""
FRAMEWORK_KEY = "source_framework"
"""The metadata key naming the framework that wrote a record."""


def _text(metadata: Mapping[str, Any] | None, key: str) -> str:
    value = metadata.get(key) if isinstance(metadata, Mapping) else None
    if not isinstance(value, str) or "\x00" in value or "\\u0000" in value:
        return ""
    return value


def agent_of(metadata: Mapping[str, Any] | None, owner: str | None) -> str:
    """The agent a record with ``metadata`` and ``owner`` belongs to (``""`` for none)."""
    for key in AGENT_KEYS:
        agent = _text(metadata, key)
        if agent:
            return agent
    return owner or ""


def framework_of(metadata: Mapping[str, Any] | None) -> str:
    """The framework that wrote a record with ``metadata`` (``""`` when unnamed)."""
    return _text(metadata, FRAMEWORK_KEY)


def tally(
    records: Iterable[NewRecord | StoredRecord],
) -> dict[tuple[str | None, str, str, str | None], int]:
    """Inserted records per ``(owner, agent, framework, tier)``."""
    counts: dict[tuple[str | None, str, str, str | None], int] = {}
    for rec in records:
        place = (rec.owner, agent_of(rec.metadata, rec.owner), framework_of(rec.metadata), rec.tier)
        counts[place] = counts.get(place, 0) + 1
    return counts


def _sqlite_text(row: str, key: str) -> str:
    # The JSON text holds a NUL as \u0000, and a backslash before "u0000" as \\u0000.
    return (
        f"CASE WHEN json_type({row}.metadata, '$.{key}') = 'text' "
        f"AND instr({row}.metadata -> '$.{key}', '\\u0000') = 0 "
        f"THEN nullif(json_extract({row}.metadata, '$.{key}'), '') END"
    )


def sqlite_agent(row: str) -> str:
    """:func:`agent_of` of the SQLite row ``row`` (metadata kept as JSON text)."""
    return f"coalesce({', '.join(_sqlite_text(row, key) for key in AGENT_KEYS)}, {row}.owner, '')"


def sqlite_framework(row: str) -> str:
    """:func:`framework_of` of the SQLite row ``row``."""
    return f"coalesce({_sqlite_text(row, FRAMEWORK_KEY)}, '')"


def _pg_text(row: str, key: str) -> str:
    # meta holds a NUL as U+E000 U+E002 (and U+E000 itself as U+E000 U+E001).
    return (
        f"CASE WHEN jsonb_typeof({row}.meta -> '{key}') = 'string' "
        f"AND strpos({row}.meta ->> '{key}', chr(57344) || chr(57346)) = 0 "
        f"AND strpos({row}.meta ->> '{key}', '\\u0000') = 0 "
        f"THEN nullif({row}.meta ->> '{key}', '') END"
    )


def pg_agent(row: str) -> str:
    """:func:`agent_of` of the PostgreSQL row ``row`` (from its ``meta`` jsonb copy)."""
    return f"coalesce({', '.join(_pg_text(row, key) for key in AGENT_KEYS)}, {row}.owner, '')"


def pg_framework(row: str) -> str:
    """:func:`framework_of` of the PostgreSQL row ``row``."""
    return f"coalesce({_pg_text(row, FRAMEWORK_KEY)}, '')"

"""How a stored record reads as a row of the memory page: the seed's columns (content, type,
importance weight, tags, classification, created, source, framework) taken from the A2M
fields and the metadata keys the observation mapping (``docs/observations.md``) names.

An ordinary record fills what it has (content, created, tags, framework) and leaves the
observation columns empty; nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2m_server.protocol.wire import timestamp
from a2m_server.store import StoredRecord
from a2m_server.store._agents import agent_of as agent_of_metadata

__all__ = [
    "AGENT_KEY",
    "CLASSIFICATION_KEY",
    "FRAMEWORK_KEY",
    "NOTE",
    "OBSERVATION_AGENT_KEY",
    "OBSERVATION_KEY",
    "SOURCE_KEYS",
    "TAGS_KEY",
    "TRANSFERRED_KEY",
    "TYPE_KEY",
    "Row",
    "agent_of",
    "row_of",
    "row_of_observation",
]

AGENT_KEY = "source_agent"
"""The writing agent, as every adapter stamps it (falling back to the record's owner)."""
FRAMEWORK_KEY = "source_framework"
"""The writing framework, as every adapter stamps it."""
TAGS_KEY = "tags"
TYPE_KEY = "observation_type"
"""The observation's category (``code_pattern``, ``architectural_decision``, ...)."""
CLASSIFICATION_KEY = "observation_classification"
"""The derived classification (``pattern``, ``decision``, ``error``, ``tool-use``,
``convention``, or ``note``)."""
OBSERVATION_AGENT_KEY = "observation_agent"
"""The agent of an observation's tenant, written by the server."""
OBSERVATION_KEY = "observation"
"""Present (true) on a record written as an observation."""
TRANSFERRED_KEY = "source_project"
"""The source project of an observation read through a transfer grant (read-only); the
observations extension's ``list`` and ``recall`` set it on what they return."""
SOURCE_KEYS = (
    ("source", "observation_source"),
    ("origin", "observation_origin"),
    ("file", "observation_file_path"),
)
"""(label, metadata key): what wrote an observation (``explicit``/``auto``), the session
id, PR URL or job it came from, and the file it concerns, shown beside the session id."""
NOTE = "note"
"""The fixed badge of an observation without a classification."""


@dataclass(frozen=True)
class Row:
    """One record as the page shows it; every string still unescaped."""

    id: str
    content: str
    type: str
    weight: float | None
    tags: tuple[str, ...]
    classification: str
    created: str
    source: tuple[tuple[str, str], ...]
    """(label, value) pairs: session id, ingest source, PR URL, job."""
    framework: str
    agent: str
    tier: str
    owner: str | None
    key: str | None
    revision: int
    transferred_from: str | None
    observation: bool


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return str(value)


def agent_of(record: StoredRecord) -> str:
    """The agent a record belongs to on the page: its ``source_agent``, else its owner,
    else ``""`` (records nobody claims)."""
    return agent_of_metadata(record.metadata, record.owner)


def _tags(metadata: dict[str, Any]) -> tuple[str, ...]:
    tags = metadata.get(TAGS_KEY)
    if isinstance(tags, str):
        return (tags,)
    if isinstance(tags, list):
        return tuple(_text(tag) for tag in tags if tag is not None)
    return ()


def row_of(record: StoredRecord, *, salience: bool) -> Row:
    """The row ``record`` shows as; ``salience`` says whether the server declares weights."""
    metadata = record.metadata if isinstance(record.metadata, dict) else {}
    observation = bool(metadata.get(OBSERVATION_KEY)) or CLASSIFICATION_KEY in metadata
    classification = _text(metadata.get(CLASSIFICATION_KEY))
    if observation and not classification:
        classification = NOTE
    source: list[tuple[str, str]] = []
    if record.session:
        source.append(("session", record.session))
    for label, name in SOURCE_KEYS:
        value = metadata.get(name)
        if value is not None and value != "":
            source.append((label, _text(value)))
    transferred = metadata.get(TRANSFERRED_KEY)
    return Row(
        id=record.id,
        content=record.content,
        type=_text(metadata.get(TYPE_KEY)),
        weight=record.salience if salience else None,
        tags=_tags(metadata),
        classification=classification,
        created=timestamp(record.created_at),
        source=tuple(source),
        framework=_text(metadata.get(FRAMEWORK_KEY)),
        agent=agent_of(record),
        tier=record.tier or "",
        owner=record.owner,
        key=record.key,
        revision=record.revision,
        transferred_from=_text(transferred) or None if transferred is not None else None,
        observation=observation,
    )


def row_of_observation(observation: dict[str, Any]) -> Row:
    """The row of an observation as the observations extension's ``list`` returns it
    (``docs/observations.md`` §7): how a transferred one, which is not in this project's
    store, is shown."""
    tags = observation.get("tags")
    weight = observation.get("effective_weight", observation.get("weight"))
    source: list[tuple[str, str]] = []
    for label, name in (("source", "source"), ("origin", "origin"), ("file", "file_path")):
        value = observation.get(name)
        if value is not None and value != "":
            source.append((label, _text(value)))
    project = observation.get("source_project")
    return Row(
        id=_text(observation.get("id")),
        content=_text(observation.get("content")),
        type=_text(observation.get("type")),
        weight=float(weight) if isinstance(weight, (int, float)) else None,
        tags=tuple(_text(t) for t in tags) if isinstance(tags, list) else (),
        classification=_text(observation.get("classification")) or NOTE,
        created=_text(observation.get("created_at")),
        source=tuple(source),
        framework="",
        agent=_text(observation.get("agent")),
        tier="",
        owner=None,
        key=None,
        revision=0,
        transferred_from=_text(project) if observation.get("transferred") else None,
        observation=True,
    )

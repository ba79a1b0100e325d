"""The mapping between AutoGen's ``MemoryContent`` and A2M records, both ways, following
the record conventions every adapter shares: readable ``content``, a structured value in
``metadata.value``, provenance in ``metadata``, an external referent as ``uri``."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from autogen_core import Image
from autogen_core.memory import MemoryContent, MemoryMimeType
from pydantic import ValidationError

from a2m import Record, RecordInput
from a2m.adapter import check_storable
from a2m_types.observations import Observation
from a2m_types.rest import EntryMetaWrite, EntryWrite, entry_to_record_input, record_key

from ._connection import StoreLayout

__all__ = [
    "OWNED_KEYS",
    "PROVENANCE_KEY",
    "SOURCE_FRAMEWORK",
    "TEXT_MIME",
    "ContentNotStorable",
    "Provenance",
    "content_record",
    "mime_of",
    "observation_content",
    "query_text",
    "record_content",
    "transcript_key",
]

SOURCE_FRAMEWORK = "autogen"
TEXT_MIME = MemoryMimeType.TEXT.value
"""What transcripts say their records are: the text is the content, the message the value."""

SCORE_KEY = "score"
"""The metadata key a query result carries its score under, as AutoGen's memories do."""
PROVENANCE_KEY = "a2m"
"""The metadata key under which a query result carries the record's id, score and
provenance. It is never stored: adding a result back writes a new record."""

JSON_TEXT_KEY = "json_text"
"""Set (``true``) on a record whose JSON content was given as a string: the record's content
is that string exactly, and it reads back as the string, not the structure it holds."""

OWNED_KEYS = ("namespace", "type", "value", "mime_type", JSON_TEXT_KEY)
"""Metadata keys the mapping writes itself; a content's own metadata cannot use them."""

_TEXT_TYPES = (MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value)
_URI_SCHEMES = ("http://", "https://", "s3://", "gs://", "file://", "data:")


class ContentNotStorable(ValueError):
    """A ``MemoryContent`` that cannot become an A2M record as it is (nothing is sent)."""


@dataclass(frozen=True)
class Provenance:
    """Who writes a component's records: it becomes each record's metadata and fields."""

    namespace: str
    source_agent: str | None
    session: str | None
    role: str | None


def mime_of(content: MemoryContent) -> str:
    """The content's mime type as a string."""
    mime = content.mime_type
    return mime.value if isinstance(mime, MemoryMimeType) else str(mime)


def _is_json(mime: str) -> bool:
    return mime == MemoryMimeType.JSON.value or mime.endswith("+json")


def _is_opaque(mime: str) -> bool:
    return mime.startswith("image/") or mime == MemoryMimeType.BINARY.value


def _uri(content: MemoryContent) -> str | None:
    stated = (content.metadata or {}).get("uri")
    if isinstance(stated, str) and stated:
        return stated
    if isinstance(content.content, str) and content.content.startswith(_URI_SCHEMES):
        return content.content
    return None


def _value(content: MemoryContent, mime: str) -> Any:
    """What the entry's value is: text as it is, JSON as its structure."""
    body = content.content
    if isinstance(body, dict):
        return body
    if isinstance(body, str) and _is_json(mime):
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ContentNotStorable(
                f"content says it is {mime} but is not valid JSON ({exc}); nothing was sent"
            ) from None
    if isinstance(body, str):
        return body
    raise ContentNotStorable(f"cannot store {type(body).__name__} content as {mime}")


def _own_metadata(content: MemoryContent, mime: str) -> dict[str, Any]:
    metadata = {k: v for k, v in (content.metadata or {}).items() if k != PROVENANCE_KEY}
    if _mime_string(metadata.get("mime_type", mime)) == mime:
        metadata.pop("mime_type", None)  # a result added back states its own mime type
    clashing = [k for k in OWNED_KEYS if k in metadata]
    if clashing:
        raise ContentNotStorable(
            f"metadata key(s) {', '.join(map(repr, clashing))} are written by the A2M mapping "
            f"itself ({', '.join(OWNED_KEYS)}); rename them. Nothing was sent"
        )
    return metadata


def _mime_string(value: Any) -> Any:
    return value.value if isinstance(value, MemoryMimeType) else value


def content_record(
    content: MemoryContent, provenance: Provenance, layout: StoreLayout, memory_type: str
) -> RecordInput:
    """The A2M record a ``MemoryContent`` becomes, under a fresh key in the namespace.

    Text and markdown are the record's content; JSON is kept as structure in
    ``metadata.value``, with the string given as content (flagged ``json_text``) or, for a
    dict, its compact text; an image or binary
    content becomes an external record pointing at its URI (``metadata["uri"]``, or a
    string content that is one). Raises :class:`ContentNotStorable`, or
    :class:`~a2m.adapter.UnstorableValue` for a value JSON cannot carry exactly (NaN, a
    set, bytes, a tuple, a lone surrogate, nesting past 64 levels), before any I/O."""
    mime = mime_of(content)
    metadata = _own_metadata(content, mime)
    check_storable(metadata, "metadata")
    if isinstance(content.content, (str, dict)):
        check_storable(content.content, "content")
    opaque = isinstance(content.content, (bytes, Image)) or _is_opaque(mime)
    uri = _uri(content) if opaque else None
    if opaque and uri is None:
        raise ContentNotStorable(
            f"{mime} content is stored as a reference, and this one has no URI: put where it "
            "lives in metadata['uri'] (the store never holds the bytes). Nothing was sent"
        )
    if opaque and "external" not in layout.capabilities:
        raise ContentNotStorable(
            f"{mime} content is stored as an external record, and this server does not "
            "declare the 'external' capability. Nothing was sent"
        )
    stated: dict[str, Any] = {"source_framework": SOURCE_FRAMEWORK}
    if provenance.source_agent is not None:
        stated["source_agent"] = provenance.source_agent
    stated.update(metadata)
    try:
        write = EntryWrite(
            key=uuid.uuid4().hex,
            type="external" if opaque else memory_type,  # type: ignore[arg-type]
            value=uri if opaque else _value(content, mime),
            meta=EntryMetaWrite.model_validate(stated),
        )
    except ValidationError as exc:
        raise ContentNotStorable(f"metadata cannot be stored: {exc}") from None
    tiers = layout.tier_for_kind if "tiers" in layout.capabilities else None
    record = entry_to_record_input(write, provenance.namespace, tier_for_kind=tiers)
    extra: dict[str, Any] = {"metadata": {**(record.metadata or {}), "mime_type": mime}}
    if opaque:
        extra["media_type"] = mime
    if provenance.role is not None:
        extra["role"] = provenance.role
    if provenance.session is not None and "sessions" in layout.capabilities:
        extra["session"] = provenance.session
    if isinstance(content.content, str) and not opaque and _is_json(mime):
        # The text as given, not its compact form, so that it reads back the same string.
        extra["content"] = content.content
        extra["metadata"][JSON_TEXT_KEY] = True
    wire = {**record.to_wire(), **extra}
    if not layout.keys:  # the namespace still travels in metadata
        wire.pop("key", None)
    return RecordInput.model_validate(wire)


def query_text(query: str | MemoryContent) -> str:
    """The text to recall with: a string, or a text or JSON content's text."""
    if isinstance(query, str):
        return query
    body = query.content
    if isinstance(body, str):
        return body
    if isinstance(body, dict):
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    raise ContentNotStorable(
        f"cannot recall by {type(body).__name__} content: A2M recalls by text; query with "
        "a string or a text/JSON MemoryContent"
    )


def _structured(mime: Any) -> bool:
    """Whether a stored value is the content itself: JSON, or unsaid (another framework's
    structured entry). A text mime type says the value only describes the text."""
    return mime is None or (isinstance(mime, str) and _is_json(mime))


def _mime_type(value: str) -> MemoryMimeType | str:
    try:
        return MemoryMimeType(value)
    except ValueError:
        return value


def record_content(record: Record) -> MemoryContent:
    """A recalled record as a ``MemoryContent``: its own metadata as it was stored, its
    score at ``metadata["score"]`` (as AutoGen's ChromaDB and Redis memories give it; a
    stored metadata key of that name is replaced), and under ``metadata["a2m"]`` its id,
    score, key, namespace and provenance. Records written by any framework or client
    read this way."""
    metadata = dict(record.metadata or {})
    stored_mime = metadata.pop("mime_type", None)
    given_as_text = metadata.pop(JSON_TEXT_KEY, None) is True
    has_value = "value" in metadata
    value = metadata.pop("value", None)
    namespace = metadata.pop("namespace", None)
    kind = metadata.pop("type", None)
    body: str | dict[str, Any]
    if record.uri is not None:
        body = record.uri
        mime = stored_mime or record.media_type or MemoryMimeType.BINARY.value
    elif has_value and isinstance(value, dict) and _structured(stored_mime) and not given_as_text:
        body = value
        mime = stored_mime or MemoryMimeType.JSON.value
    else:
        body = record.content
        mime = stored_mime or MemoryMimeType.TEXT.value
    provenance = {
        "id": record.id,
        "score": record.score,
        "key": record.key,
        "namespace": namespace,
        "type": kind,
        "role": record.role,
        "session": record.session,
        "owner": record.owner,
        "tier": record.tier,
        "uri": record.uri,
        "created_at": record.created_at.isoformat(),
        "source_framework": metadata.get("source_framework"),
        "source_agent": metadata.get("source_agent"),
    }
    metadata[PROVENANCE_KEY] = {k: v for k, v in provenance.items() if v is not None}
    if record.score is not None:
        # Where AutoGen's own vector memories (ChromaDB, Redis) put a result's score.
        metadata[SCORE_KEY] = record.score
    return MemoryContent(content=body, mime_type=_mime_type(str(mime)), metadata=metadata)


def transcript_key(namespace: str, session: str) -> str:
    """A fresh A2M key for one message of ``session`` in ``namespace``."""
    return record_key(namespace, f"{session}/{uuid.uuid4().hex}")


def observation_content(observation: Observation) -> MemoryContent:
    """An observation another project granted, as a ``MemoryContent``: its score at
    ``metadata["score"]``, and under ``metadata["a2m"]`` its id, score, the project it was
    transferred from and the agent that wrote it (``transferred`` is always true)."""
    provenance = {
        "id": observation.id,
        "score": observation.score,
        "transferred": True,
        "source_project": observation.source_project,
        "source_agent": observation.agent,
        "created_at": observation.created_at.isoformat(),
    }
    metadata: dict[str, Any] = {
        PROVENANCE_KEY: {k: v for k, v in provenance.items() if v is not None}
    }
    if observation.score is not None:
        metadata[SCORE_KEY] = observation.score
    return MemoryContent(
        content=observation.content, mime_type=MemoryMimeType.TEXT, metadata=metadata
    )

"""The REST binding's constants, error table, namespace and key rules, and the draft's
entry models (§6.1). The mapping onto A2M records is in :mod:`a2m_types.rest`, which
re-exports everything here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from ._base import Params, WireModel
from ._time import Timestamp
from .errors import ErrorCode

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "DEFAULT_TOP_K",
    "DELETED_COUNT_HEADER",
    "FLOAT32_MAX",
    "KEY_PATTERN",
    "MAX_KEY_LENGTH",
    "MAX_LIST_LIMIT",
    "MAX_NAMESPACE_LENGTH",
    "MAX_TOP_K",
    "MAX_TTL_SECONDS",
    "MEMORY_TYPES",
    "NAMESPACE_PATTERN",
    "RESERVED_METADATA_KEYS",
    "REST_BASE_PATH",
    "REST_ERROR_STATUS",
    "ROUTE_WORDS",
    "Entry",
    "EntryList",
    "EntryMeta",
    "EntryMetaWrite",
    "EntryWrite",
    "InvalidKey",
    "InvalidNamespace",
    "MemoryType",
    "QueryRequest",
    "RestErrorBody",
    "ScoredEntry",
    "a2m_code_for",
    "external_reference",
    "rest_error_for",
    "validate_key",
    "validate_namespace",
]

REST_BASE_PATH = "/a2m/v1"
"""Where every REST route lives; the major version is part of the path."""

MEMORY_TYPES: tuple[str, ...] = ("working", "episodic", "semantic", "procedural", "external")
"""The draft's five memory types (§6.2); the first four are A2M tier kinds."""

ROUTE_WORDS = frozenset({"entries", "query", "subscribe"})
"""Path segments that name a route, so they cannot be namespace segments."""

MAX_NAMESPACE_LENGTH = 256
MAX_KEY_LENGTH = 512
DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 500
DEFAULT_TOP_K = 5
MAX_TOP_K = 100
MAX_TTL_SECONDS = 2**31 - 1
"""The longest ``ttl_s`` accepted (about 68 years); longer is permanent in all but name."""

FLOAT32_MAX = 3.4028234663852886e38
"""Embeddings are float32 vectors (draft §4): a component beyond this cannot be one."""

DELETED_COUNT_HEADER = "X-Deleted-Count"
"""The response header of a bulk delete that says how many entries went."""

RESERVED_METADATA_KEYS = ("namespace", "value", "type")
"""``metadata`` keys the mapping writes itself; they never appear in an entry's ``meta``."""

NAMESPACE_PATTERN = (
    r"^(?!(?:[^/]*/)*(?:entries|query|subscribe)(?:/|$))[a-z0-9_-]+(?:/[a-z0-9_-]+)*$"
)
"""A valid namespace as a regular expression (the length limit aside)."""

KEY_PATTERN = r"^(?!(?:[^/]*/)*\.{1,2}(?:/|$))[^\x00-\x1f\x7f/]+(?:/[^\x00-\x1f\x7f/]+)*$"
"""A valid key as a regular expression (the length limit aside)."""

REST_ERROR_STATUS: Mapping[str, int] = {
    "INVALID_BODY": 400,
    "PROTOCOL_NOT_SUPPORTED": 400,
    "UNAUTHORIZED": 401,
    "ORIGIN_NOT_ALLOWED": 403,
    "READ_ONLY": 403,
    "SCOPE_DENIED": 403,
    "ENTRY_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "UNKNOWN_METHOD": 404,
    "UNKNOWN_RECORD": 404,
    "METHOD_NOT_ALLOWED": 405,
    "CONFLICT": 409,
    "KEY_CONFLICT": 409,
    "BODY_TOO_LARGE": 413,
    "DIMENSION_MISMATCH": 422,
    "INVALID_NAMESPACE": 422,
    "INVALID_TYPE": 422,
    "QUOTA_EXCEEDED": 422,
    "UNKNOWN_TIER": 422,
    "UPGRADE_REQUIRED": 426,
    "BACKEND_ERROR": 500,
    "CAPABILITY_NOT_SUPPORTED": 501,
    "UNAVAILABLE": 503,
}
"""Every REST error ``code`` and the HTTP status it travels with."""

_A2M_ERROR_NAMES: Mapping[int, str] = {
    ErrorCode.PARSE_ERROR: "INVALID_BODY",
    ErrorCode.INVALID_REQUEST: "INVALID_BODY",
    ErrorCode.INVALID_PARAMS: "INVALID_BODY",
    ErrorCode.METHOD_NOT_FOUND: "UNKNOWN_METHOD",
    ErrorCode.INTERNAL_ERROR: "BACKEND_ERROR",
    ErrorCode.UNKNOWN_RECORD: "UNKNOWN_RECORD",
    ErrorCode.UNKNOWN_TIER: "UNKNOWN_TIER",
    ErrorCode.CAPABILITY_NOT_SUPPORTED: "CAPABILITY_NOT_SUPPORTED",
    ErrorCode.READ_ONLY: "READ_ONLY",
    ErrorCode.SCOPE_DENIED: "SCOPE_DENIED",
    ErrorCode.QUOTA_EXCEEDED: "QUOTA_EXCEEDED",
    ErrorCode.PROTOCOL_NOT_SUPPORTED: "PROTOCOL_NOT_SUPPORTED",
    ErrorCode.EMBEDDING_MISMATCH: "DIMENSION_MISMATCH",
}


def rest_error_for(a2m_code: int) -> tuple[int, str]:
    """The HTTP status and REST ``code`` an A2M error travels as (an unknown code is a
    server fault: 500 ``BACKEND_ERROR``)."""
    name = _A2M_ERROR_NAMES.get(a2m_code, "BACKEND_ERROR")
    return REST_ERROR_STATUS[name], name


def a2m_code_for(name: str) -> int | None:
    """The A2M error code a REST ``code`` stands for, so a REST client can raise the same
    error class as a JSON-RPC one; ``None`` for codes A2M has no counterpart of."""
    if name == "INVALID_BODY":
        return int(ErrorCode.INVALID_PARAMS)
    if name == "ENTRY_NOT_FOUND":
        return None
    for code, rest_name in _A2M_ERROR_NAMES.items():
        if rest_name == name:
            return int(code)
    return None


# --- namespaces and keys ------------------------------------------------------------------

_SEGMENT = re.compile(r"[a-z0-9_-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class InvalidNamespace(ValueError):
    """A namespace that breaks the draft's rules (§6.3): REST answers ``422 INVALID_NAMESPACE``."""


class InvalidKey(ValueError):
    """A key that is empty, too long, or cannot be spelled in a URL."""


def validate_namespace(namespace: str) -> str:
    """``namespace`` unchanged when it is valid: slash-separated ``[a-z0-9_-]+`` segments,
    none of them a route word, at most 256 characters; else :class:`InvalidNamespace`."""
    if not namespace:
        raise InvalidNamespace("a namespace needs at least one segment")
    if len(namespace) > MAX_NAMESPACE_LENGTH:
        raise InvalidNamespace(
            f"namespace is {len(namespace)} characters; at most {MAX_NAMESPACE_LENGTH} are allowed"
        )
    for segment in namespace.split("/"):
        if not segment:
            raise InvalidNamespace(f"namespace {namespace!r} has an empty segment")
        if not _SEGMENT.fullmatch(segment):
            raise InvalidNamespace(
                f"namespace segment {segment!r} may use only a-z, 0-9, '_' and '-'"
            )
        if segment in ROUTE_WORDS:
            raise InvalidNamespace(f"{segment!r} names a route and cannot be a namespace segment")
    return namespace


def validate_key(key: str) -> str:
    """``key`` unchanged when it is valid: 1 to 512 characters, ``/``-separated segments
    that are neither empty nor ``.``/``..``, no control characters, so that every key can
    be addressed in a URL; else :class:`InvalidKey`."""
    if not key:
        raise InvalidKey("a key must not be empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKey(f"key is {len(key)} characters; at most {MAX_KEY_LENGTH} are allowed")
    if _CONTROL.search(key):
        raise InvalidKey("a key must not contain control characters")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidKey(f"key {key!r} has an empty, '.' or '..' segment")
    return key


# --- models -------------------------------------------------------------------------------

MemoryType = Literal["working", "episodic", "semantic", "procedural", "external"]
"""What an entry is for (draft §6.2)."""

_Component = Annotated[float, Field(ge=-FLOAT32_MAX, le=FLOAT32_MAX, allow_inf_nan=False)]
Embedding = Annotated[list[_Component], Field(min_length=1)]


class EntryMeta(BaseModel):
    """An entry's metadata (draft §6.1); keys it does not name are kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True)

    source_agent: str | None = None
    """The agent that wrote it."""
    source_framework: str | None = None
    """The framework that wrote it, e.g. ``langchain``."""
    created_at: Timestamp | None = None
    """When the entry was first written (server-managed)."""
    updated_at: Timestamp | None = None
    """When it was last written (server-managed)."""
    ttl_s: int | None = Field(default=None, ge=1, le=MAX_TTL_SECONDS)
    """Seconds from the last write until it expires; ``None`` is permanent."""
    tags: list[str] = Field(default_factory=list)
    """Labels, filtered on with ``tag``."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    """How sure the writer is, 0 to 1; it becomes the record's salience."""


class EntryMetaWrite(EntryMeta):
    """``meta`` as a write sends it: the store sets the times, so whatever a caller sends
    for them is ignored (a client may send back the ``meta`` it read)."""

    created_at: Any = None
    """Ignored."""
    updated_at: Any = None
    """Ignored."""


class Entry(WireModel):
    """One entry as every read returns it: all fields present, null when unset."""

    id: str
    """The A2M record id; preserved on upsert."""
    key: str
    """The caller's key, unique within the namespace."""
    namespace: str
    """Where the entry lives."""
    type: MemoryType
    """Its memory type: where it lives now (a spilled ``working`` entry reads ``episodic``)."""
    value: Any
    """Any JSON value, exactly as written."""
    embedding: list[float] | None = None
    """The caller's vector, verbatim."""
    meta: EntryMeta
    """Provenance, tags, timestamps, TTL and confidence."""

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict, nulls included (the draft says every field is present)."""
        return self.model_dump(mode="json", by_alias=True)


_EXTERNAL_VALUE: JsonDict = {
    "if": {"properties": {"type": {"const": "external"}}, "required": ["type"]},
    "then": {
        "properties": {
            "value": {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "required": ["uri"],
                        "properties": {"uri": {"type": "string", "minLength": 1}},
                    },
                ]
            }
        }
    },
}


class EntryWrite(Params):
    """The body of ``POST /{namespace}/entries``: unknown fields are ignored."""

    model_config = ConfigDict(json_schema_extra=_EXTERNAL_VALUE)

    key: str = Field(
        min_length=1, max_length=MAX_KEY_LENGTH, json_schema_extra={"pattern": KEY_PATTERN}
    )
    """Unique within the namespace; may contain ``/`` (see :func:`validate_key`)."""
    type: MemoryType
    value: Any
    """Any JSON; ``null`` included. An ``external`` value is the reference (a string) or an
    object carrying ``uri``."""
    embedding: Embedding | None = None
    meta: EntryMetaWrite | None = None

    @field_validator("key")
    @classmethod
    def _check_key(cls, key: str) -> str:
        return validate_key(key)

    @model_validator(mode="after")
    def _check_external(self) -> EntryWrite:
        if self.type == "external":
            external_reference(self.value)
        return self


class EntryList(WireModel):
    """One page of ``GET /{namespace}/entries``."""

    entries: list[Entry]
    total: int = Field(ge=0)
    """Matching entries, ignoring pagination."""
    next_offset: int | None = None
    """The ``offset`` of the next page, or ``None`` on the last one."""
    next_cursor: str | None = None
    """Paging by ``cursor`` (an addition to the draft): the next page's cursor, or ``None``
    on the last one. ``total`` then counts this page only."""
    truncated: bool = False
    """The listing stopped at the server's cap (a server that cannot page), not at its end:
    older entries may exist that it does not show."""


class QueryRequest(Params):
    """The body of ``POST /{namespace}/query``: an ``embedding``, a text ``query``, or both."""

    embedding: Embedding | None = None
    query: str | None = Field(default=None, min_length=1)
    """Text to rank against as ``memory/recall`` does (an addition to the draft)."""
    type: MemoryType | None = None
    top_k: int = Field(default=DEFAULT_TOP_K, ge=1, le=MAX_TOP_K)
    min_score: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    """Scores lie in 0 to 1 (the draft's range), so a threshold outside it is refused."""
    tag: list[str] | None = None
    """Only entries carrying every one of these tags."""
    recursive: bool = False
    """Include child namespaces."""

    @model_validator(mode="after")
    def _needs_something(self) -> QueryRequest:
        if self.embedding is None and self.query is None:
            raise ValueError("a query needs an embedding, a text query, or both")
        return self


class ScoredEntry(WireModel):
    """One query result: the entry and its score, best first."""

    entry: Entry
    score: float


class RestErrorBody(WireModel):
    """Every REST error: ``code`` for programs, ``message`` for people."""

    code: str
    message: str
    a2m_code: int | None = None
    """The A2M error code, when the error came from one."""
    data: Any = None
    """Structured detail, when there is some."""


# --- external references -------------------------------------------------------------


def external_reference(value: Any) -> tuple[str, str]:
    """The ``(uri, content)`` of an ``external`` value."""
    if isinstance(value, str) and value:
        return value, value
    if isinstance(value, Mapping) and isinstance(value.get("uri"), str) and value["uri"]:
        described = [
            value[k] for k in ("title", "description", "text") if isinstance(value.get(k), str)
        ]
        return value["uri"], "\n".join(described) if described else value["uri"]
    raise ValueError(
        "an external entry's value is its reference (a non-empty string) or an object "
        "with a non-empty 'uri'"
    )

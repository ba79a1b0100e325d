"""The record (§3.1), what a client writes, and the shared ``where`` and ``prompt`` options."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AllowInfNan, Field, WithJsonSchema

from ._base import Count, Params, WireModel, capability_field
from ._time import Timestamp

__all__ = [
    "Embedding",
    "FiniteFloat",
    "JsonScalar",
    "PromptOption",
    "PromptOptions",
    "Record",
    "RecordInput",
    "Where",
]

JsonScalar = str | int | float | bool | None
"""A JSON value that is not an array or an object."""

_SCALAR_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]
}
_ORDERED_SCHEMA: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "number"}]}
_LIST_SCHEMA: dict[str, Any] = {"type": "array", "minItems": 1, "items": _SCALAR_SCHEMA}
OPERATOR_OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {
        "$eq": _SCALAR_SCHEMA,
        "$ne": _SCALAR_SCHEMA,
        "$gt": _ORDERED_SCHEMA,
        "$gte": _ORDERED_SCHEMA,
        "$lt": _ORDERED_SCHEMA,
        "$lte": _ORDERED_SCHEMA,
        "$in": _LIST_SCHEMA,
        "$nin": _LIST_SCHEMA,
        "$exists": {"type": "boolean"},
    },
    "description": "Operators that must all hold (a2m_types.filters); only for a server "
    "declaring where.operators.",
}
"""The JSON Schema of an operator object; its checks run in :func:`a2m_types.filters.parse`,
which names the offending key."""

OperatorObject = Annotated[dict[str, Any], WithJsonSchema(OPERATOR_OBJECT_SCHEMA)]
"""``{"$gte": 3, "$lt": 10}``: validated by :func:`a2m_types.filters.parse`."""

_VALUE_SCHEMA: dict[str, Any] = {
    "anyOf": [_SCALAR_SCHEMA, {"type": "array", "items": _SCALAR_SCHEMA}, OPERATOR_OBJECT_SCHEMA]
}


def _where_schema(depth: int) -> dict[str, Any]:
    """A where object whose ``$and`` / ``$or`` nest ``depth`` levels (at most 100 where
    objects to a list, as in :mod:`a2m_types.filters`)."""
    schema: dict[str, Any] = {"type": "object", "additionalProperties": _VALUE_SCHEMA}
    if depth > 0:
        listed = {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "items": {**_where_schema(depth - 1), "minProperties": 1},
            "description": "Where objects of which all ($and) or at least one ($or) must "
            "hold; only for a server declaring them in where.operators.",
        }
        logical = {"anyOf": [listed, _VALUE_SCHEMA]}
        schema["properties"] = {"$and": logical, "$or": logical}
    return schema


WHERE_SCHEMA: dict[str, Any] = _where_schema(1)
"""The JSON Schema of a where object; its checks run in :func:`a2m_types.filters.parse`,
which names the offending key. It shows ``$and`` / ``$or`` one level deep, which is all a
document of this size can spell out; the server takes them nested up to 4 deep."""

Where = Annotated[dict[str, JsonScalar | list[Any] | OperatorObject], WithJsonSchema(WHERE_SCHEMA)]
"""Equality tests against record fields, falling back to metadata keys (§5.2); a list
means "any of". An object of operators (``{"$gte": 3}``), a nested ``metadata.`` path and
``$and`` / ``$or`` over where objects need a server declaring them (describe
``where.operators``; :mod:`a2m_types.filters`)."""

Role = str
"""Who produced a record: user, assistant, tool, system, memory, or any other value."""

FiniteFloat = Annotated[float, AllowInfNan(False)]
"""A JSON number that a double can hold (1e400 is valid JSON but not a vector component)."""

Embedding = list[FiniteFloat]


class Record(WireModel):
    """One remembered thing, as a server returns it (§3.1)."""

    id: str = Field(min_length=1)
    """Opaque; never parse it."""
    content: str
    """The text that is remembered and searched."""
    created_at: Timestamp
    """When the record was first written."""
    role: Role | None = None
    """Who produced it. Advisory."""
    metadata: dict[str, Any] | None = None
    """Arbitrary JSON, round-tripped unchanged."""
    group: str | None = None
    """Records that are kept or discarded together (§3.4)."""
    tier: str | None = capability_field("tiers")
    """The layer the record lives in now."""
    salience: float | None = capability_field("salience")
    """How much the record is worth keeping; higher is more."""
    accessed_at: Timestamp | None = capability_field("salience")
    """When it was last recalled."""
    access_count: int | None = capability_field("salience")
    """How often it has been recalled."""
    owner: str | None = capability_field("scopes")
    """Which agent wrote it (§6)."""
    session: str | None = capability_field("sessions")
    """Which conversation it belongs to (§3.5)."""
    key: str | None = capability_field("keys")
    """The caller-chosen address of the fact (§3.6)."""
    revision: int | None = capability_field("keys")
    """How many times that key has been rewritten."""
    embedding: Embedding | None = capability_field("embeddings")
    """The caller-supplied vector; returned only when asked for."""
    uri: str | None = capability_field("external")
    """Where the real thing lives (§3.8); the server never fetches it."""
    media_type: str | None = capability_field("external")
    """The media type of what ``uri`` points at."""
    score: float | None = None
    """Ranking information from this one recall; never comparable across calls (§5.3)."""


class RecordInput(Params):
    """A record as a client writes it: only ``content`` is required (§4.2)."""

    content: str
    """The text to remember and search. May be empty for an external record."""
    id: str | None = Field(default=None, min_length=1)
    """Supplying it makes the write idempotent (§3.2)."""
    role: Role | None = None
    """Who produced it."""
    metadata: dict[str, Any] | None = None
    """Arbitrary JSON, returned unchanged."""
    group: str | None = None
    """Records kept or discarded together."""
    tier: str | None = capability_field("tiers")
    """Where to place it; refused with -32003 by a server without tiers."""
    salience: float | None = capability_field("salience", allow_inf_nan=False)
    """Initial salience."""
    owner: str | None = capability_field("scopes")
    """The agent it belongs to."""
    session: str | None = capability_field("sessions")
    """The conversation it belongs to."""
    key: str | None = capability_field("keys", min_length=1)
    """An address; a write to an occupied key replaces what is there."""
    embedding: Embedding | None = capability_field("embeddings", min_length=1)
    """A caller-supplied vector, stored verbatim."""
    uri: str | None = capability_field("external")
    """Where the real thing lives."""
    media_type: str | None = capability_field("external")
    """The media type of the referent."""


class PromptOptions(Params):
    """How to render recalled records as text (§4.16)."""

    method: Literal["template", "model", "none"] = "template"
    """template is deterministic and free; model costs an inference call; none renders nothing."""
    style: Literal["auto", "facts", "transcript"] = "auto"
    """The shape of the text; auto decides from the records."""
    model: str | None = None
    """Which model, when ``method`` is model."""
    budget: Count | None = None
    """Maximum characters; whole records are dropped to fit, never cut."""
    cite: bool = False
    """Mark each entry with its source: its uri, else its key."""


PromptOption = bool | PromptOptions
"""``True`` for the server's defaults, or :class:`PromptOptions`."""

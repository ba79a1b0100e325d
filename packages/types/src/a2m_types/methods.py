"""Every ``memory/*`` method: its params model, its result model, and the capability it
belongs to, tied together in one table (:data:`METHODS`) that drives both sending and
serving."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ._base import Count, Params, WireModel, capability_field
from ._time import Timestamp
from .describe import DescribeResult
from .events import Event
from .records import Embedding, PromptOption, Record, RecordInput, Where

__all__ = [
    "METHODS",
    "ConsolidateParams",
    "ConsolidateResult",
    "DescribeParams",
    "EventsParams",
    "EventsResult",
    "FetchParams",
    "FetchResult",
    "ForgetParams",
    "ForgetResult",
    "MethodSpec",
    "PromoteParams",
    "PromoteResult",
    "RecallParams",
    "RecallResult",
    "ReinforceParams",
    "ReinforceResult",
    "RememberParams",
    "RememberResult",
    "SessionCloseParams",
    "SessionCloseResult",
    "SessionInfo",
    "SessionListParams",
    "SessionListResult",
    "SubscribeParams",
    "SubscribeResult",
    "SummarizeParams",
    "SummarizeResult",
    "TimelineParams",
    "TimelineResult",
    "UnsubscribeParams",
    "UnsubscribeResult",
]

_OWNER_DOC = "Act as, or scope to, this owner. Requires scopes."


# --- core -------------------------------------------------------------------------------


class DescribeParams(Params):
    """``memory/describe``: discovery and version negotiation."""

    protocol: str | None = None
    """The version the client speaks, e.g. ``a2m/0.1``."""
    owner: str | None = capability_field("scopes")
    """Scope the counts to this owner."""


class RememberParams(Params):
    """``memory/remember``: write one or more records, atomically."""

    records: list[RecordInput] = Field(min_length=1)
    """The records to write."""
    owner: str | None = capability_field("scopes")
    """Default owner for records that set none."""
    session: str | None = capability_field("sessions")
    """Default session for records that set none."""


class RememberResult(WireModel):
    """One id per input record, in input order."""

    ids: list[str]


class RecallParams(Params):
    """``memory/recall``: records ranked by relevance."""

    query: str | None = None
    """What to rank against; empty means most recent first."""
    tier: str | None = capability_field("tiers")
    """Restrict to one tier."""
    limit: Count | None = None
    """Most records to return."""
    where: Where | None = None
    """Equality filter on fields, then metadata (§5.2); operators where declared."""
    min_score: float | None = Field(default=None, allow_inf_nan=False)
    """Drop results scoring below this (server-relative)."""
    owner: str | None = capability_field("scopes")
    """Scope to this owner's view."""
    embedding: Embedding | None = capability_field("embeddings", min_length=1)
    """A query vector."""
    key_prefix: str | None = capability_field("keys")
    """Only keys at or beneath this prefix."""
    embeddings: bool | None = capability_field("embeddings")
    """Include stored vectors in the result."""
    prompt: PromptOption | None = capability_field("prompt")
    """Also render the records as text (§4.16)."""
    rank: Literal["blend", "similarity"] | None = None
    """The order: ``blend`` (§5, the default), or ``similarity`` — by the store's metric
    to ``embedding`` alone, each score that similarity in [0, 1] (§3.7); ``query`` takes
    no part, and without ``embedding`` nothing is returned. Sent only to a server
    declaring it in describe ``recall.rank``."""


class RecallResult(WireModel):
    """Records in descending score, and the rendered text when asked for."""

    records: list[Record]
    prompt: str | None = None
    """The rendered block, present only when the caller asked."""
    prompt_ids: list[str] | None = None
    """The ids of the records the block contains."""


class TimelineParams(Params):
    """``memory/timeline``: records in creation order, oldest first."""

    tier: str | None = capability_field("tiers")
    limit: Count | None = None
    """Return the most recent ``limit`` records, still oldest first."""
    owner: str | None = capability_field("scopes")
    where: Where | None = None
    key_prefix: str | None = capability_field("keys")
    embeddings: bool | None = capability_field("embeddings")
    prompt: PromptOption | None = capability_field("prompt")
    cursor: str | None = Field(default=None, max_length=1024)
    """Page forward instead: the oldest ``limit`` records after this position (``""``:
    from the oldest), with ``next_cursor`` in the result. Only for a server declaring
    ``timeline.cursor``; any other ignores it (§2)."""


class TimelineResult(RecallResult):
    """Records in ascending ``created_at``."""

    next_cursor: str | None = None
    """With ``cursor``: the cursor of the next page, or null when this page is the last."""


class ForgetParams(Params):
    """``memory/forget``: delete records; at least one selector is required."""

    ids: list[str] | None = None
    query: str | None = None
    tier: str | None = capability_field("tiers")
    where: Where | None = None
    owner: str | None = capability_field("scopes")
    key_prefix: str | None = capability_field("keys")


class ForgetResult(WireModel):
    """How many records a forget removed."""

    forgotten: int = Field(ge=0)
    """How many records were removed."""


# --- tiers ------------------------------------------------------------------------------


class PromoteParams(Params):
    """``memory/promote``: move records to a tier because they earned it."""

    ids: list[str]
    tier: str
    salience: float | None = capability_field("salience", allow_inf_nan=False)
    """How much salience to add on arrival."""
    owner: str | None = capability_field("scopes")


class PromoteResult(WireModel):
    """How many records changed tier."""

    promoted: int = Field(ge=0)


class ConsolidateParams(Params):
    """``memory/consolidate`` takes no parameters."""


class ConsolidateResult(WireModel):
    """What a reorganisation did, and the tier counts after it."""

    moved: int | None = Field(default=None, ge=0)
    """Records that changed tier under capacity pressure."""
    promoted: int | None = Field(default=None, ge=0)
    """Records that changed tier because they earned it."""
    dropped: int | None = Field(default=None, ge=0)
    """Records deleted because there was nowhere below."""
    summarized: int | None = Field(default=None, ge=0)
    """Groups replaced by rewritten records."""
    counts: dict[str, int]
    """Tier name to record count, after the operation."""


# --- salience ---------------------------------------------------------------------------


class ReinforceParams(Params):
    """``memory/reinforce``: raise the salience of records that proved useful."""

    ids: list[str]
    amount: float | None = Field(default=None, allow_inf_nan=False)
    owner: str | None = capability_field("scopes")


class ReinforceResult(WireModel):
    """How many records had their salience raised."""

    reinforced: int = Field(ge=0)


# --- keys -------------------------------------------------------------------------------


class FetchParams(Params):
    """``memory/fetch``: the record at an address."""

    key: str = Field(min_length=1)
    owner: str | None = capability_field("scopes")
    embeddings: bool | None = capability_field("embeddings")


class FetchResult(WireModel):
    """The record, or ``None`` when the key is unused (not an error)."""

    record: Record | None


# --- sessions ---------------------------------------------------------------------------


class SessionListParams(Params):
    """``memory/session/list``."""

    owner: str | None = capability_field("scopes")


class SessionInfo(WireModel):
    """One conversation and how many records it holds."""

    session: str
    records: int = Field(ge=0)
    tiers: dict[str, int] | None = None
    """Tier name to count."""
    opened_at: Timestamp | None = None
    """When its first record was written."""
    touched_at: Timestamp | None = None
    """When it last changed."""


class SessionListResult(WireModel):
    """Every named session the caller can see."""

    sessions: list[SessionInfo]


class SessionCloseParams(Params):
    """``memory/session/close``: end a conversation and let its records settle."""

    session: str = Field(min_length=1)
    owner: str | None = capability_field("scopes")


class SessionCloseResult(ConsolidateResult):
    """The consolidate result plus which session closed and how many records left working."""

    closed: str
    flushed: int | None = Field(default=None, ge=0)


# --- events -----------------------------------------------------------------------------


class EventsParams(Params):
    """``memory/events``: one poll of the event log."""

    cursor: str | None = None
    """Opaque position; absent means now (no events, just the head)."""
    limit: Count | None = None
    kinds: list[str] | None = None
    owner: str | None = capability_field("scopes")


class EventsResult(WireModel):
    """Events after the cursor, oldest first, and the cursor to bring next time."""

    events: list[Event]
    cursor: str
    more: bool | None = None
    """Retained events remain beyond ``limit``."""
    reset: bool | None = None
    """The supplied cursor could not be honoured; events may have been missed."""


class SubscribeParams(Params):
    """``memory/events/subscribe``: push events on this connection."""

    kinds: list[str] | None = None
    owner: str | None = capability_field("scopes")


class SubscribeResult(WireModel):
    """Push is on for this connection."""

    subscribed: Literal[True]


class UnsubscribeParams(Params):
    """``memory/events/unsubscribe`` takes no parameters."""


class UnsubscribeResult(WireModel):
    """Push is off for this connection."""

    subscribed: Literal[False]


# --- summarize --------------------------------------------------------------------------


class SummarizeParams(Params):
    """``memory/summarize``: distil records into stored summary records."""

    ids: list[str] | None = None
    query: str | None = None
    tier: str | None = capability_field("tiers")
    where: Where | None = None
    key_prefix: str | None = capability_field("keys")
    limit: Count | None = None
    owner: str | None = capability_field("scopes")
    into: str | None = capability_field("tiers")
    """Destination tier for the summary."""
    key: str | None = capability_field("keys", min_length=1)
    """Address for the summary; an occupied key is replaced."""


class SummarizeResult(WireModel):
    """The summary records written, and how many sources were read."""

    records: list[Record]
    """The summary records written; empty when the server declined."""
    read: int = Field(ge=0)
    written: int = Field(ge=0)


# --- the table --------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodSpec:
    """One method: its wire name, capability, params and result models, and retry safety."""

    name: str
    capability: str
    params: type[Params]
    result: type[WireModel]
    idempotent: bool
    """Whether sending it twice has the same effect as sending it once."""


METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        MethodSpec("memory/describe", "core", DescribeParams, DescribeResult, True),
        MethodSpec("memory/remember", "core", RememberParams, RememberResult, True),
        MethodSpec("memory/recall", "core", RecallParams, RecallResult, True),
        MethodSpec("memory/timeline", "core", TimelineParams, TimelineResult, True),
        MethodSpec("memory/forget", "core", ForgetParams, ForgetResult, True),
        MethodSpec("memory/promote", "tiers", PromoteParams, PromoteResult, True),
        MethodSpec("memory/consolidate", "tiers", ConsolidateParams, ConsolidateResult, False),
        MethodSpec("memory/reinforce", "salience", ReinforceParams, ReinforceResult, False),
        MethodSpec("memory/fetch", "keys", FetchParams, FetchResult, True),
        MethodSpec("memory/session/list", "sessions", SessionListParams, SessionListResult, True),
        MethodSpec(
            "memory/session/close", "sessions", SessionCloseParams, SessionCloseResult, False
        ),
        MethodSpec("memory/events", "events", EventsParams, EventsResult, True),
        MethodSpec("memory/events/subscribe", "events", SubscribeParams, SubscribeResult, True),
        MethodSpec(
            "memory/events/unsubscribe", "events", UnsubscribeParams, UnsubscribeResult, True
        ),
        MethodSpec("memory/summarize", "summarize", SummarizeParams, SummarizeResult, False),
    )
}
"""Every A2M 0.1 method by wire name. ``idempotent`` is the method's nature; a caller
may still decide per call (``promote`` with ``salience``, ``summarize`` without ``key``
are not), see the client's retry policy."""

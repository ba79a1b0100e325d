"""Events (§4.12): one thing that happened to the store. Known kinds are typed; a kind
this library does not know is kept as :class:`UnknownEvent`, never rejected."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from ._base import WireModel
from ._time import Timestamp

__all__ = [
    "ConsolidatedEvent",
    "Event",
    "EventBase",
    "ForgottenEvent",
    "PromotedEvent",
    "SessionClosedEvent",
    "UnknownEvent",
    "WrittenEvent",
    "event_kind",
]

KNOWN_EVENT_KINDS = ("written", "forgotten", "promoted", "consolidated", "session_closed")


class EventBase(WireModel):
    """Fields every event carries."""

    kind: str
    """What happened."""
    at: Timestamp
    """When it happened."""


class WrittenEvent(EventBase):
    """One record written by ``memory/remember``; ``revision > 0`` is a key replacement."""

    kind: Literal["written"] = "written"
    id: str
    """The record written."""
    tier: str | None = None
    """Its tier, with ``tiers``."""
    session: str | None = None
    """Its session, with ``sessions``."""
    key: str | None = None
    """Its key, with ``keys``."""
    revision: int | None = Field(default=None, ge=0)
    """Its revision, with ``keys``."""


class ForgottenEvent(EventBase):
    """One ``memory/forget`` call, however many records it removed."""

    kind: Literal["forgotten"] = "forgotten"
    count: int = Field(ge=0)
    """How many records were removed."""
    ids: list[str] | None = None
    """Which ones, when the server says."""


class PromotedEvent(EventBase):
    """One ``memory/promote`` call."""

    kind: Literal["promoted"] = "promoted"
    ids: list[str]
    """The records moved."""
    tier: str
    """Their destination."""


class ConsolidatedEvent(EventBase):
    """One reorganisation: a consolidate, a session close, or a spill under pressure."""

    kind: Literal["consolidated"] = "consolidated"
    moved: int | None = Field(default=None, ge=0)
    promoted: int | None = Field(default=None, ge=0)
    dropped: int | None = Field(default=None, ge=0)
    summarized: int | None = Field(default=None, ge=0)


class SessionClosedEvent(EventBase):
    """One ``memory/session/close``."""

    kind: Literal["session_closed"] = "session_closed"
    session: str
    """The session closed."""


class UnknownEvent(EventBase):
    """An event of a kind this library does not know; every field is kept."""


def event_kind(value: Any) -> str:
    """The discriminator tag for ``value``: its kind if known, else ``unknown``."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    if isinstance(value, UnknownEvent):
        return "unknown"
    return kind if kind in KNOWN_EVENT_KINDS else "unknown"


Event = Annotated[
    Annotated[WrittenEvent, Tag("written")]
    | Annotated[ForgottenEvent, Tag("forgotten")]
    | Annotated[PromotedEvent, Tag("promoted")]
    | Annotated[ConsolidatedEvent, Tag("consolidated")]
    | Annotated[SessionClosedEvent, Tag("session_closed")]
    | Annotated[UnknownEvent, Tag("unknown")],
    Discriminator(event_kind),
]
"""Any event: validate with ``TypeAdapter(Event)`` or as a field of a model."""

"""The method table: each ``memory/*`` name and the function that gives it meaning."""

from __future__ import annotations

from typing import Any

from .events import poll_events, subscribe, unsubscribe
from .observations import HANDLERS as OBSERVATION_HANDLERS
from .reads import describe, fetch, recall, timeline
from .summarize import summarize
from .tiers import close_session, consolidate, list_sessions, promote, reinforce
from .writes import forget, remember

__all__ = ["HANDLERS"]

HANDLERS: dict[str, Any] = {
    "memory/describe": describe,
    "memory/remember": remember,
    "memory/recall": recall,
    "memory/timeline": timeline,
    "memory/forget": forget,
    "memory/promote": promote,
    "memory/consolidate": consolidate,
    "memory/reinforce": reinforce,
    "memory/fetch": fetch,
    "memory/session/list": list_sessions,
    "memory/session/close": close_session,
    "memory/events": poll_events,
    "memory/events/subscribe": subscribe,
    "memory/events/unsubscribe": unsubscribe,
    "memory/summarize": summarize,
    **OBSERVATION_HANDLERS,
}

"""Timestamps as the spec wants them (§3.3): aware datetimes in Python,
RFC 3339 UTC strings with a ``Z`` and milliseconds on the wire."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, PlainSerializer, WithJsonSchema

__all__ = ["Timestamp", "format_timestamp", "from_epoch_ms", "parse_timestamp", "to_epoch_ms"]

_TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"


def format_timestamp(value: datetime) -> str:
    """Render ``value`` as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC (a naive value is taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    value = value.astimezone(timezone.utc)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 string into an aware UTC datetime."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError("timestamp must carry a UTC offset or a 'Z' suffix")
    return parsed.astimezone(timezone.utc)


def to_epoch_ms(value: datetime) -> int:
    """Milliseconds since the Unix epoch, for storage and arithmetic."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return int(value.timestamp() * 1000)


def from_epoch_ms(ms: int) -> datetime:
    """The aware UTC datetime for ``ms`` milliseconds since the epoch."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _refuse_epochs(value: Any) -> Any:
    # Numeric epochs are forbidden by §3.3: they hide their unit and time zone. The
    # string parsing itself is left to pydantic's (fast, native) datetime validator.
    if isinstance(value, (int, float)):
        raise ValueError("timestamp must be an RFC 3339 string such as '2026-07-28T10:15:30.123Z'")
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


Timestamp = Annotated[
    AwareDatetime,
    BeforeValidator(_refuse_epochs),
    PlainSerializer(format_timestamp, return_type=str, when_used="json-unless-none"),
    WithJsonSchema({"type": "string", "pattern": _TIMESTAMP_PATTERN}),
]
"""An aware datetime that travels as ``"2026-07-28T10:15:30.123Z"``."""

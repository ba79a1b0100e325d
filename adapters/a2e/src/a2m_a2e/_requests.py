"""Reading a request: the envelope every message shares, typed access to its fields, and
what the host refuses (its limits, and the refusal that becomes a ``memory/error``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a2m_types.json_values import is_utf8_text

from . import _messages as m
from ._entries import EntryRefused, check_json
from ._keys import encode_key
from ._messages import ErrorCode

__all__ = ["REQUIRED", "HostLimits", "Reader", "Refused", "check_envelope", "request_id"]


@dataclass(frozen=True)
class HostLimits:
    """What the host refuses. Quotas count a namespace's entries and content bytes
    (compact UTF-8 JSON) across every memory session bound to it; ``None`` is no quota."""

    max_entries: int | None = None
    max_bytes: int | None = None
    max_entry_bytes: int = 64 * 1024
    """Largest ``content`` of one entry, in bytes."""
    max_depth: int = 64
    """Deepest nesting of one entry's ``content``."""
    max_entries_per_store: int = 1000
    max_message_bytes: int = 16 * 1024 * 1024
    """Largest JSON text message accepted."""


class Refused(Exception):
    """A request the host answers with a ``memory/error`` message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_TEXT = " of text (no lone surrogate, which UTF-8 cannot hold)"


class Reader:
    """Typed access to a request's fields: a wrong type is an ``invalid_message``."""

    def __init__(self, message: Mapping[str, Any]) -> None:
        self.message = message

    def raw(self, name: str, default: Any) -> Any:
        """The field as sent, ``default`` when absent (``REQUIRED``: refused when absent)."""
        if name in self.message:
            return self.message[name]
        if default is REQUIRED:
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{self.message['type']} needs {name!r}")
        return default

    def text(self, name: str, default: Any = None) -> str:
        value = self.raw(name, default)
        if not isinstance(value, str) or not is_utf8_text(value):
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r} must be a string{_TEXT}")
        return value

    def object(self, name: str) -> dict[str, Any]:
        value = self.raw(name, {})
        if not isinstance(value, dict):
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r} must be an object")
        return value

    def strings(self, name: str) -> list[str]:
        value = self.raw(name, [])
        if not isinstance(value, list) or not all(
            isinstance(item, str) and is_utf8_text(item) for item in value
        ):
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r} must be a list of strings{_TEXT}")
        return list(dict.fromkeys(value))

    def keys(self, name: str) -> list[str]:
        value = self.raw(name, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r} must be a list of objects")
        encoded = []
        for key in value:
            try:
                check_json(key, max_depth=8)
                encoded.append(encode_key(key))
            except (ValueError, EntryRefused) as exc:
                raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r}: {exc}") from None
        return list(dict.fromkeys(encoded))

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        value = self.raw(name, default)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise Refused(
                ErrorCode.INVALID_MESSAGE, f"{name!r} must be an integer from {low} to {high}"
            )
        return value

    def number(self, name: str, default: float) -> float:
        value = self.raw(name, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r} must be a number")
        return float(value)

    def flag(self, name: str) -> bool:
        value = self.raw(name, False)
        if not isinstance(value, bool):
            raise Refused(ErrorCode.INVALID_MESSAGE, f"{name!r} must be true or false")
        return value


REQUIRED = object()


def request_id(message: Any) -> str:
    """The ``id`` a response echoes as ``req_id`` ("" when there is none to echo)."""
    if isinstance(message, Mapping):
        value = message.get("id")
        if isinstance(value, str):
            return value
    return ""


def check_envelope(message: Any) -> str:
    if not isinstance(message, Mapping):
        raise Refused(ErrorCode.INVALID_MESSAGE, "a message must be a JSON object")
    kind = message.get("type")
    if not isinstance(kind, str):
        raise Refused(ErrorCode.INVALID_MESSAGE, "a message needs a string 'type'")
    if "id" in message and not isinstance(message["id"], str):
        raise Refused(ErrorCode.INVALID_MESSAGE, "'id' must be a string")
    version = message.get("version", m.PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise Refused(ErrorCode.INVALID_MESSAGE, "'version' must be a string")
    if version.split(".")[0] != "1":
        raise Refused(ErrorCode.UNSUPPORTED_VERSION, f"version {version[:20]!r} is not 1.x")
    ts = message.get("ts", 0.0)
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not math.isfinite(ts):
        raise Refused(ErrorCode.INVALID_MESSAGE, "'ts' must be a finite number")
    return kind

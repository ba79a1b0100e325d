"""How an Agent Framework ``Message`` becomes an A2M record and back: readable text as
``content`` (so every framework's recall finds what was said), the role, provenance, and
the message exactly as ``Message.to_dict()`` gives it in ``metadata.message``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import Message

from a2m import Record
from a2m.errors import InvalidParams
from a2m_types.json_values import JSONValueError, check_json_value
from a2m_types.rest import InvalidNamespace, validate_namespace

__all__ = [
    "MESSAGE_FIELD",
    "SESSION_ID_FIELD",
    "SOURCE_FRAMEWORK",
    "Provenance",
    "checked_messages",
    "checked_namespace",
    "message_of",
    "readable_text",
]

SOURCE_FRAMEWORK = "agent-framework"
"""``metadata.source_framework`` of every record this package writes."""

MESSAGE_FIELD = "message"
"""The metadata key holding a message exactly as ``Message.to_dict()`` gives it."""

SESSION_ID_FIELD = "session_id"
"""The metadata key holding the session id under a name no record field has: what a
session is selected by on a server without the ``sessions`` capability."""


def checked_namespace(namespace: str) -> str:
    """``namespace`` if it is a valid A2M namespace (``[a-z0-9_-]`` segments)."""
    try:
        return validate_namespace(namespace)
    except InvalidNamespace as exc:
        raise InvalidParams(f"{exc} (nothing was sent)") from None


def checked_messages(messages: Sequence[Any]) -> list[tuple[Message, dict[str, Any]]]:
    """Each message with its ``to_dict()``, refused whole before anything is written when
    one is not a ``Message`` or holds a value A2M cannot carry exactly (NaN, bytes, a set,
    nesting past 64 levels…): the error names the message and the place in it."""
    checked: list[tuple[Message, dict[str, Any]]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise InvalidParams(
                f"messages[{index}] is a {type(message).__name__}, not an agent_framework "
                "Message; nothing was written"
            )
        # to_dict() drops what it cannot encode (bytes or a set in a call's arguments)
        # without a word: check the arguments themselves first.
        for number, content in enumerate(message.contents):
            arguments = getattr(content, "arguments", None)
            if content.type == "function_call" and isinstance(arguments, Mapping):
                try:
                    check_json_value(
                        dict(arguments), f"messages[{index}].contents[{number}].arguments"
                    )
                except JSONValueError as exc:
                    raise InvalidParams(
                        f"{exc}; nothing was written", data={"path": exc.path}
                    ) from None
        try:
            serialized = message.to_dict()
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidParams(
                f"messages[{index}] cannot be serialized ({exc}); nothing was written"
            ) from None
        try:
            check_json_value(serialized, f"messages[{index}]")
        except JSONValueError as exc:
            raise InvalidParams(f"{exc}; nothing was written", data={"path": exc.path}) from None
        _refuse_dropped(message, serialized, f"messages[{index}]")
        checked.append((message, serialized))
    return checked


def _refuse_dropped(message: Message, serialized: Mapping[str, Any], path: str) -> None:
    """InvalidParams where ``to_dict()`` left out part of an ``additional_properties`` (of
    the message or of a content): bytes, a set or a tuple there vanish without a word."""
    pairs = [(message.additional_properties, serialized.get("additional_properties"), path)]
    written = serialized.get("contents") or []
    for number, content in enumerate(message.contents):
        kept = written[number] if number < len(written) else {}
        place = f"{path}.contents[{number}]"
        pairs.append((content.additional_properties, kept.get("additional_properties"), place))
    for original, kept, place in pairs:
        lost = _dropped(original or {}, kept or {}, f"{place}.additional_properties")
        if lost is not None:
            raise InvalidParams(
                f"{lost} cannot be stored: Message.to_dict() leaves it out (bytes, a set or a "
                "tuple are not JSON); nothing was written",
                data={"path": lost},
            )


def _dropped(original: Any, kept: Any, path: str) -> str | None:
    """Where ``kept`` (``to_dict()``'s output) lacks part of ``original``: a key, or an item
    of a list; ``None`` when nothing went. A value it turned into text (a datetime) stays."""
    if isinstance(original, Mapping):
        if not isinstance(kept, Mapping):
            return path
        for key, value in original.items():
            if key not in kept:
                return f"{path}[{key!r}]"
            inner = _dropped(value, kept[key], f"{path}[{key!r}]")
            if inner is not None:
                return inner
        return None
    if isinstance(original, (tuple, set, frozenset, bytes, bytearray)):
        return path
    if isinstance(original, list):
        if not isinstance(kept, list) or len(kept) != len(original):
            return path
        for number, (value, held) in enumerate(zip(original, kept, strict=True)):
            inner = _dropped(value, held, f"{path}[{number}]")
            if inner is not None:
                return inner
    return None


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else ""


def _content_text(content: Mapping[str, Any]) -> str:
    kind = content.get("type")
    if kind in ("text", "text_reasoning"):
        return str(content.get("text") or "")
    if kind == "function_call":
        return f"{content.get('name', '?')}({_arguments(content.get('arguments'))})"
    if kind == "function_result":
        result = content.get("result")
        return result if isinstance(result, str) else _arguments(result)
    if kind in ("data", "uri", "hosted_file"):
        media = content.get("media_type") or "file"
        where = content.get("uri") if kind == "uri" else content.get("file_id") or ""
        return f"[{media}{': ' + str(where) if where else ''}]"
    if kind == "error":
        return f"[error: {content.get('message', '')}]"
    return f"[{kind}]" if isinstance(kind, str) and kind != "usage" else ""


def readable_text(serialized: Mapping[str, Any]) -> str:
    """What a person (or another framework's recall) reads for a serialized message: its
    text, a function call as ``name(arguments)``, a function's result, a file or data
    reference in brackets. Never empty."""
    parts = [
        text
        for content in serialized.get("contents") or []
        if isinstance(content, Mapping) and (text := _content_text(content))
    ]
    return "\n".join(parts) or f"[{serialized.get('role', 'message')} message]"


@dataclass(frozen=True)
class Provenance:
    """Who writes: the namespace scoping writes and deletes, and the agent."""

    namespace: str
    agent: str | None = None

    def where(self, session_id: str, *, sessions: bool) -> dict[str, Any]:
        """The ``where`` selecting one session's messages written here: what reads and
        writes of that session touch, and nothing else. On a server without ``sessions``
        no record has a ``session`` field to match (spec §2), so the session is matched in
        ``metadata.session_id``."""
        return {
            "namespace": self.namespace,
            "source_framework": SOURCE_FRAMEWORK,
            ("session" if sessions else SESSION_ID_FIELD): session_id,
        }

    def metadata(self, memory_type: str, **extra: Any) -> dict[str, Any]:
        """The metadata every record of this writer carries."""
        stated: dict[str, Any] = {
            "namespace": self.namespace,
            "type": memory_type,
            "source_framework": SOURCE_FRAMEWORK,
        }
        if self.agent is not None:
            stated["source_agent"] = self.agent
        stated.update(extra)
        return stated

    def message_record(
        self,
        message: Message,
        serialized: dict[str, Any],
        session_id: str,
        *,
        tier: str | None,
        keys: bool,
        scopes: bool,
        sessions: bool,
    ) -> dict[str, Any]:
        """The record holding one message of ``session_id``."""
        metadata = self.metadata(
            "episodic",
            session=session_id,
            **{SESSION_ID_FIELD: session_id, MESSAGE_FIELD: serialized},
        )
        if message.author_name and "source_agent" not in metadata:
            metadata["source_agent"] = message.author_name
        record: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "content": readable_text(serialized),
            "role": str(message.role),
            "metadata": metadata,
        }
        if tier is not None:
            record["tier"] = tier
        if keys:
            # a key makes the message an entry, so adapters that read entries find it too
            record["key"] = f"{self.namespace}/messages/{record['id']}"
        if scopes and self.agent is not None:
            record["owner"] = self.agent
        if sessions:
            record["session"] = session_id
        return record


def message_of(record: Record) -> Message | None:
    """The message ``record`` holds, or ``None`` when it holds none (written by hand, or
    damaged): such a record is skipped, never guessed at."""
    stored = (record.metadata or {}).get(MESSAGE_FIELD)
    if not isinstance(stored, Mapping):
        return None
    try:
        return Message.from_dict(dict(stored))
    except (TypeError, ValueError, KeyError):
        return None

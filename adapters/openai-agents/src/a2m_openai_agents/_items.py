"""How a Responses-API input item becomes an A2M record and back: readable text as
``content`` (so other frameworks' recall finds what an Agents SDK agent said), a role,
provenance, and the item itself, verbatim, in ``metadata.item``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from a2m import Record
from a2m.errors import InvalidParams
from a2m_types.json_values import JSONValueError, check_json_value
from a2m_types.rest import InvalidNamespace, validate_namespace

__all__ = [
    "ITEM_FIELD",
    "SESSION_ID_FIELD",
    "SOURCE_FRAMEWORK",
    "Provenance",
    "checked_items",
    "checked_namespace",
    "item_of",
    "readable_text",
    "role_of",
]

SOURCE_FRAMEWORK = "openai-agents"
"""``metadata.source_framework`` of every record this package writes."""

ITEM_FIELD = "item"
"""The metadata key holding an input item exactly as the SDK gave it."""

SESSION_ID_FIELD = "session_id"
"""The metadata key holding the session id under a name no record field has: what a
session is selected by on a server without the ``sessions`` capability."""

_TOOL_OUTPUTS = frozenset(
    {
        "function_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "custom_tool_call_output",
        "mcp_approval_response",
        "tool_search_output",
    }
)


def checked_namespace(namespace: str) -> str:
    """``namespace`` if it is a valid A2M namespace (``[a-z0-9_-]`` segments)."""
    try:
        return validate_namespace(namespace)
    except InvalidNamespace as exc:
        raise InvalidParams(f"{exc} (nothing was sent)") from None


def checked_items(items: Sequence[Any]) -> list[dict[str, Any]]:
    """``items``, refused whole before anything is written when one is not a JSON object
    that A2M carries exactly (NaN, bytes, sets, tuples, deep nesting…): the error names
    the item and the place in it."""
    if isinstance(items, (str, bytes, Mapping)):
        raise InvalidParams("add_items takes a list of input items (nothing was written)")
    checked: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if type(item) is not dict:
            raise InvalidParams(
                f"items[{index}] is a {type(item).__name__}, not an input item (a dict); "
                "nothing was written"
            )
        try:
            check_json_value(item, f"items[{index}]")
        except JSONValueError as exc:
            raise InvalidParams(f"{exc}; nothing was written", data={"path": exc.path}) from None
        checked.append(item)
    return checked


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    kind = part.get("type")
    for field in ("text", "refusal"):
        value = part.get(field)
        if isinstance(value, str):
            return value
    if kind == "input_image":
        where = part.get("image_url") or part.get("file_id") or "inline"
        return f"[image: {where}]"
    if kind == "input_file":
        where = part.get("filename") or part.get("file_url") or part.get("file_id") or "inline"
        return f"[file: {where}]"
    if kind == "input_audio":
        return "[audio]"
    return f"[{kind}]" if isinstance(kind, str) else ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(text for text in map(_part_text, content) if text)
    return ""


def readable_text(item: Mapping[str, Any]) -> str:
    """What a person (or another framework's recall) reads for ``item``: a message's text,
    a tool call as ``name(arguments)``, a tool's output, a reasoning summary, a search's
    queries; for anything else its type in brackets. Never empty."""
    kind = _kind(item)
    text = ""
    if "role" in item and kind in (None, "message"):
        text = _content_text(item.get("content"))
    elif kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments", item.get("input", ""))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        text = f"{item.get('name', '?')}({arguments})"
    elif kind in _TOOL_OUTPUTS:
        output = item.get("output")
        text = output if isinstance(output, str) else _content_text(output)
    elif kind == "reasoning":
        text = "\n".join(
            text for text in map(_part_text, item.get("summary") or []) if text
        ) or _content_text(item.get("content"))
    elif kind == "web_search_call":
        action = item.get("action")
        query = action.get("query") if isinstance(action, Mapping) else None
        text = f"web search: {query}" if isinstance(query, str) else ""
    elif kind == "file_search_call":
        queries = item.get("queries")
        if isinstance(queries, Sequence) and not isinstance(queries, str):
            text = "file search: " + "; ".join(str(q) for q in queries)
    elif kind == "item_reference":
        text = f"[item_reference: {item.get('id')}]"
    if not text:
        text = f"[{kind or 'item'}]"
    return text


def role_of(item: Mapping[str, Any]) -> str:
    """The A2M ``role`` of an item: a message's own role; ``tool`` for a tool's output;
    ``assistant`` for what the model produced (calls, reasoning, searches)."""
    role = item.get("role")
    if isinstance(role, str) and role:
        return role
    return "tool" if _kind(item) in _TOOL_OUTPUTS else "assistant"


def _kind(item: Mapping[str, Any]) -> str | None:
    """The item's ``type`` when it is a string (an item may hold anything there)."""
    kind = item.get("type")
    return kind if isinstance(kind, str) else None


@dataclass(frozen=True)
class Provenance:
    """Who writes: the namespace scoping writes and deletes, the agent, the session."""

    namespace: str
    session_id: str
    agent: str | None = None

    def where(self, *, sessions: bool) -> dict[str, Any]:
        """The ``where`` selecting this session's items written through this package in
        this namespace: what reads, pops and clears touch, and nothing else. On a server
        without ``sessions`` no record has a ``session`` field to match (spec §2), so the
        session is matched in ``metadata.session_id``."""
        return {
            "namespace": self.namespace,
            "source_framework": SOURCE_FRAMEWORK,
            ("session" if sessions else SESSION_ID_FIELD): self.session_id,
        }

    def record(
        self,
        item: dict[str, Any],
        *,
        tier: str | None,
        keys: bool,
        scopes: bool,
        sessions: bool,
    ) -> dict[str, Any]:
        """The record holding ``item``, placed where the server keeps tiers, keys, owners
        and sessions."""
        metadata: dict[str, Any] = {
            "namespace": self.namespace,
            "type": "episodic",
            "source_framework": SOURCE_FRAMEWORK,
            "session": self.session_id,
            SESSION_ID_FIELD: self.session_id,
            "item_type": item.get("type", "message"),
            ITEM_FIELD: item,
        }
        if self.agent is not None:
            metadata["source_agent"] = self.agent
        record: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "content": readable_text(item),
            "role": role_of(item),
            "metadata": metadata,
        }
        if tier is not None:
            record["tier"] = tier
        if keys:
            # a key makes the item an entry, so adapters that read entries find it too
            record["key"] = f"{self.namespace}/items/{record['id']}"
        if scopes and self.agent is not None:
            record["owner"] = self.agent
        if sessions:
            record["session"] = self.session_id
        return record


def item_of(record: Record) -> dict[str, Any] | None:
    """The input item ``record`` holds, or ``None`` when it holds none (a record written
    by hand, or damaged): such a record is skipped, never guessed at."""
    item = (record.metadata or {}).get(ITEM_FIELD)
    return item if isinstance(item, dict) else None

"""The shape of a LangGraph thread in A2M (see :mod:`._saver_plan`): where its records
live, how a checkpoint, a pending write and a message become records, and how records
become a ``CheckpointTuple`` again."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from a2m import Record

from ._addressing import encode_key, encode_segment
from ._effects import DESCRIBE, Layout, Plan

__all__ = [
    "SaverSettings",
    "Thread",
    "blob",
    "checkpoint_tuple",
    "layout_of",
    "message_records",
    "placed",
    "record_kind",
    "stable_id",
    "thread_of",
    "unblob",
]

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


@dataclass
class SaverSettings:
    """What a saver is configured with, and what it has learnt of its server."""

    root: str
    serde: SerializerProtocol
    source_framework: str
    agent: str | None
    transcript: bool
    layout: Layout | None = None
    written_messages: dict[str, set[str]] = field(default_factory=dict)
    """Message ids already written per thread, so each put sends only new ones."""


@dataclass(frozen=True)
class Thread:
    """Where one thread's records live."""

    root: str
    thread_id: str

    @property
    def path(self) -> str:
        return f"{self.root}/{encode_segment(self.thread_id)}"

    def checkpoints(self, ns: str | None = None) -> str:
        base = f"{self.path}/checkpoints"
        return base if ns is None else f"{base}/{encode_segment(ns)}"

    def checkpoint_key(self, ns: str, checkpoint_id: str) -> str:
        return f"{self.checkpoints(ns)}/{encode_key(checkpoint_id)}"

    def writes(self, ns: str, checkpoint_id: str) -> str:
        return f"{self.path}/writes/{encode_segment(ns)}/{encode_segment(checkpoint_id)}"

    @property
    def messages(self) -> str:
        return f"{self.path}/messages"


def layout_of(settings: SaverSettings) -> Plan[Layout]:
    if settings.layout is None:
        settings.layout = Layout.of((yield DESCRIBE))
    return settings.layout


def blob(serde: SerializerProtocol, value: Any) -> list[str]:
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def unblob(serde: SerializerProtocol, blob: Sequence[str]) -> Any:
    return serde.loads_typed((blob[0], base64.b64decode(blob[1])))


def stable_id(owner: str | None, key: str) -> str:
    # A client-chosen id makes a repeated write a no-op on the server (§3.2): what
    # LangGraph asks of a pending write that was already stored.
    return "lg-" + hashlib.sha256(f"{owner or ''}\x00{key}".encode()).hexdigest()[:40]


def placed(
    record: dict[str, Any], kind: str, thread: Thread, settings: SaverSettings, layout: Layout
) -> dict[str, Any]:
    metadata = record.setdefault("metadata", {})
    metadata.setdefault("type", kind)
    metadata["source_framework"] = settings.source_framework
    if settings.agent is not None:
        metadata["source_agent"] = settings.agent
        if "scopes" in layout.capabilities:
            record["owner"] = settings.agent
    tier = layout.tier_for_kind.get(kind)
    if tier is not None:
        record["tier"] = tier
    if "sessions" in layout.capabilities:
        record["session"] = thread.thread_id
    return record


def thread_of(config: RunnableConfig, settings: SaverSettings) -> tuple[Thread, str]:
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise ValueError("the config names no thread: pass {'configurable': {'thread_id': …}}")
    ns = configurable.get("checkpoint_ns") or ""
    return Thread(settings.root, str(configurable["thread_id"])), str(ns)


def message_records(
    checkpoint: Checkpoint, thread: Thread, settings: SaverSettings, layout: Layout
) -> list[dict[str, Any]]:
    messages = checkpoint["channel_values"].get("messages")
    if not isinstance(messages, list):
        return []
    seen = set(settings.written_messages.get(thread.thread_id, ()))
    groups: dict[str, str] = {}
    records = []
    for message in messages:
        if not isinstance(message, BaseMessage) or not message.id or message.id in seen:
            continue
        seen.add(message.id)
        key = f"{thread.messages}/{encode_key(message.id)}"
        meta: dict[str, Any] = {
            "namespace": thread.messages,
            "thread_id": thread.thread_id,
            "message_id": message.id,
        }
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            meta["tool_calls"] = [{"id": c.get("id"), "name": c.get("name")} for c in calls]
            for call in calls:
                if call.get("id"):
                    groups[str(call["id"])] = key
        answered = getattr(message, "tool_call_id", None)
        record: dict[str, Any] = {
            "id": stable_id(settings.agent, key),
            "key": key,
            "content": message.text or _calls_text(calls) or str(message.content),
            "role": _ROLES.get(message.type, message.type),
            "metadata": meta,
        }
        # An assistant turn with tool calls and the results answering it are one unit.
        if calls:
            record["group"] = key
        elif answered and str(answered) in groups:
            record["group"] = groups[str(answered)]
        records.append(placed(record, "episodic", thread, settings, layout))
    return records


def checkpoint_tuple(
    record: Record, writes: Sequence[Record], settings: SaverSettings
) -> CheckpointTuple:
    meta = record.metadata or {}
    thread_id, ns = str(meta["thread_id"]), str(meta.get("checkpoint_ns") or "")
    parent = meta.get("parent_checkpoint_id")
    ordered = sorted(
        (w.metadata or {} for w in writes),
        key=lambda m: (str(m.get("task_path", "")), str(m.get("task_id", "")), int(m["idx"])),
    )
    return CheckpointTuple(
        config={
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": meta["checkpoint_id"],
            }
        },
        checkpoint=unblob(settings.serde, meta["checkpoint"]),
        metadata=unblob(settings.serde, meta["checkpoint_metadata"]),
        parent_config=(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
            if parent
            else None
        ),
        pending_writes=[
            (str(m["task_id"]), str(m["channel"]), unblob(settings.serde, m["blob"]))
            for m in ordered
        ],
    )


def record_kind(record: Record) -> Any:
    return (record.metadata or {}).get("langgraph")


def _calls_text(calls: Sequence[Mapping[str, Any]]) -> str:
    """What an assistant turn that only calls tools said, readably: ``search({"q": "x"})``."""
    return "; ".join(
        f"{call.get('name')}({json.dumps(call.get('args') or {}, ensure_ascii=False)})"
        for call in calls
    )

"""LangGraph checkpoints as A2M records, decided once for the sync and async saver.

Under the saver's namespace ``P`` (``langgraph``, the root label LangGraph keeps out of
stores) a thread ``T`` holds, all in the A2M session ``T``:

- ``P/T/checkpoints/NS/{id}``: one record per checkpoint, the checkpoint and its metadata
  serialized by the saver's serde (opaque, base64 in ``metadata``);
- ``P/T/writes/NS/{id}/{task}~{idx}``: one record per pending write, grouped (§3.4) with
  its checkpoint so a tier never keeps one without the other;
- ``P/T/messages/{message id}``: when ``transcript`` is on, each message of the thread as
  a readable episodic record with its ``role``, for other frameworks' agents.

``T`` and ``NS`` are escaped namespace segments (the root namespace ``""`` is ``--``).
Calls: ``put`` and ``put_writes`` one ``memory/remember``; ``get_tuple`` one
``memory/timeline`` with a ``checkpoint_id``, two without; ``list`` two; ``delete_thread``
one ``memory/forget``."""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from a2m import Record

from ._addressing import encode_key, encode_segment
from ._effects import DESCRIBE, Call, Layout, Plan

__all__ = ["SaverSettings", "plan_delete_thread", "plan_get_tuple", "plan_list", "plan_put"]

log = logging.getLogger("a2m_langchain.langgraph")

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
class _Thread:
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


def _layout(settings: SaverSettings) -> Plan[Layout]:
    if settings.layout is None:
        settings.layout = Layout.of((yield DESCRIBE))
    return settings.layout


def _blob(serde: SerializerProtocol, value: Any) -> list[str]:
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def _unblob(serde: SerializerProtocol, blob: Sequence[str]) -> Any:
    return serde.loads_typed((blob[0], base64.b64decode(blob[1])))


def _stable_id(owner: str | None, key: str) -> str:
    # A client-chosen id makes a repeated write a no-op on the server (§3.2): what
    # LangGraph asks of a pending write that was already stored.
    return "lg-" + hashlib.sha256(f"{owner or ''}\x00{key}".encode()).hexdigest()[:40]


def _placed(
    record: dict[str, Any], kind: str, thread: _Thread, settings: SaverSettings, layout: Layout
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


def _thread_of(config: RunnableConfig, settings: SaverSettings) -> tuple[_Thread, str]:
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise ValueError("the config names no thread: pass {'configurable': {'thread_id': …}}")
    ns = configurable.get("checkpoint_ns") or ""
    return _Thread(settings.root, str(configurable["thread_id"])), str(ns)


# --- writing ------------------------------------------------------------------------------


def plan_put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    settings: SaverSettings,
) -> Plan[RunnableConfig]:
    """One ``memory/remember``: the checkpoint, and the thread's new messages."""
    layout = yield from _layout(settings)
    thread, ns = _thread_of(config, settings)
    checkpoint_id = checkpoint["id"]
    parent = get_checkpoint_id(config)
    stored_metadata = get_checkpoint_metadata(config, metadata)
    key = thread.checkpoint_key(ns, checkpoint_id)
    record = {
        "key": key,
        "content": (
            f"LangGraph checkpoint {checkpoint_id} of thread {thread.thread_id}"
            f" (step {stored_metadata.get('step')}, {stored_metadata.get('source')})"
        ),
        "group": key,
        "metadata": {
            "namespace": thread.checkpoints(ns),
            "langgraph": "checkpoint",
            "thread_id": thread.thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
            "parent_checkpoint_id": parent,
            "run_id": stored_metadata.get("run_id"),
            "checkpoint": _blob(settings.serde, checkpoint),
            "checkpoint_metadata": _blob(settings.serde, stored_metadata),
        },
    }
    records = [_placed(record, "working", thread, settings, layout)]
    if settings.transcript and "messages" in new_versions:
        records += _message_records(checkpoint, thread, settings, layout)
    yield Call("remember", {"records": records})
    return {
        "configurable": {
            "thread_id": thread.thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _message_records(
    checkpoint: Checkpoint, thread: _Thread, settings: SaverSettings, layout: Layout
) -> list[dict[str, Any]]:
    messages = checkpoint["channel_values"].get("messages")
    if not isinstance(messages, list):
        return []
    seen = settings.written_messages.setdefault(thread.thread_id, set())
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
            "id": _stable_id(settings.agent, key),
            "key": key,
            "content": message.text or str(message.content),
            "role": _ROLES.get(message.type, message.type),
            "metadata": meta,
        }
        # An assistant turn with tool calls and the results answering it are one unit.
        if calls:
            record["group"] = key
        elif answered and str(answered) in groups:
            record["group"] = groups[str(answered)]
        records.append(_placed(record, "episodic", thread, settings, layout))
    return records


def plan_put_writes(
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    settings: SaverSettings,
) -> Plan[None]:
    """One ``memory/remember``: a record per write. A regular write already stored stays
    as it was (its id is derived from its address); a special one (error, interrupt…)
    replaces the last."""
    if not writes:
        return
    layout = yield from _layout(settings)
    thread, ns = _thread_of(config, settings)
    checkpoint_id = get_checkpoint_id(config)
    if checkpoint_id is None:
        raise ValueError("put_writes needs the config of a stored checkpoint (a checkpoint_id)")
    space = thread.writes(ns, checkpoint_id)
    records = []
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        key = f"{space}/{encode_key(f'{task_id}~{idx}')}"
        record: dict[str, Any] = {
            "key": key,
            "content": f"LangGraph write to {channel} by task {task_id}",
            "group": thread.checkpoint_key(ns, checkpoint_id),
            "metadata": {
                "namespace": space,
                "langgraph": "write",
                "thread_id": thread.thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
                "task_id": task_id,
                "task_path": task_path,
                "idx": idx,
                "channel": channel,
                "blob": _blob(settings.serde, value),
            },
        }
        if idx >= 0:
            record["id"] = _stable_id(settings.agent, key)
        records.append(_placed(record, "working", thread, settings, layout))
    yield Call("remember", {"records": records})


# --- reading ------------------------------------------------------------------------------


def _tuple(record: Record, writes: Sequence[Record], settings: SaverSettings) -> CheckpointTuple:
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
        checkpoint=_unblob(settings.serde, meta["checkpoint"]),
        metadata=_unblob(settings.serde, meta["checkpoint_metadata"]),
        parent_config=(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
            if parent
            else None
        ),
        pending_writes=[
            (str(m["task_id"]), str(m["channel"]), _unblob(settings.serde, m["blob"]))
            for m in ordered
        ],
    )


def _kind(record: Record) -> Any:
    return (record.metadata or {}).get("langgraph")


def plan_get_tuple(config: RunnableConfig, settings: SaverSettings) -> Plan[CheckpointTuple | None]:
    """The checkpoint ``config`` names, or its thread's latest in its namespace."""
    layout = yield from _layout(settings)
    thread, ns = _thread_of(config, settings)
    checkpoint_id = get_checkpoint_id(config)
    if checkpoint_id is not None:
        key = thread.checkpoint_key(ns, checkpoint_id)
        result = yield Call("timeline", {"where": {"group": key}, "limit": layout.max_recall_limit})
        found = [r for r in result.records if r.key == key and _kind(r) == "checkpoint"]
        if not found:
            return None
        return _tuple(found[0], [r for r in result.records if _kind(r) == "write"], settings)
    result = yield Call(
        "timeline",
        {"key_prefix": thread.checkpoints(ns), "where": {"langgraph": "checkpoint"}, "limit": 1},
    )
    if not result.records:
        return None
    record = result.records[-1]
    checkpoint_id = str((record.metadata or {})["checkpoint_id"])
    writes = yield Call(
        "timeline",
        {"key_prefix": thread.writes(ns, checkpoint_id), "limit": layout.max_recall_limit},
    )
    return _tuple(record, [r for r in writes.records if _kind(r) == "write"], settings)


def plan_list(
    config: RunnableConfig | None,
    filter: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
    settings: SaverSettings,
) -> Plan[list[CheckpointTuple]]:
    """Matching checkpoints, newest first: one timeline for them, one for their writes."""
    layout = yield from _layout(settings)
    params: dict[str, Any] = {"where": {"langgraph": "checkpoint"}}
    wanted_ns: str | None = None
    wanted_id: str | None = None
    if config is not None:
        thread, _ = _thread_of(config, settings)
        configurable = config.get("configurable") or {}
        wanted_ns = configurable.get("checkpoint_ns")
        wanted_id = get_checkpoint_id(config)
        params["key_prefix"] = thread.checkpoints(wanted_ns)
    else:
        params["key_prefix"] = settings.root
    before_id = get_checkpoint_id(before) if before else None
    exact = not filter and before_id is None and wanted_id is None
    params["limit"] = (
        min(limit, layout.max_recall_limit) if limit and exact else layout.max_recall_limit
    )
    result = yield Call("timeline", params)
    chosen: list[tuple[Record, Any]] = []
    for record in sorted(
        result.records, key=lambda r: str((r.metadata or {}).get("checkpoint_id")), reverse=True
    ):
        meta = record.metadata or {}
        checkpoint_id = str(meta.get("checkpoint_id"))
        if wanted_ns is not None and meta.get("checkpoint_ns") != wanted_ns:
            continue
        if wanted_id is not None and checkpoint_id != wanted_id:
            continue
        if before_id is not None and checkpoint_id >= before_id:
            continue
        stored = _unblob(settings.serde, meta["checkpoint_metadata"])
        if filter and not all(stored.get(k) == v for k, v in filter.items()):
            continue
        chosen.append((record, stored))
        if limit is not None and len(chosen) >= limit:
            break
    if not chosen:
        return []
    groups = [record.key for record, _ in chosen if record.key]
    writes: dict[str, list[Record]] = {group: [] for group in groups}
    step = 100  # checkpoints per call: room for several writes each within one page
    for start in range(0, len(groups), step):
        found = yield Call(
            "timeline",
            {
                "where": {"group": groups[start : start + step], "langgraph": "write"},
                "limit": layout.max_recall_limit,
            },
        )
        for record in found.records:
            if record.group in writes:
                writes[record.group].append(record)
    return [_tuple(record, writes.get(record.key or "", []), settings) for record, _ in chosen]


# --- deleting and copying -------------------------------------------------------------------


def plan_delete_thread(thread_id: str, settings: SaverSettings) -> Plan[None]:
    """One ``memory/forget`` of everything the thread holds."""
    yield from _layout(settings)
    thread = _Thread(settings.root, str(thread_id))
    yield Call("forget", {"key_prefix": thread.path})
    settings.written_messages.pop(thread.thread_id, None)


def plan_copy_thread(source: str, target: str, settings: SaverSettings) -> Plan[None]:
    """Every record of ``source`` rewritten into ``target``: one timeline (per
    ``max_recall_limit`` records) and one remember per ``max_records_per_call``."""
    layout = yield from _layout(settings)
    old, new = _Thread(settings.root, str(source)), _Thread(settings.root, str(target))
    result = yield Call(
        "timeline", {"key_prefix": old.path, "limit": layout.max_recall_limit, "embeddings": True}
    )
    copies = []
    for record in result.records:
        if record.key is None:
            continue
        wire = record.model_dump(mode="json", exclude_none=True)
        copy: dict[str, Any] = {
            name: wire[name] for name in ("content", "role", "embedding") if name in wire
        }
        copy["key"] = new.path + record.key[len(old.path) :]
        meta = dict(record.metadata or {})
        meta["thread_id"] = new.thread_id
        if isinstance(meta.get("namespace"), str):
            meta["namespace"] = new.path + meta["namespace"][len(old.path) :]
        copy["metadata"] = meta
        if record.group is not None and record.group.startswith(old.path):
            copy["group"] = new.path + record.group[len(old.path) :]
        if record.id.startswith("lg-"):
            copy["id"] = _stable_id(settings.agent, copy["key"])
        copies.append(_placed(copy, str(meta.get("type", "working")), new, settings, layout))
    step = layout.max_records_per_call
    for start in range(0, len(copies), step):
        yield Call("remember", {"records": copies[start : start + step]})


def plan_delete_for_runs(run_ids: Sequence[str], settings: SaverSettings) -> Plan[None]:
    """The checkpoints the runs made, and their writes: one timeline, one forget."""
    if not run_ids:
        return
    layout = yield from _layout(settings)
    result = yield Call(
        "timeline",
        {
            "key_prefix": settings.root,
            "where": {"langgraph": "checkpoint", "run_id": [str(r) for r in run_ids]},
            "limit": layout.max_recall_limit,
        },
    )
    groups = [record.group for record in result.records if record.group]
    yield from _forget_groups(groups, layout)


def _forget_groups(groups: list[str], layout: Layout) -> Plan[None]:
    step = layout.keys_per_call
    for start in range(0, len(groups), step):
        yield Call("forget", {"where": {"group": groups[start : start + step]}})


def plan_prune(thread_ids: Sequence[str], strategy: str, settings: SaverSettings) -> Plan[None]:
    """``keep_latest``: each namespace's newest checkpoint (and its writes) stays; a
    thread whose checkpoints carry delta channels is left whole, since dropping their
    ancestors would lose those channels' history. ``delete``: every checkpoint goes."""
    if strategy not in ("keep_latest", "delete"):
        raise ValueError(f"strategy must be 'keep_latest' or 'delete', not {strategy!r}")
    layout = yield from _layout(settings)
    for thread_id in thread_ids:
        thread = _Thread(settings.root, str(thread_id))
        if strategy == "delete":
            yield Call("forget", {"key_prefix": thread.checkpoints()})
            yield Call("forget", {"key_prefix": f"{thread.path}/writes"})
            continue
        result = yield Call(
            "timeline",
            {"key_prefix": thread.checkpoints(), "limit": layout.max_recall_limit},
        )
        newest: dict[str, str] = {}
        delta = False
        for record in result.records:
            meta = record.metadata or {}
            ns, checkpoint_id = str(meta.get("checkpoint_ns") or ""), str(meta["checkpoint_id"])
            newest[ns] = max(newest.get(ns, checkpoint_id), checkpoint_id)
            stored = _unblob(settings.serde, meta["checkpoint_metadata"])
            delta = delta or "counters_since_delta_snapshot" in stored
        if delta:
            log.warning("thread %r uses delta channels; prune leaves it whole", thread_id)
            continue
        doomed = [
            record.group
            for record in result.records
            if record.group
            and str((record.metadata or {})["checkpoint_id"])
            != newest[str((record.metadata or {}).get("checkpoint_ns") or "")]
        ]
        yield from _forget_groups(doomed, layout)

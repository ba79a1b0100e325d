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
Calls, on a server taking ``max_records_per_call`` records and returning
``max_recall_limit`` a call: ``put`` one ``memory/remember`` (with ``transcript``, one
more per ``max_records_per_call`` new messages, written before the checkpoint);
``put_writes`` one per ``max_records_per_call`` writes, all or nothing; ``get_tuple`` one
``memory/timeline`` with a ``checkpoint_id``, two without; ``list`` two; ``delete_thread``
one ``memory/forget``. Each timeline reading records that must all be seen (a
checkpoint's writes, a thread to copy or prune) is one per ``max_recall_limit`` records
where the server pages by cursor, one without a ``limit`` where it declares no
``max_recall_limit``, else one carrying the newest ``max_recall_limit`` with an
:class:`~a2m.IncompleteListing` warning when that cap is reached."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

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

from a2m import Record

from ._addressing import encode_key
from ._effects import Call, Layout, Plan, remember_all, scan
from ._saver_records import (
    SaverSettings,
    Thread,
    blob,
    checkpoint_tuple,
    layout_of,
    message_records,
    placed,
    record_kind,
    stable_id,
    thread_of,
    unblob,
)

__all__ = [
    "SaverSettings",
    "plan_copy_thread",
    "plan_delete_for_runs",
    "plan_delete_thread",
    "plan_get_tuple",
    "plan_list",
    "plan_prune",
    "plan_put",
    "plan_put_writes",
]

log = logging.getLogger("a2m_langchain.langgraph")

# --- writing ------------------------------------------------------------------------------


def plan_put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    settings: SaverSettings,
) -> Plan[RunnableConfig]:
    """One ``memory/remember`` for the checkpoint; with ``transcript``, the thread's new
    messages before it, a ``memory/remember`` per ``max_records_per_call``: a put that
    fails part-way leaves no checkpoint, and the messages (stable ids) are sent again."""
    layout = yield from layout_of(settings)
    thread, ns = thread_of(config, settings)
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
            "checkpoint": blob(settings.serde, checkpoint),
            "checkpoint_metadata": blob(settings.serde, stored_metadata),
        },
    }
    messages: list[dict[str, Any]] = []
    if settings.transcript and "messages" in new_versions:
        messages = message_records(checkpoint, thread, settings, layout)
    checkpoint_record = placed(record, "working", thread, settings, layout)
    # One call where they fit; else the messages first, so no checkpoint is stored
    # without them, all or nothing (a call too large for the server is split too).
    yield from remember_all([*messages, checkpoint_record], layout)
    # Noted only once written, so a failed put sends its messages again next time.
    written = [r["metadata"]["message_id"] for r in messages]
    settings.written_messages.setdefault(thread.thread_id, set()).update(written)
    return {
        "configurable": {
            "thread_id": thread.thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def plan_put_writes(
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    settings: SaverSettings,
) -> Plan[None]:
    """One ``memory/remember`` per ``max_records_per_call`` writes: a record per write. A
    regular write already stored stays as it was (its id is derived from its address); a
    special one (error, interrupt…) replaces the last. All or nothing: if a later call
    fails, what this call did is undone — the writes it added removed, a special write it
    replaced put back — so no checkpoint is left with part of a task's writes (which
    LangGraph would read as the task done); before several calls, one ``memory/timeline``
    per 500 ids and per 500 keys reads what they hold (:func:`remember_all`)."""
    if not writes:
        return
    layout = yield from layout_of(settings)
    thread, ns = thread_of(config, settings)
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
                "blob": blob(settings.serde, value),
            },
        }
        if idx >= 0:
            record["id"] = stable_id(settings.agent, key)
        records.append(placed(record, "working", thread, settings, layout))
    yield from remember_all(records, layout)


# --- reading ------------------------------------------------------------------------------


def plan_get_tuple(config: RunnableConfig, settings: SaverSettings) -> Plan[CheckpointTuple | None]:
    """The checkpoint ``config`` names, or its thread's latest in its namespace."""
    layout = yield from layout_of(settings)
    thread, ns = thread_of(config, settings)
    checkpoint_id = get_checkpoint_id(config)
    if checkpoint_id is not None:
        key = thread.checkpoint_key(ns, checkpoint_id)
        grouped = yield from scan(None, layout, where={"group": key})
        found = [r for r in grouped if r.key == key and record_kind(r) == "checkpoint"]
        if not found and not layout.cursor and len(grouped) >= layout.max_recall_limit:
            # its writes filled the one call a server without cursors allows: ask for it alone
            where = {"langgraph": "checkpoint", "checkpoint_id": checkpoint_id}
            alone = yield Call(
                "timeline", {"key_prefix": thread.checkpoints(ns), "where": where, "limit": 1}
            )
            found = [r for r in alone.records if r.key == key]
        if not found:
            return None
        return checkpoint_tuple(
            found[0], [r for r in grouped if record_kind(r) == "write"], settings
        )
    result = yield Call(
        "timeline",
        {"key_prefix": thread.checkpoints(ns), "where": {"langgraph": "checkpoint"}, "limit": 1},
    )
    if not result.records:
        return None
    record = result.records[-1]
    checkpoint_id = str((record.metadata or {})["checkpoint_id"])
    writes = yield from scan(thread.writes(ns, checkpoint_id), layout)
    return checkpoint_tuple(record, [r for r in writes if record_kind(r) == "write"], settings)


def plan_list(
    config: RunnableConfig | None,
    filter: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
    settings: SaverSettings,
) -> Plan[list[CheckpointTuple]]:
    """Matching checkpoints, newest first: one timeline for them, one for their writes."""
    layout = yield from layout_of(settings)
    if limit is not None and limit <= 0:
        return []
    params: dict[str, Any] = {"where": {"langgraph": "checkpoint"}}
    wanted_ns: str | None = None
    wanted_id: str | None = None
    if config is not None:
        thread, _ = thread_of(config, settings)
        configurable = config.get("configurable") or {}
        wanted_ns = configurable.get("checkpoint_ns")
        wanted_id = get_checkpoint_id(config)
        params["key_prefix"] = thread.checkpoints(wanted_ns)
    else:
        params["key_prefix"] = settings.root
    before_id = get_checkpoint_id(before) if before else None
    exact = not filter and before_id is None and wanted_id is None
    if exact and limit is not None and limit <= layout.max_recall_limit:
        records = list((yield Call("timeline", {**params, "limit": limit})).records)
    else:  # every checkpoint of the listing, page by page where the server pages
        prefix = params.pop("key_prefix")
        records = yield from scan(prefix, layout, where=params["where"])
    chosen: list[tuple[Record, Any]] = []
    for record in sorted(
        records, key=lambda r: str((r.metadata or {}).get("checkpoint_id")), reverse=True
    ):
        meta = record.metadata or {}
        checkpoint_id = str(meta.get("checkpoint_id"))
        if wanted_ns is not None and meta.get("checkpoint_ns") != wanted_ns:
            continue
        if wanted_id is not None and checkpoint_id != wanted_id:
            continue
        if before_id is not None and checkpoint_id >= before_id:
            continue
        stored = unblob(settings.serde, meta["checkpoint_metadata"])
        if filter and not all(stored.get(k) == v for k, v in filter.items()):
            continue
        chosen.append((record, stored))
        if limit is not None and len(chosen) >= limit:
            break
    if not chosen:
        return []
    groups = [record.key for record, _ in chosen if record.key]
    writes: dict[str, list[Record]] = {group: [] for group in groups}
    step = min(100, layout.keys_per_call)  # checkpoints per where
    for start in range(0, len(groups), step):
        found = yield from scan(
            None, layout, where={"group": groups[start : start + step], "langgraph": "write"}
        )
        for record in found:
            if record.group in writes:
                writes[record.group].append(record)
    return [
        checkpoint_tuple(record, writes.get(record.key or "", []), settings) for record, _ in chosen
    ]


# --- deleting and copying -------------------------------------------------------------------


def plan_delete_thread(thread_id: str, settings: SaverSettings) -> Plan[None]:
    """One ``memory/forget`` of everything the thread holds."""
    yield from layout_of(settings)
    thread = Thread(settings.root, str(thread_id))
    yield Call("forget", {"key_prefix": thread.path})
    settings.written_messages.pop(thread.thread_id, None)


def plan_copy_thread(source: str, target: str, settings: SaverSettings) -> Plan[None]:
    """Every record of ``source`` rewritten into ``target``: one timeline (per
    ``max_recall_limit`` records) and one remember per ``max_records_per_call``, all or
    nothing (what ``target`` held at those keys is read first where that takes several
    calls, and put back if a later one is refused)."""
    layout = yield from layout_of(settings)
    old, new = Thread(settings.root, str(source)), Thread(settings.root, str(target))
    vectors = {"embeddings": True} if "embeddings" in layout.capabilities else {}
    copies = []
    for record in (yield from scan(old.path, layout, extra=vectors)):
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
            copy["id"] = stable_id(settings.agent, copy["key"])
        copies.append(placed(copy, str(meta.get("type", "working")), new, settings, layout))
    yield from remember_all(copies, layout)


def plan_delete_for_runs(run_ids: Sequence[str], settings: SaverSettings) -> Plan[None]:
    """The checkpoints the runs made, and their writes: one timeline (per
    ``max_recall_limit`` checkpoints), one forget (per ``max_recall_limit`` of them)."""
    if not run_ids:
        return
    layout = yield from layout_of(settings)
    where = {"langgraph": "checkpoint", "run_id": [str(r) for r in run_ids]}
    found = yield from scan(settings.root, layout, where=where)
    groups = [record.group for record in found if record.group]
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
    layout = yield from layout_of(settings)
    for thread_id in thread_ids:
        thread = Thread(settings.root, str(thread_id))
        if strategy == "delete":
            yield Call("forget", {"key_prefix": thread.checkpoints()})
            yield Call("forget", {"key_prefix": f"{thread.path}/writes"})
            continue
        checkpoints = yield from scan(thread.checkpoints(), layout)
        newest: dict[str, str] = {}
        delta = False
        for record in checkpoints:
            meta = record.metadata or {}
            ns, checkpoint_id = str(meta.get("checkpoint_ns") or ""), str(meta["checkpoint_id"])
            newest[ns] = max(newest.get(ns, checkpoint_id), checkpoint_id)
            stored = unblob(settings.serde, meta["checkpoint_metadata"])
            delta = delta or "counters_since_delta_snapshot" in stored
        if delta:
            log.warning("thread %r uses delta channels; prune leaves it whole", thread_id)
            continue
        doomed = [
            record.group
            for record in checkpoints
            if record.group
            and str((record.metadata or {})["checkpoint_id"])
            != newest[str((record.metadata or {}).get("checkpoint_ns") or "")]
        ]
        yield from _forget_groups(doomed, layout)

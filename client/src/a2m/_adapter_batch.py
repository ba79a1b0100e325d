"""The batched adapter calls — ``write_many``, ``read_many``, ``delete_many`` — as flows
(:mod:`._adapter_steps`) both adapters run: a batch is validated before anything is sent,
many keys or ids are read with one ``memory/timeline`` (``where`` on ``key`` or ``id``),
and each key's record is picked as ``memory/fetch`` would pick it. A write of several
calls is all or nothing here and in :func:`remember_whole`, which framework adapters
writing records of their own use: a failed later call has the earlier ones undone."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from a2m_types import Record, RecordInput
from a2m_types.rest import Entry, EntryWrite

from ._adapter_core import (
    Layout,
    Scope,
    as_written,
    checked_namespace,
    entry_at,
    forget_by_key,
)
from ._adapter_owners import choose
from ._adapter_steps import Flow, call
from .errors import A2MError, CapabilityNotSupported, InvalidParams, PayloadTooLargeError

__all__ = [
    "WRITE_FIELDS",
    "chunks",
    "delete_many",
    "entry_writes",
    "read_many",
    "remember_whole",
    "write_many",
]

log = logging.getLogger("a2m.adapter")

WRITE_FIELDS = frozenset({"key", "type", "value", "embedding", "meta"})
"""What one entry of a batch may carry: the four-method ``write``'s arguments."""


def _refuse(message: str) -> InvalidParams:
    return InvalidParams(message + " (nothing was sent)")


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _fields(position: int, entry: Mapping[str, Any] | EntryWrite) -> dict[str, Any]:
    if isinstance(entry, EntryWrite):
        meta = entry.meta.model_dump(exclude_none=True) if entry.meta is not None else None
        return {
            "key": entry.key,
            "type": entry.type,
            "value": entry.value,
            "embedding": entry.embedding,
            "meta": meta,
        }
    if not isinstance(entry, Mapping):
        raise _refuse(
            f"entries[{position}] must be a mapping or an EntryWrite, not {type(entry).__name__}"
        )
    unknown = sorted(str(name) for name in set(entry) - WRITE_FIELDS)
    if unknown:
        raise _refuse(
            f"entries[{position}] has unknown field(s) {', '.join(unknown)}; an entry carries "
            f"{', '.join(sorted(WRITE_FIELDS))}"
        )
    missing = [name for name in ("key", "type", "value") if name not in entry]
    if missing:
        raise _refuse(f"entries[{position}] needs {', '.join(missing)}")
    return dict(entry)


def entry_writes(scope: Scope, entries: Iterable[Mapping[str, Any] | EntryWrite]) -> list[Any]:
    """Every entry of a batch validated, provenance filled in, in order; the first invalid
    one raises :class:`InvalidParams` naming its position, before anything is sent."""
    if isinstance(entries, (str, bytes, Mapping)):
        raise _refuse("write_many takes a sequence of entries, not a single entry")
    writes = []
    for position, entry in enumerate(entries):
        fields = _fields(position, entry)
        if not isinstance(fields["key"], str) or not isinstance(fields["type"], str):
            raise _refuse(f"entries[{position}]: key and type must be strings")
        meta = fields.get("meta")
        if meta is not None and not isinstance(meta, Mapping):
            raise _refuse(f"entries[{position}]: meta must be a mapping")
        try:
            writes.append(
                scope.entry_write(
                    fields["key"], fields["type"], fields["value"], fields.get("embedding"), meta
                )
            )
        except InvalidParams as exc:  # its own class kept (UnstorableValue, say)
            raise type(exc)(f"entries[{position}]: {exc.message}", data=exc.data) from None
        except (TypeError, ValueError) as exc:
            raise _refuse(f"entries[{position}]: {exc}") from None
    return writes


def records_for_writes(scope: Scope, layout: Layout, writes: Sequence[Any]) -> list[RecordInput]:
    """The A2M records of a batch, one per distinct key: a key written twice keeps its last
    write, as two writes one after the other would."""
    last: dict[str, Any] = {}
    for write in writes:
        last.pop(write.key, None)  # re-insert: the record goes where its last write is
        last[write.key] = write
    return [scope.record_for_write(layout, write) for write in last.values()]


def write_many(scope: Scope, layout: Layout, writes: Sequence[Any]) -> Flow[list[Entry]]:
    """Write checked ``writes`` (from :func:`entry_writes`): check their keys, remember
    them a chunk at a time, read them back."""
    if not writes:
        return []
    records = records_for_writes(scope, layout, writes)
    # Several calls are all or nothing only if what they replace can be put back whole.
    several = len(records) > layout.max_records_per_call
    held = yield from _held(scope, layout, [r.key for r in records if r.key], vectors=several)
    for write in writes:
        conflict = scope.conflict(held.get(scope.address(write.key)[1]), write.key)
        if conflict is not None:
            raise conflict
    ids: list[str] = []
    for part in chunks(records, layout.max_records_per_call):
        try:
            ids += (yield call("remember", list(part))).ids
        except A2MError:
            if ids:
                written = [record.to_wire() for record in records[: len(ids)]]
                per_call, kept = layout.max_records_per_call, layout.capabilities
                before = _Before(set(), {record.id: record for record in held.values()})
                yield from _undo(written, ids, before, per_call, kept)
            raise
    stored = yield from _by_ids(scope, layout, ids, records)
    scope.caller.wrote(stored)
    return entries_in_order(stored, writes, scope.namespace, layout)


def remember_whole(
    records: Sequence[Mapping[str, Any]],
    *,
    per_call: int,
    per_read: int,
    capabilities: Collection[str] = (),
    fresh: bool = False,
) -> Flow[list[str]]:
    """Write ``records`` in one ``memory/remember`` per ``per_call``, all or nothing;
    returns the ids the server gave. Run it with :func:`drive` or :func:`drive_async`.

    Where it takes several calls and a later one fails, what the earlier ones did is
    undone before the failure is raised: a record they created is removed (one
    ``memory/forget``), a record they replaced at its key is written back as it was (one
    ``memory/remember`` per ``per_call``), and a record whose id was already stored, which
    its write left as it was (§3.2), stays. To know which is which, a write of several
    calls first reads what its ids and keys hold (one ``memory/timeline`` per ``per_read``
    of each, with vectors where ``capabilities`` has ``embeddings``) — unless ``fresh``
    says none of them is stored (new ids, new keys), when there is nothing to read. On
    a binding that cannot select by id or key, each call stays atomic on its own.

    A call whose request is larger than the server takes (HTTP 413, which the server
    answers before writing anything) is sent again as two halves, down to one record a
    call, within the same all or nothing: a batch of large records still goes."""
    size = max(per_call, 1)
    batches = [list(records[start : start + size]) for start in range(0, len(records), size)]
    before: _Before | None = _Before(set(), {})
    known = fresh  # whether ``before`` says what the records' ids and keys hold
    if len(batches) > 1 and not fresh:
        before = yield from _stored_before(records, max(per_read, 1), capabilities)
        known = True
    written: list[str] = []
    while batches:
        batch = batches.pop(0)
        try:
            written += (yield call("remember", batch)).ids
        except PayloadTooLargeError:
            if len(batch) == 1:
                yield from _undone(records, written, before, per_call, capabilities)
                raise
            if not known:  # nothing written yet: one call was all it was to take
                before = yield from _stored_before(records, max(per_read, 1), capabilities)
                known = True
            middle = len(batch) // 2
            batches[:0] = [batch[:middle], batch[middle:]]
        except Exception:
            yield from _undone(records, written, before, per_call, capabilities)
            raise
    return written


def _undone(
    records: Sequence[Mapping[str, Any]],
    written: list[str],
    before: _Before | None,
    per_call: int,
    capabilities: Collection[str],
) -> Flow[None]:
    """Undo what the calls so far wrote (the first ``len(written)`` of ``records``)."""
    if written and before is not None:
        yield from _undo(records[: len(written)], written, before, per_call, capabilities)


@dataclass(frozen=True)
class _Before:
    """What a write's ids and keys held before it: the client ids already stored, and
    every record at its keys (of any owner), by id."""

    ids: set[str]
    held: dict[str, Record]


def _stored_before(
    records: Sequence[Mapping[str, Any]], per_read: int, capabilities: Collection[str]
) -> Flow[_Before | None]:
    ids = [str(r["id"]) for r in records if r.get("id") is not None]
    keys = list(dict.fromkeys(str(r["key"]) for r in records if r.get("key") is not None))
    vectors = {"embeddings": True} if "embeddings" in capabilities else {}
    before = _Before(set(), {})
    try:
        for start in range(0, len(ids), per_read):
            part = ids[start : start + per_read]
            result = yield call("timeline", where={"id": part}, limit=len(part))
            before.ids.update(record.id for record in result.records)
        for start in range(0, len(keys), per_read):
            found = yield from _at_keys(keys[start : start + per_read], per_read, vectors)
            before.held.update((record.id, record) for record in found)
    except CapabilityNotSupported:
        return None
    return before


def _at_keys(keys: list[str], per_read: int, vectors: Mapping[str, Any]) -> Flow[list[Record]]:
    """Every record at ``keys``: owners may share a key, so a full page is asked again in
    halves, down to one key a call (where more owners than ``per_read`` share one key,
    the page holds ``per_read`` of them)."""
    result = yield call("timeline", where={"key": keys}, limit=per_read, **vectors)
    if len(result.records) < per_read or len(keys) == 1:
        return list(result.records)
    middle = len(keys) // 2
    first = yield from _at_keys(keys[:middle], per_read, vectors)
    second = yield from _at_keys(keys[middle:], per_read, vectors)
    return first + second


def _undo(
    written: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    before: _Before,
    per_call: int,
    capabilities: Collection[str],
) -> Flow[None]:
    """Put back what ``written`` replaced, then remove what it created; a failure here is
    logged, and the write's own failure is the one raised. The id the server gave each
    record says what its write did: an id already stored that the record named was left
    as it was (§3.2); the id of a record held at the record's key was replaced (§3.6);
    any other is new."""
    again: list[dict[str, Any]] = []
    created: list[str] = []
    for record, id in zip(written, ids, strict=False):
        if record.get("id") == id and id in before.ids:
            continue
        held = before.held.get(id)
        if held is not None:
            again.append(as_written(held, capabilities))
        else:
            created.append(id)
    size = max(per_call, 1)
    try:
        for start in range(0, len(again), size):
            yield call("remember", again[start : start + size])
        if created:
            yield call("forget", ids=created)
    except A2MError:
        log.exception("could not take back %d records of a failed write", len(written))


def addresses(
    scope: Scope, keys: Iterable[str], namespace: str | None
) -> tuple[str, dict[str, str]]:
    """(namespace, {A2M key: key}) for ``keys``, each checked before anything is sent."""
    if isinstance(keys, (str, bytes)):
        raise _refuse("keys must be a sequence of keys, not a single string")
    where = scope.namespace if namespace is None else checked_namespace(namespace)
    return where, {scope.address(key, where)[1]: key for key in keys}


def read_many(
    scope: Scope, layout: Layout, where: str, addressed: Mapping[str, str]
) -> Flow[dict[str, Entry]]:
    """The entries at the ``addressed`` A2M keys of namespace ``where``, by key."""
    if not addressed:
        return {}
    held = yield from _held(scope, layout, list(addressed), vectors=True)
    found = {}
    for address, key in addressed.items():
        entry = entry_at(held.get(address), where, layout)
        if entry is not None:
            found[key] = entry
    return found


def delete_many(scope: Scope, layout: Layout, addressed: Mapping[str, str]) -> Flow[int]:
    """Delete the entries of this namespace at the ``addressed`` A2M keys; how many went."""
    found = yield from read_many(scope, layout, scope.namespace, addressed)
    return (yield from forget(list(found.values())))


def forget(entries: Sequence[Entry]) -> Flow[int]:
    """Delete ``entries``: one ``memory/forget`` by id, or one by key per entry on a
    binding that cannot name records by id."""
    if not entries:
        return 0
    forgotten: int = 0
    try:
        forgotten = (yield call("forget", ids=[entry.id for entry in entries])).forgotten
    except CapabilityNotSupported:
        for entry in entries:
            forgotten += (yield call("forget", **forget_by_key(entry))).forgotten
    return forgotten


def _key_chunk(layout: Layout) -> int:
    # Without owners a key holds one record, so L keys never fill a page of L. With owners
    # one key may hold several: L - 1 keys fill a page of L only when some key does.
    if "scopes" in layout.capabilities:
        return max(1, layout.max_recall_limit - 1)
    return layout.max_recall_limit


def _held(
    scope: Scope, layout: Layout, a2m_keys: list[str], *, vectors: bool
) -> Flow[dict[str, Record]]:
    """Each A2M key's record, as ``memory/fetch`` would pick it: the caller's own where
    several owners hold a key (:mod:`._adapter_owners`)."""
    extra = layout.vectors() if vectors else {}
    records: list[Record] = []
    try:
        for part in chunks(a2m_keys, _key_chunk(layout)):
            records += yield from _key_read(list(part), layout, extra)
    except CapabilityNotSupported:  # a binding that cannot filter by key: one fetch each
        records = []
        for key in a2m_keys:
            record = (yield call("fetch", key, **extra)).record
            if record is not None:
                records.append(record)
    return (yield from choose(scope.caller, records, extra))


def _key_read(keys: list[str], layout: Layout, extra: Mapping[str, Any]) -> Flow[list[Record]]:
    limit = layout.max_recall_limit
    records: list[Record] = (
        yield call("timeline", where={"key": keys}, limit=limit, **extra)
    ).records
    if len(records) <= len(keys) or len(records) < limit or len(keys) == 1:
        return records
    # Owners share keys, and a full answer may have left older records out: ask in halves.
    middle = len(keys) // 2
    first = yield from _key_read(keys[:middle], layout, extra)
    second = yield from _key_read(keys[middle:], layout, extra)
    return first + second


def _by_ids(
    scope: Scope, layout: Layout, ids: list[str], records: Sequence[RecordInput]
) -> Flow[list[Record]]:
    """The records ``ids``, with vectors where the server keeps them."""
    found: list[Record] = []
    try:
        for part in chunks(ids, layout.max_recall_limit):
            params = {"where": {"id": list(part)}, "limit": len(part), **layout.vectors()}
            found += (yield call("timeline", **params)).records
    except CapabilityNotSupported:  # a binding that cannot filter by id: by key instead
        held = yield from _held(scope, layout, [r.key for r in records if r.key], vectors=True)
        found = list(held.values())
    return found


def entries_in_order(
    records: Iterable[Record], writes: Sequence[Any], namespace: str, layout: Layout
) -> list[Entry]:
    """The stored entry of each write, in the batch's order; a key deleted meanwhile by
    someone else raises :class:`LookupError`."""
    stored: dict[str, Entry] = {}
    for record in records:
        entry = entry_at(record, namespace, layout)
        if entry is not None:
            stored[entry.key] = entry
    missing = [write.key for write in writes if write.key not in stored]
    if missing:
        raise LookupError(f"entries {missing[:5]!r} were deleted while they were being written")
    return [stored[write.key] for write in writes]

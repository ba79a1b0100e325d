"""The memory host with no I/O: memory sessions, quotas, and one flow per request type
(:mod:`a2m.adapter_support`'s step driver), shared by the sync and async plugins.

A2M calls per message: ``memory/init`` one ``memory/describe`` on a host's first message;
``memory/store`` one ``memory/remember`` per ``max_records_per_call`` entries (one per
entry when the server refuses a batch, to find which), plus a ``memory/timeline`` of the
written keys when a quota is set, and the namespace's listing once when a quota first
needs its usage; ``memory/retrieve`` one ``memory/recall`` (query) or ``memory/timeline``
(keys), or ``⌈n/L⌉`` timelines for a listing by tags or tier (one with no limit on a
server paging no timeline and declaring no ``max_recall_limit``; refused where the server
can neither page nor give it whole); ``memory/forget`` the same lookup then one
``memory/forget``; ending a memory session one ``memory/forget`` and one
``memory/session/close``. No call asks for more than the server's ``max_recall_limit``."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from a2m import A2MError, A2MTransportError, QuotaExceeded, Record
from a2m.adapter_support import Flow, call
from a2m_types.rest import InvalidNamespace, validate_namespace

from . import _messages as m
from ._entries import (
    MEMORY_FIELD,
    Entry,
    EntryRefused,
    entry_of,
    json_size,
    parse_entry,
    record_of,
    score_of,
    tier_of,
)
from ._layout import Layout
from ._messages import ErrorCode, error_message, new_message
from ._requests import REQUIRED, HostLimits, Reader, Refused, check_envelope, request_id

__all__ = ["HostCore", "HostLimits", "MemorySession", "Refused", "request_id"]


@dataclass
class MemorySession:
    """One ``memory_id``: the namespace it writes in and the agent it speaks for."""

    memory_id: str
    namespace: str
    agent: str | None
    scope: dict[str, Any]
    open: bool = True


@dataclass
class _Usage:
    entries: int = 0
    bytes: int = 0


def _backend_error(exc: A2MError) -> Refused:
    # The A2M error's own text only: it never carries the entry's content or vector.
    name = type(exc).__name__
    return Refused(ErrorCode.BACKEND_ERROR, f"the memory store failed the call ({name})")


@dataclass
class HostCore:
    """Memory sessions and the flows answering each request; no I/O of its own."""

    limits: HostLimits = field(default_factory=HostLimits)
    semantic_writers: Collection[str] = ()
    """Agents the host lets write and forget in the shared ``semantic`` tier (``"*"``:
    every agent)."""
    principal: str | None = None
    """The authenticated agent over a network transport (spec §6): ``scope.agent`` must
    be it or absent. ``None`` on a local transport, where ``scope.agent`` is taken as
    given."""
    sessions: dict[str, MemorySession] = field(default_factory=dict)
    _layout: Layout | None = None
    _usage: dict[str, _Usage] = field(default_factory=dict)
    _pending_old: dict[tuple[str, str], int] = field(default_factory=dict)
    """Sizes of the entries a store is about to replace, by (namespace, entry key)."""

    # --- dispatch -----------------------------------------------------------------------

    def handle(self, message: Any) -> Flow[dict[str, Any]]:
        """The response to ``message``: its ``…/resp``, or a ``memory/error``; never
        raises for anything the message holds."""
        req_id = request_id(message)
        try:
            kind = check_envelope(message)
            flow = self._flows().get(kind)
            if flow is None:
                raise Refused(ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind[:80]!r}")
            response: dict[str, Any] = yield from flow(Reader(message), req_id)
            return response
        except Refused as refused:
            return error_message(req_id, refused.code, refused.message)
        except A2MError as exc:
            failed = _backend_error(exc)
            retryable = isinstance(exc, A2MTransportError)
            return error_message(req_id, failed.code, failed.message, retryable=retryable)

    def _flows(self) -> dict[str, Any]:
        return {
            m.INIT_REQ: self._init,
            m.STORE_REQ: self._store,
            m.RETRIEVE_REQ: self._retrieve,
            m.FORGET_REQ: self._forget,
        }

    def known(self) -> Flow[Layout]:
        if self._layout is None:
            self._layout = Layout.of((yield call("describe")))
        return self._layout

    def _session(self, read: Reader) -> MemorySession:
        memory_id = read.text("memory_id", REQUIRED)
        session = self.sessions.get(memory_id)
        if session is None or not session.open:
            state = "has ended" if session is not None else "is not one this host issued"
            raise Refused(ErrorCode.UNKNOWN_MEMORY, f"memory_id {memory_id[:80]!r} {state}")
        return session

    def may_write_semantic(self, agent: str | None) -> bool:
        return "*" in self.semantic_writers or (
            agent is not None and agent in self.semantic_writers
        )

    def _owner(self, layout: Layout, session: MemorySession) -> dict[str, Any]:
        return {"owner": session.agent} if layout.scopes and session.agent is not None else {}

    # --- memory/init ----------------------------------------------------------------------

    def _init(self, read: Reader, req_id: str) -> Flow[dict[str, Any]]:
        namespace = read.text("namespace", REQUIRED)
        try:
            validate_namespace(namespace)
        except InvalidNamespace as exc:
            raise Refused(ErrorCode.INVALID_MESSAGE, f"'namespace': {exc}") from None
        scope = read.object("scope")
        read.object("metadata")
        agent = scope.get("agent")
        if agent is not None and (not isinstance(agent, str) or not agent):
            raise Refused(ErrorCode.INVALID_MESSAGE, "'scope.agent' must be a non-empty string")
        if self.principal is not None:
            if agent is not None and agent != self.principal:
                raise Refused(
                    ErrorCode.PERMISSION_DENIED,
                    "'scope.agent' must be the authenticated agent of this connection",
                )
            agent = self.principal
        layout = yield from self.known()
        if "key" not in layout.fields:
            raise Refused(
                ErrorCode.BACKEND_ERROR,
                "the memory store does not declare the A2M capability 'keys', and every "
                "entry lives at its key: use a store that keeps keys",
            )
        memory_id = str(uuid.uuid4())
        self.sessions[memory_id] = MemorySession(memory_id, namespace, agent, scope)
        return new_message(m.INIT_RESP, req_id=req_id, memory_id=memory_id, namespace=namespace)

    # --- memory/store ---------------------------------------------------------------------

    def _store(self, read: Reader, req_id: str) -> Flow[dict[str, Any]]:
        session = self._session(read)
        raw = read.raw("entries", [])
        if not isinstance(raw, list):
            raise Refused(ErrorCode.INVALID_MESSAGE, "'entries' must be a list")
        if len(raw) > self.limits.max_entries_per_store:
            raise Refused(
                ErrorCode.INVALID_MESSAGE,
                f"at most {self.limits.max_entries_per_store} entries per store",
            )
        layout = yield from self.known()
        errors: list[str] = []
        wanted: dict[str, tuple[int, Entry]] = {}  # a key given twice is written once, last
        for index, item in enumerate(raw):
            try:
                entry = parse_entry(
                    item,
                    max_depth=self.limits.max_depth,
                    max_entry_bytes=self.limits.max_entry_bytes,
                )
                self._check_entry(layout, session, entry)
            except EntryRefused as exc:
                errors.append(f"entries[{index}]: {ErrorCode.INVALID_MESSAGE}: {exc}")
                continue
            except Refused as refused:
                errors.append(f"entries[{index}]: {refused.code}: {refused.message}")
                continue
            wanted.pop(entry.entry_key, None)
            wanted[entry.entry_key] = (index, entry)
        accepted = list(wanted.values())
        quota = self.limits.max_entries is not None or self.limits.max_bytes is not None
        held: list[Record] = []
        if accepted and (quota or any(entry.tier == "working" for _, entry in accepted)):
            # What the keys hold now, read once for both checks below.
            addresses = [f"{session.namespace}/{entry.entry_key}" for _, entry in accepted]
            held = yield from self._by_keys(layout, session, addresses)
        accepted = self._durable_kept(layout, session, accepted, held, errors)
        if quota:
            accepted = yield from self._within_quota(layout, session, accepted, held, errors)
        written = yield from self._write(layout, session, accepted, errors)
        errors.sort(key=lambda text: int(text[len("entries[") : text.index("]")]))
        stored = [entry.key for _, entry in written]
        return new_message(m.STORE_RESP, req_id=req_id, stored=stored, errors=errors)

    def _durable_kept(
        self,
        layout: Layout,
        session: MemorySession,
        accepted: list[tuple[int, Entry]],
        held: list[Record],
        errors: list[str],
    ) -> list[tuple[int, Entry]]:
        """The entries that replace nothing durable with a ``working`` one (``held``: the
        records at their keys). A key names one entry of an agent whatever its tier, so a
        working entry at a key holding an episodic or semantic entry would replace it, and
        the session's end would delete it: refused, naming the tier held."""
        durable = {
            record.key: tier
            for record in held
            if self.visible(layout, session, record)
            and (tier := tier_of(record, layout.kind_of_tier)) != "working"
        }
        # Another open memory session of the agent keeps its own scratch entry there.
        elsewhere = {
            record.key
            for record in held
            if tier_of(record, layout.kind_of_tier) == "working"
            and self._open_elsewhere(session, record)
        }
        kept = []
        for index, entry in accepted:
            address = f"{session.namespace}/{entry.entry_key}"
            kept_tier = durable.get(address)
            if entry.tier == "working" and kept_tier is not None:
                errors.append(
                    f"entries[{index}]: {ErrorCode.INVALID_MESSAGE}: the key holds the "
                    f"agent's {kept_tier} entry, which a working entry would replace (and the "
                    "session's end delete); forget it first, or store under another key"
                )
                continue
            if entry.tier == "working" and address in elsewhere:
                errors.append(
                    f"entries[{index}]: {ErrorCode.INVALID_MESSAGE}: the key holds the working "
                    "entry of another open memory session of this agent, which this one would "
                    "replace; store under another key"
                )
                continue
            kept.append((index, entry))
        return kept

    def _open_elsewhere(self, session: MemorySession, record: Record) -> bool:
        """Whether ``record`` is the scratch entry of another open memory session of the
        agent of ``session``."""
        memory_id = (record.metadata or {}).get(MEMORY_FIELD)
        other = self.sessions.get(memory_id) if isinstance(memory_id, str) else None
        return (
            other is not None
            and other is not session
            and other.open
            and other.agent == session.agent
            and other.namespace == session.namespace
        )

    def _check_entry(self, layout: Layout, session: MemorySession, entry: Entry) -> None:
        if entry.tier == "semantic" and not self.may_write_semantic(session.agent):
            raise Refused(
                ErrorCode.PERMISSION_DENIED,
                "this agent may not write the shared semantic tier",
            )
        text_limit = layout.max_content_length
        if text_limit is not None and len(entry.text) > text_limit:
            raise EntryRefused(f"content is longer than the store accepts ({text_limit})")

    def _record(self, layout: Layout, session: MemorySession, entry: Entry) -> dict[str, Any]:
        return record_of(
            entry,
            namespace=session.namespace,
            memory_id=session.memory_id,
            agent=session.agent,
            tier_name=layout.tier_for_kind.get(entry.tier),
            fields=layout.fields,
        )

    def _write(
        self,
        layout: Layout,
        session: MemorySession,
        accepted: list[tuple[int, Entry]],
        errors: list[str],
    ) -> Flow[list[tuple[int, Entry]]]:
        if not accepted:
            return []
        records = [self._record(layout, session, entry) for _, entry in accepted]
        try:
            for start in range(0, len(records), layout.max_records_per_call):
                # Batches after the first only when the server takes fewer at once.
                yield call("remember", records[start : start + layout.max_records_per_call])
        except A2MError:
            # Find which entries the store refuses: each alone, so the rest still land.
            written = []
            for (index, entry), record in zip(accepted, records, strict=True):
                try:
                    yield call("remember", [record])
                except QuotaExceeded:
                    errors.append(f"entries[{index}]: {ErrorCode.MEMORY_FULL}: the store is full")
                    continue
                except A2MError as exc:
                    refused = _backend_error(exc)
                    errors.append(f"entries[{index}]: {refused.code}: {refused.message}")
                    continue
                written.append((index, entry))
            self._count(session.namespace, written)
            return written
        self._count(session.namespace, accepted)
        return accepted

    # --- quotas ---------------------------------------------------------------------------

    def _count(self, namespace: str, written: list[tuple[int, Entry]]) -> None:
        usage = self._usage.get(namespace)
        if usage is None:
            return
        for _, entry in written:
            old = self._pending_old.pop((namespace, entry.entry_key), None)
            usage.entries += 0 if old is not None else 1
            usage.bytes += entry.size - (old or 0)

    def _usage_of(self, layout: Layout, namespace: str) -> Flow[_Usage]:
        usage = self._usage.get(namespace)
        if usage is None:
            usage = _Usage()
            listed = yield from self._listing(
                layout, {"key_prefix": namespace + "/"}, f"namespace {namespace!r}"
            )
            for record in listed:
                if _in_namespace(record, namespace):
                    usage.entries += 1
                    usage.bytes += json_size(entry_of(record, layout.kind_of_tier)["content"])
            self._usage[namespace] = usage
        return usage

    def _within_quota(
        self,
        layout: Layout,
        session: MemorySession,
        accepted: list[tuple[int, Entry]],
        records: list[Record],
        errors: list[str],
    ) -> Flow[list[tuple[int, Entry]]]:
        """The entries within the namespace's quota (``records``: what their keys hold).
        The namespace's usage is kept from the first count on; an entry it would refuse
        is refused only after a fresh count, since entries expire, end with their
        session, or go through another host meanwhile."""
        namespace = session.namespace
        held = {
            record.key: json_size(entry_of(record, layout.kind_of_tier)["content"])
            for record in records
        }
        counted = namespace not in self._usage
        usage = yield from self._usage_of(layout, namespace)
        fitting, refused = self._fitting(usage, namespace, accepted, held)
        if refused and not counted:
            del self._usage[namespace]
            usage = yield from self._usage_of(layout, namespace)
            fitting, refused = self._fitting(usage, namespace, accepted, held)
        errors.extend(refused)
        for _, entry in fitting:
            old = held.get(f"{namespace}/{entry.entry_key}")
            if old is not None:
                self._pending_old[(namespace, entry.entry_key)] = old
        return fitting

    def _fitting(
        self,
        usage: _Usage,
        namespace: str,
        accepted: list[tuple[int, Entry]],
        held: dict[str | None, int],
    ) -> tuple[list[tuple[int, Entry]], list[str]]:
        """(the entries that fit ``usage``, in order; an error for each that does not)."""
        entries, size = usage.entries, usage.bytes
        fitting: list[tuple[int, Entry]] = []
        refused: list[str] = []
        for index, entry in accepted:
            old = held.get(f"{namespace}/{entry.entry_key}")
            grown_entries = entries + (0 if old is not None else 1)
            grown_bytes = size + entry.size - (old or 0)
            over_entries = self.limits.max_entries is not None and (
                grown_entries > self.limits.max_entries and old is None
            )
            over_bytes = self.limits.max_bytes is not None and (
                grown_bytes > self.limits.max_bytes and grown_bytes > size
            )
            if over_entries or over_bytes:
                what = (
                    f"{self.limits.max_entries} entries"
                    if over_entries
                    else f"{self.limits.max_bytes} bytes"
                )
                refused.append(
                    f"entries[{index}]: {ErrorCode.MEMORY_FULL}: namespace "
                    f"{namespace!r} is at its quota of {what}"
                )
                continue
            entries, size = grown_entries, grown_bytes
            fitting.append((index, entry))
        return fitting, refused

    # --- reading --------------------------------------------------------------------------

    def _listing(self, layout: Layout, params: dict[str, Any], what: str) -> Flow[list[Record]]:
        """Every record ``params`` select, oldest first: by cursor where the server pages;
        in one ``memory/timeline`` with no limit where it declares no ``max_recall_limit``
        (spec §4.4); elsewhere in one capped call, refused when that call may not hold
        them all — an answer from part of ``what`` would be a wrong answer."""
        limit = layout.max_recall_limit
        if not layout.cursor:
            if not layout.recall_limit_declared:
                return list((yield call("timeline", **params)).records)
            records = list((yield call("timeline", limit=limit, **params)).records)
            if len(records) >= limit:
                raise Refused(
                    ErrorCode.BACKEND_ERROR,
                    f"{what} may hold more than the {limit} records the memory store returns "
                    "in one call, and the store cannot page through them (it declares no "
                    "timeline.cursor): ask by query or keys, or use a store that pages",
                )
            return records
        records = []
        cursor: str | None = ""
        while cursor is not None:
            result = yield call("timeline", limit=limit, cursor=cursor, **params)
            records.extend(result.records)
            following = result.next_cursor
            cursor = None if following == cursor else following
        return records

    def _by_keys(
        self,
        layout: Layout,
        session: MemorySession,
        addresses: list[str],
        extra: Mapping[str, Any] | None = None,
    ) -> Flow[list[Record]]:
        """The records at ``addresses``, in calls of at most ``max_recall_limit`` keys.

        A key names one record per owner. With the owner filter (or without ``scopes``) a
        chunk's answer holds at most one record a key, so one capped call is whole; a host
        with no agent on a server with ``scopes`` reads every owner's record at a key, so
        each chunk is listed as :meth:`_listing` lists: paged, or refused when it may not
        be whole, never cut short."""
        found: list[Record] = []
        owner = self._owner(layout, session)
        one_per_key = bool(owner) or not layout.scopes
        step = layout.max_recall_limit
        for start in range(0, len(addresses), step):
            params = {"where": {"key": addresses[start : start + step]}, **owner, **(extra or {})}
            if one_per_key:
                result = yield call("timeline", limit=layout.max_recall_limit, **params)
                found.extend(result.records)
            else:
                found.extend((yield from self._listing(layout, params, "the keys asked for")))
        return found

    def visible(self, layout: Layout, session: MemorySession, record: Record) -> bool:
        """Whether the agent of ``session`` sees ``record`` (seed tiers: working is this
        memory session's and only while it is in the working tier; episodic is the agent's
        own; semantic is everyone's)."""
        tier = tier_of(record, layout.kind_of_tier)
        metadata = record.metadata or {}
        if tier == "working":
            if metadata.get(MEMORY_FIELD) != session.memory_id:
                return False
            working = layout.tier_for_kind.get("working")
            # Flushed by a session close or spilled: no longer this session's scratch pad.
            return working is None or record.tier == working
        if tier == "episodic":
            if layout.scopes and record.owner is not None:
                return record.owner == session.agent
            return metadata.get("source_agent") == session.agent
        return True

    # --- memory/retrieve ------------------------------------------------------------------

    def _retrieve(self, read: Reader, req_id: str) -> Flow[dict[str, Any]]:
        session = self._session(read)
        keys = read.keys("keys")
        query = read.text("query", "")
        tags = set(read.strings("tags"))
        tier = read.text("tier", "")
        if tier and tier not in m.TIERS:
            raise Refused(ErrorCode.INVALID_MESSAGE, f"'tier' must be empty or one of {m.TIERS}")
        limit = read.integer("limit", 10, 0, 10_000)
        min_score = read.number("min_score", 0.0)
        embeddings = read.flag("include_embeddings")
        layout = yield from self.known()
        owner = self._owner(layout, session)
        addresses = [f"{session.namespace}/{key}" for key in keys]
        vectors = {"embeddings": True} if embeddings and "embedding" in layout.fields else {}
        if query:
            where = {"where": {"key": addresses}} if addresses else {}
            result = yield call(
                "recall", query, limit=layout.max_recall_limit, **where, **owner, **vectors
            )
            records = list(result.records)
        elif addresses:
            records = yield from self._by_keys(layout, session, addresses, vectors)
        else:
            records = yield from self._listing(layout, {**owner, **vectors}, "the listing")
            records.reverse()  # newest first
        visible = [record for record in records if self.visible(layout, session, record)]
        if addresses and not query and not visible:
            raise Refused(ErrorCode.MEMORY_NOT_FOUND, "no entry holds the keys asked for")
        if addresses and not query:
            order = {address: place for place, address in enumerate(addresses)}
            visible.sort(key=lambda record: order.get(record.key or "", len(order)))
        matching = [
            record
            for record in visible
            if (not tier or tier_of(record, layout.kind_of_tier) == tier)
            and tags <= set(_tags(record))
            and score_of(record) >= min_score
        ]
        entries = [
            entry_of(record, layout.kind_of_tier, embeddings=embeddings)
            for record in matching[:limit]
        ]
        return new_message(m.RETRIEVE_RESP, req_id=req_id, entries=entries, total=len(matching))

    # --- memory/forget --------------------------------------------------------------------

    def _forget(self, read: Reader, req_id: str) -> Flow[dict[str, Any]]:
        session = self._session(read)
        keys = read.keys("keys")
        tags = set(read.strings("tags"))
        tier = read.text("tier", "episodic")
        if tier not in m.TIERS:
            raise Refused(ErrorCode.INVALID_MESSAGE, f"'tier' must be one of {m.TIERS}")
        if not keys and not tags:
            raise Refused(ErrorCode.INVALID_MESSAGE, "forget needs 'keys', 'tags' or both")
        if tier == "semantic" and not self.may_write_semantic(session.agent):
            raise Refused(
                ErrorCode.PERMISSION_DENIED, "this agent may not forget in the semantic tier"
            )
        layout = yield from self.known()
        owner = self._owner(layout, session)
        if keys:
            addresses = [f"{session.namespace}/{key}" for key in keys]
            records = yield from self._by_keys(layout, session, addresses)
        else:
            records = yield from self._listing(
                layout,
                {"key_prefix": session.namespace + "/", **owner},
                f"namespace {session.namespace!r}",
            )
        found = [
            record
            for record in records
            if _in_namespace(record, session.namespace)
            and self.visible(layout, session, record)
            and tier_of(record, layout.kind_of_tier) == tier
        ]
        if keys and not found:
            raise Refused(ErrorCode.MEMORY_NOT_FOUND, f"no {tier} entry holds the keys given")
        doomed = [record for record in found if tags <= set(_tags(record))]
        deleted = 0
        if doomed:
            # The semantic tier is the agents' shared knowledge: a granted writer forgets
            # any entry of it, whichever agent wrote it, not its own alone.
            mine = {} if tier == "semantic" else owner
            result = yield call("forget", [record.id for record in doomed], **mine)
            deleted = result.forgotten
            if deleted == len(doomed):
                self._uncount(layout, session.namespace, doomed)
            else:  # some went another way meanwhile: the next quota check counts afresh
                self._usage.pop(session.namespace, None)
        return new_message(m.FORGET_RESP, req_id=req_id, deleted=deleted)

    def _uncount(self, layout: Layout, namespace: str, records: Iterable[Record]) -> None:
        usage = self._usage.get(namespace)
        if usage is None:
            return
        for record in records:
            usage.entries = max(0, usage.entries - 1)
            size = json_size(entry_of(record, layout.kind_of_tier)["content"])
            usage.bytes = max(0, usage.bytes - size)

    # --- the end of a memory session -----------------------------------------------------

    def end(self, memory_id: str) -> Flow[int]:
        """End memory session ``memory_id``: its working entries are deleted, its A2M
        session closed; later requests naming it are refused. Returns how many working
        entries went (0 for a session already ended or unknown)."""
        session = self.sessions.get(memory_id)
        if session is None or not session.open:
            return 0
        session.open = False
        layout = yield from self.known()
        owner = self._owner(layout, session)
        # Delete before closing: a close would flush them into a lower tier first.
        result = yield call("forget", where={"type": "working", MEMORY_FIELD: memory_id}, **owner)
        if layout.sessions:
            yield call("close_session", memory_id, **owner)
        return int(result.forgotten)


def _tags(record: Record) -> list[str]:
    tags = (record.metadata or {}).get("tags")
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []


def _in_namespace(record: Record, namespace: str) -> bool:
    stated = (record.metadata or {}).get("namespace")
    if isinstance(stated, str):
        return stated == namespace
    return record.key is not None and record.key.startswith(namespace + "/")

"""The four-method adapter contract — ``write``, ``read``, ``query``, ``delete`` — that every
framework adapter is built on, over a client of any binding, in the REST draft's entry
shape (``docs/rest-binding.md``).

An adapter is scoped to a namespace for what it *changes*: writes and deletes land in its
namespace only. What it *reads* is not fenced in, because shared memory is the point:
``query`` searches every namespace unless given one, and ``read`` / ``list`` take a
``namespace=`` to look at another agent's entries.

Record conventions every adapter follows, so frameworks can read each other: ``content``
is readable text and a structured value travels in ``metadata.value``; the memory type is
the tier's kind; ``metadata`` carries provenance (``source_framework``, ``source_agent``,
``tags``); ``owner`` is the agent (where the server declares scopes) and ``session`` the
conversation.

Every method makes a bounded number of A2M calls, stated in its docstring (``docs/adapters.md``
has the table); the first call of an adapter also sends one ``memory/describe``, unless the
client has already negotiated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from typing_extensions import Self

from a2m_types.observations import ObservationRememberResult
from a2m_types.rest import Entry, EntryList, EntryWrite, ScoredEntry

from . import _adapter_batch as batch
from . import _adapter_paging as paging
from ._adapter_core import (
    Change,
    Layout,
    WatchState,
    check_page,
    check_query,
    check_type,
    checked_namespace,
    doomed,
    entry_at,
    entry_page,
    list_params,
    new_scope,
    plan_query,
    scored_entries,
    to_entry,
    type_selector,
    vectors_params,
    watched_namespace,
    with_vectors,
)
from ._adapter_owners import best_per_key
from ._adapter_paging import (
    DEFAULT_PAGE_SIZE,
    MAX_CALLS_PER_PAGE,
    AsyncEntryIterator,
    EntryIterator,
    check_page_size,
)
from ._adapter_steps import drive
from ._adapter_values import UnstorableValue, check_storable
from ._adapter_where import checked_where
from ._async_adapter import AsyncA2MAdapter
from ._client import A2MClient
from ._observations import adapter_provenance
from .errors import InvalidParams

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_CALLS_PER_PAGE",
    "A2MAdapter",
    "AsyncA2MAdapter",
    "AsyncEntryIterator",
    "Change",
    "Entry",
    "EntryIterator",
    "EntryList",
    "EntryWrite",
    "ScoredEntry",
    "UnstorableValue",
    "check_storable",
]


class A2MAdapter:
    """The contract over a synchronous :class:`~a2m.A2MClient`, scoped to ``namespace``.

    ``source_framework`` and ``agent`` are written into every entry's provenance (``agent``
    also becomes the records' owner where the server declares ``scopes``; over an
    authenticated connection leave it unset, the principal is the owner); ``session`` is
    the conversation records belong to. The client is the caller's: the adapter never
    closes it."""

    def __init__(
        self,
        client: A2MClient,
        namespace: str,
        *,
        source_framework: str | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self.client = client
        self.scope = new_scope(namespace, source_framework, agent, session)
        self._layout: Layout | None = None

    @property
    def namespace(self) -> str:
        """Where this adapter's writes and deletes land."""
        return self.scope.namespace

    def _known(self) -> Layout:
        if self._layout is None:
            description = self.client.description or self.client.describe()
            self._layout = Layout.of(description)
            self.scope.caller.described(description)
        return self._layout

    def remember_observation(
        self,
        content: str,
        *,
        classification: str | None = None,
        file_path: str | None = None,
        tags: Sequence[str] | None = None,
        weight: float = 1.0,
        type: str | None = None,
    ) -> ObservationRememberResult:
        """Remember one durable fact for this adapter's agent (``docs/observations.md``),
        with the adapter's provenance; an identical fact already stored has its weight
        raised instead. One ``memory/observations/remember``."""
        layout = self._known()
        return self.client.remember_observation(
            content,
            classification=classification,
            file_path=file_path,
            tags=tags,
            weight=weight,
            type=type,
            **adapter_provenance(
                self.scope.namespace,
                self.scope.source_framework,
                self.scope.agent,
                self.scope.session,
                layout.capabilities,
            ),
        )

    # --- the four methods --------------------------------------------------------------

    def write(
        self,
        key: str,
        type: str,
        value: Any,
        embedding: Sequence[float] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Entry:
        """Create or replace the entry at ``key`` in this namespace; returns it as stored
        (its ``id`` and ``created_at`` survive a replacement). A key whose A2M key another
        namespace's entry holds is refused with :class:`~a2m.InvalidParams`.

        A batch of one (:meth:`write_many`): three calls, a ``memory/timeline`` checking the
        key, the ``memory/remember`` and a ``memory/timeline`` reading the entry back."""
        entry = {"key": key, "type": type, "value": value, "embedding": embedding, "meta": meta}
        return self.write_many([entry])[0]

    def write_many(self, entries: Iterable[Mapping[str, Any] | EntryWrite]) -> list[Entry]:
        """Create or replace many entries of this namespace at once; returns them as stored,
        in the order given (a key given twice is written once, with its last value).

        Entries are mappings with ``write``'s fields (``key``, ``type``, ``value``, and
        optionally ``embedding`` and ``meta``) or :class:`~a2m_types.rest.EntryWrite`. All
        are checked before anything is sent: one invalid entry, or one whose key another
        namespace holds, raises :class:`~a2m.InvalidParams` and nothing is written.

        All or nothing: where a batch takes several calls and a later one fails, what the
        earlier ones replaced is written back as it was and what they added is removed
        (one ``memory/remember`` per ``R`` records put back and one ``memory/forget``
        more) before the failure is raised.

        Calls for ``n`` distinct keys: ``⌈n/R⌉`` ``memory/remember`` (``R`` the server's
        ``max_records_per_call``, 1000 here), each atomic as the server is; one
        ``memory/timeline`` per ``L`` keys checking that no other namespace holds them and
        one per ``max_recall_limit`` reading the entries back (``L`` = ``max_recall_limit``,
        less one on a server declaring ``scopes``, where owners may share a key). 999
        entries: 3 calls, not 2997."""
        writes = batch.entry_writes(self.scope, entries)
        if not writes:
            return []
        return drive(batch.write_many(self.scope, self._known(), writes), self.client)

    def read(self, key: str, *, namespace: str | None = None) -> Entry | None:
        """The entry at ``key`` in this namespace (or ``namespace``), or ``None``: one
        ``memory/fetch``."""
        where, address = self.scope.address(key, namespace)
        layout = self._known()
        fetched = self.client.fetch(address, **layout.vectors())
        return entry_at(fetched.record, where, layout)

    def read_many(self, keys: Iterable[str], *, namespace: str | None = None) -> dict[str, Entry]:
        """The entries at ``keys`` in this namespace (or ``namespace``), by key; a key that
        holds nothing is absent. One ``memory/timeline`` per ``L`` keys (``L`` as in
        :meth:`write_many`); a binding that cannot filter by key costs a ``memory/fetch``
        per key."""
        where, addressed = batch.addresses(self.scope, keys, namespace)
        if not addressed:
            return {}
        return drive(batch.read_many(self.scope, self._known(), where, addressed), self.client)

    def query(
        self,
        embedding: Sequence[float] | None = None,
        type: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        *,
        text: str | None = None,
        tags: Sequence[str] | None = None,
        recursive: bool = False,
        namespace: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[ScoredEntry]:
        """The ``top_k`` entries (at most the server's ``max_recall_limit``) most similar to
        ``embedding`` and/or ``text``, best first.

        Searches every namespace, or only ``namespace`` (with its children when
        ``recursive``); ``type``, ``tags`` (all must match) and ``where`` (record fields and
        metadata, operators included: ``docs/adapters.md``) narrow it. Scores rank within
        this one call only (§5.3). One ``memory/recall``; a second, ``memory/timeline``,
        fetches the winners' vectors when ``tags``, an exact ``namespace`` or a ``where``
        the server cannot run were filtered here, from ``max_recall_limit`` candidates."""
        check_query(embedding, type, top_k, text, namespace)
        where = checked_where(where)
        layout = self._known()
        plan = plan_query(
            layout,
            embedding=embedding,
            type=type,
            top_k=top_k,
            min_score=min_score,
            text=text,
            tags=tags,
            recursive=recursive,
            namespace=namespace,
            where_given=where,
        )
        recalled = self.client.recall(**plan.params).records
        own = best_per_key(self.scope.caller, recalled, layout.vectors())
        hits = scored_entries(drive(own, self.client), layout, plan)
        if plan.vectors_later and hits:
            hits = with_vectors(hits, self.client.timeline(**vectors_params(hits)).records)
        return hits

    def delete(self, key: str) -> None:
        """Delete the entry at ``key`` in this namespace; a missing key is not an error.
        A batch of one (:meth:`delete_many`): a ``memory/timeline`` finding the entry, a
        ``memory/forget`` when there is one."""
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> int:
        """Delete the entries at ``keys`` in this namespace; returns how many there were
        (missing keys are not an error). One ``memory/timeline`` per ``L`` keys (as in
        :meth:`read_many`), then one ``memory/forget``."""
        _, addressed = batch.addresses(self.scope, keys, None)
        if not addressed:
            return 0
        return drive(batch.delete_many(self.scope, self._known(), addressed), self.client)

    # --- what every adapter needs beyond the four ----------------------------------------

    def list(
        self,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 50,
        offset: int = 0,
        recursive: bool = False,
        namespace: str | None = None,
        where: Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> EntryList:
        """Entries of this namespace (or ``namespace``; with children when ``recursive``),
        oldest first, a page at a time; ``type``, ``tags`` and ``where`` narrow them.

        By ``offset`` (``cursor=None``): the page of the complete listing, with its exact
        ``total`` — ``⌈n/L⌉`` ``memory/timeline`` calls on a server paging by cursor; on
        any other one call carrying the newest ``L`` records, and ``truncated`` set when
        that cap was reached (``L`` = ``max_recall_limit``).

        By ``cursor`` (``""`` for the first page, then each page's ``next_cursor`` until it
        is ``None``): stable while others write — no entry twice, none missed — in one
        ``memory/timeline`` a page, at most :data:`MAX_CALLS_PER_PAGE` when filtering here
        leaves it short (a page may hold fewer than ``limit``; only ``next_cursor=None``
        ends the listing). ``total`` then counts the page."""
        check_page(limit, offset)
        check_type(type)
        where = checked_where(where)
        if cursor is not None and offset:
            raise InvalidParams("page by offset or by cursor, not both (nothing was sent)")
        where_ns = self.namespace if namespace is None else checked_namespace(namespace)
        layout = self._known()
        plan = paging.listing(
            layout,
            type=type,
            tags=tags,
            namespace=where_ns,
            recursive=recursive,
            where=where,
            caller=self.scope.caller,
        )
        if cursor is not None:
            return drive(paging.page_at(plan, layout, cursor, limit), self.client)
        found = drive(paging.complete(plan, layout), self.client)
        return entry_page(found.entries, offset, limit, truncated=found.truncated)

    def iter_entries(
        self,
        *,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        recursive: bool = False,
        namespace: str | None = None,
        where: Mapping[str, Any] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> EntryIterator:
        """Every entry of this namespace (or ``namespace``), oldest first, as ``list`` by
        cursor selects them, fetched ``page_size`` records a ``memory/timeline`` call as
        iteration goes: complete and stable on a server paging by cursor. On any other,
        one call carries the newest ``max_recall_limit`` records, and the iterator's
        ``truncated`` is set once exhausted if that cap was reached. Nothing is sent
        until iteration starts."""
        check_type(type)
        check_page_size(page_size)
        where = checked_where(where)
        where_ns = self.namespace if namespace is None else checked_namespace(namespace)

        def entries(iterator: EntryIterator) -> Iterator[Entry]:
            layout = self._known()
            plan = paging.listing(
                layout,
                type=type,
                tags=tags,
                namespace=where_ns,
                recursive=recursive,
                where=where,
                caller=self.scope.caller,
            )
            size = min(page_size, layout.max_recall_limit)
            position: str | None = ""
            while position is not None:
                found = drive(paging.page(plan, layout, position, size), self.client)
                iterator.truncated = found.truncated
                yield from found.entries
                position = found.next_cursor

        return EntryIterator(entries)

    def filter_operators(self) -> frozenset[str]:
        """The ``where`` operators the server runs (empty: §5.2 equality only; the adapter
        then matches operator filters itself, with :func:`a2m.filters.matches`)."""
        return self._known().operators

    def clear(self, *, type: str | None = None, tags: Sequence[str] | None = None) -> int:
        """Delete this namespace's entries (of ``type``, carrying ``tags``); returns how many."""
        check_type(type)
        layout = self._known()
        cleared = 0
        if not tags:
            # The server deletes every entry that says it is this namespace's, however many.
            selector = type_selector(layout, type)
            selector["where"] = {**selector.get("where", {}), "namespace": self.namespace}
            cleared += self.client.forget(**selector).forgotten
        params = list_params(layout, type=type, namespace=self.namespace)
        while True:  # what only a key places here, and what tags select, a page at a time
            records = self.client.timeline(**params).records
            going = doomed(records, layout, tags=tags, namespace=self.namespace)
            cleared += self._forget(going)
            if not going or len(records) < layout.max_recall_limit:
                return cleared

    def _forget(self, entries: Sequence[Entry]) -> int:
        return drive(batch.forget(entries), self.client)

    def watch(
        self,
        pattern: str | None = None,
        *,
        namespace: str | None = None,
        recursive: bool = False,
        poll_interval: float = 1.0,
    ) -> Iterator[Change]:
        """Follow writes and deletes of entries in this namespace (or ``namespace``, or all
        with ``namespace="*"``) whose key matches the glob ``pattern``; polls the event log,
        so it works on every binding. Iterate it; it never ends on its own."""
        watched = watched_namespace(self.namespace, namespace)
        layout = self._known()
        state = WatchState(watched, recursive, pattern, {})
        for event in self.client.watch(poll_interval=poll_interval):
            payload = event.model_dump(mode="json")
            written = state.written_key(event.kind, payload)
            if written is not None:
                record = self.client.fetch(written, **layout.vectors()).record
                entry = to_entry(record, layout, state.namespace) if record else None
                if entry is not None and state.wrote(written, entry):
                    yield Change("write", entry.namespace, entry.key, entry)
            for space, key in state.deleted(event.kind, payload):
                yield Change("delete", space, key, None)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

"""A2M methods over the REST draft's routes alone, for a server that offers nothing more.

The draft can carry ``core``, ``keys`` and ``embeddings``: describe (answered here, without
a request), remember, recall (by a caller's embedding, or the most recent entries),
timeline, fetch and forget. Entries become records, and records entries, only through
:mod:`a2m_types.rest`. Whatever the draft cannot express raises
:class:`~a2m.errors.CapabilityNotSupported` before a request is sent.

What the draft mode sees: the namespace given to ``.rest(...)`` and everything beneath it,
unless a call names another namespace (``key_prefix``, or ``where.namespace``); the draft
has no way to list across namespaces. ``key_prefix`` selects the entries in that namespace
and beneath it. A multi-request call (a batch, a paged read, a delete at several addresses)
is not atomic, and a paged read is not a snapshot."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import TypeAdapter, ValidationError

from a2m.errors import CapabilityNotSupported, InvalidParams, ResponseValidationError
from a2m_types import METHODS, PROTOCOL_VERSION, RecordInput
from a2m_types.rest import (
    DEFAULT_TOP_K,
    DELETED_COUNT_HEADER,
    MAX_LIST_LIMIT,
    MAX_TOP_K,
    MEMORY_TYPES,
    Entry,
    EntryList,
    InvalidKey,
    InvalidNamespace,
    ScoredEntry,
    entry_to_record,
    record_input_to_entry_write,
    split_record_key,
    validate_key,
    validate_namespace,
)

from ._base import encode_message
from ._rest_wire import HttpCall, Steps, expect, parse

__all__ = ["DRAFT_CAPABILITIES", "DRAFT_METHODS", "Draft"]

DRAFT_CAPABILITIES = ("core", "keys", "embeddings")
"""What the draft's routes can carry."""

DRAFT_METHODS = tuple(
    f"memory/{name}" for name in ("describe", "remember", "recall", "timeline", "forget", "fetch")
)
"""The methods they carry."""

_CARRIED: Mapping[str, frozenset[str]] = {
    "memory/describe": frozenset({"protocol"}),
    "memory/remember": frozenset({"records"}),
    "memory/recall": frozenset(
        {"query", "limit", "where", "min_score", "embedding", "key_prefix", "embeddings"}
    ),
    "memory/timeline": frozenset({"limit", "where", "key_prefix", "embeddings"}),
    "memory/fetch": frozenset({"key", "embeddings"}),
    "memory/forget": frozenset({"where", "key_prefix"}),
}
"""The params of each method the draft can carry; any other that asks for something is
refused."""

_RECORD_FIELDS_REFUSED = ("role", "group", "tier", "salience", "owner", "session", "uri")
"""Record fields an entry has no place for (or that need a capability the draft lacks;
``media_type`` comes with ``uri``)."""

_RECENCY_HALF_LIFE_S = 30 * 86400.0
"""How an empty-query recall scores by recency, as the bundled server does."""

_ENTRY = TypeAdapter(Entry)
_ENTRY_LIST = TypeAdapter(EntryList)
_SCORED = TypeAdapter(list[ScoredEntry])


def _refuse(method: str, what: str, capability: str = "core") -> CapabilityNotSupported:
    return CapabilityNotSupported(
        f"{what} cannot be carried by the REST draft's routes, the only ones this server "
        "offers (nothing was sent)",
        method=method,
        data={"capability": capability, "binding": "rest-draft"},
    )


def _asks(value: Any) -> bool:
    return value is not None and value is not False


def _path(namespace: str, route: str, key: str | None = None) -> str:
    # Namespace segments need no encoding; a key keeps its slashes and escapes the rest.
    return f"{namespace}/{route}" + ("" if key is None else "/" + quote(key, safe="/"))


def _created(entry: Entry) -> float:
    stamp = entry.meta.created_at or entry.meta.updated_at
    return stamp.timestamp() if stamp is not None else 0.0


def _addresses(key: str, hint: str) -> list[tuple[str, str]]:
    """Every ``(namespace, key)`` the A2M key ``key`` can be reached at, the mapping's own
    first (``hint`` when the key lies under it, else everything before the last ``/``), then
    the other splits, longest namespace first."""
    found: list[tuple[str, str]] = []
    first = split_record_key(key, None, hint)
    splits = [i for i, char in enumerate(key) if char == "/"]
    for address in [first, *((key[:i], key[i + 1 :]) for i in reversed(splits))]:
        if address is None or address in found:
            continue
        try:
            validate_namespace(address[0])
            validate_key(address[1])
        except (InvalidNamespace, InvalidKey):
            continue
        found.append(address)
    return found


@dataclass(frozen=True)
class _Scope:
    """Which entries a read or bulk delete selects."""

    namespace: str
    recursive: bool
    type: str | None

    def query(self) -> tuple[tuple[str, str], ...]:
        pairs = [("recursive", "true" if self.recursive else "false")]
        if self.type is not None:
            pairs.append(("type", self.type))
        return tuple(pairs)


def _single(method: str, name: str, value: Any) -> Any:
    # §5.2: a list means "any of"; the draft filters on one value.
    if isinstance(value, list):
        if len(value) != 1:
            raise _refuse(method, f"where.{name} with several values")
        return value[0]
    return value


class Draft:
    """Translates A2M requests into the draft's routes, for one default namespace."""

    def __init__(self, namespace: str, server: str) -> None:
        self.namespace = namespace
        self.server = server
        self._handlers: dict[str, Callable[[str, dict[str, Any]], Steps[Any]]] = {
            "memory/describe": self._describe,
            "memory/remember": self._remember,
            "memory/recall": self._recall,
            "memory/timeline": self._timeline,
            "memory/fetch": self._fetch,
            "memory/forget": self._forget,
        }

    def describe(self) -> dict[str, Any]:
        """The describe result of a server offering only the draft's routes."""
        return {
            "protocol": PROTOCOL_VERSION,
            "name": f"REST draft server at {self.server} (only the A2M REST draft's routes)",
            "capabilities": list(DRAFT_CAPABILITIES),
            "methods": list(DRAFT_METHODS),
            "embeddings": {"dimensions": None, "metric": "cosine"},
        }

    def confirm(self, method: str) -> Steps[None]:
        """Ask the draft's list route for one entry of the default namespace: a draft
        server answers with an entry list; anything else raises what its reply says (a
        plain 404: nothing answers A2M at this URL)."""
        yield from self._page(method, _Scope(self.namespace, recursive=False, type=None), 0, 1)

    def steps(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        """The HTTP calls ``method`` takes; refusals are raised before the first one."""
        handler = self._handlers.get(method)
        if handler is None:
            spec = METHODS.get(method)
            raise _refuse(method, method, spec.capability if spec is not None else "core")
        carried = _CARRIED[method]
        for name, value in params.items():
            if name not in carried and _asks(value):
                raise _refuse(method, f"the {name!r} parameter")
        return handler(method, params)

    # --- reads --------------------------------------------------------------------------

    def _describe(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        yield from ()  # answered here: no request
        return self.describe()

    def _scope(self, method: str, params: dict[str, Any], *, default: bool) -> _Scope | None:
        """The entries ``where`` and ``key_prefix`` select (``None``: provably none). Only
        ``where.namespace`` and ``where.type`` are entry filters the draft can carry;
        ``default`` lets a read fall back to the client's namespace."""
        where = dict(params.get("where") or {})
        if where.get("type", "") is None or where.get("namespace", "") is None:
            # §5.2: null selects records without one, which no entry is.
            raise _refuse(method, "where on a null type or namespace")
        type_ = _single(method, "type", where.pop("type", None))
        named = _single(method, "namespace", where.pop("namespace", None))
        if where:
            raise _refuse(method, f"where on {sorted(where)} (only namespace and type are)")
        prefix = params.get("key_prefix")
        if prefix is not None:
            prefix = prefix.rstrip("/")
            if prefix:
                try:
                    validate_namespace(prefix)
                except InvalidNamespace:
                    raise _refuse(method, f"key_prefix {prefix!r}, which is no namespace") from None
            elif not default:
                raise _refuse(method, "an empty key_prefix (every namespace)")
            else:
                prefix = None
        if type_ is not None and type_ not in MEMORY_TYPES:
            return None  # no entry has another type
        if named is not None:
            if not isinstance(named, str):
                return None
            try:
                validate_namespace(named)
            except InvalidNamespace:
                return None  # no entry lives there
            if prefix is not None and named != prefix and not named.startswith(prefix + "/"):
                return None
            return _Scope(named, False, type_)
        if prefix is not None:
            return _Scope(prefix, True, type_)
        if not default:
            raise _refuse(method, "forgetting without a namespace (key_prefix or where.namespace)")
        return _Scope(self.namespace, True, type_)

    def _records(
        self, method: str, entries: Sequence[Entry], scores: Sequence[float] | None, vectors: bool
    ) -> list[dict[str, Any]]:
        records = []
        for index, entry in enumerate(entries):
            try:
                record = entry_to_record(entry, score=None if scores is None else scores[index])
            except ValueError as exc:
                raise ResponseValidationError(
                    f"entry {entry.key!r} in {entry.namespace!r} is not a valid record: {exc}",
                    method=method,
                ) from None
            # The draft declares no salience; vectors only when asked for (§3.7).
            update: dict[str, Any] = {"salience": None}
            if not vectors:
                update["embedding"] = None
            records.append(record.model_copy(update=update).to_wire())
        return records

    def _page(self, method: str, scope: _Scope, offset: int, size: int) -> Steps[EntryList]:
        query = (*scope.query(), ("limit", str(size)), ("offset", str(offset)))
        reply = yield HttpCall("GET", _path(scope.namespace, "entries"), query)
        return parse(_ENTRY_LIST, reply, method, "entry list")

    def _recent(self, method: str, scope: _Scope, limit: int | None) -> Steps[list[Entry]]:
        """The most recent ``limit`` entries (all of them for ``None``), oldest first. Relies
        on the list being oldest first, as the binding documents it."""
        first = yield from self._page(
            method, scope, 0, min(limit or MAX_LIST_LIMIT, MAX_LIST_LIMIT)
        )
        start = max(first.total - limit, 0) if limit else 0
        entries, offset = (list(first.entries), first.next_offset) if start == 0 else ([], start)
        while offset is not None and (limit is None or len(entries) < limit):
            size = MAX_LIST_LIMIT if limit is None else min(MAX_LIST_LIMIT, limit - len(entries))
            page = yield from self._page(method, scope, offset, size)
            entries.extend(page.entries)
            if not page.entries or (page.next_offset is not None and page.next_offset <= offset):
                break  # pages that do not advance: stop rather than loop for ever
            offset = page.next_offset
        # Entries written between two pages may shift one into both.
        unique = list({entry.id: entry for entry in entries}.values())
        unique.sort(key=_created)
        return unique[-limit:] if limit else unique

    def _recall(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        if params.get("query"):
            raise _refuse(method, "recall by text (the draft ranks only by a caller's embedding)")
        scope = self._scope(method, params, default=True)
        vectors = params.get("embeddings") is True
        if scope is None:
            return {"records": []}
        limit = params.get("limit")
        embedding = params.get("embedding")
        min_score = params.get("min_score")
        if embedding is not None:
            if min_score is not None and min_score > 1:
                return {"records": []}  # a similarity lies in 0 to 1, where the draft bounds it
            body: dict[str, Any] = {"embedding": embedding, "recursive": scope.recursive}
            if limit is not None:
                body["top_k"] = min(limit or MAX_TOP_K, MAX_TOP_K)
            if min_score is not None and min_score > 0:
                body["min_score"] = min_score
            if scope.type is not None:
                body["type"] = scope.type
            reply = yield HttpCall(
                "POST", _path(scope.namespace, "query"), body=encode_message(body)
            )
            hits = parse(_SCORED, reply, method, "query result")
            hits.sort(key=lambda hit: -hit.score)  # §4.3: descending, whatever the server did
            entries, scores = [h.entry for h in hits], [h.score for h in hits]
        else:
            wanted = DEFAULT_TOP_K if limit is None else limit or None
            entries = yield from self._recent(method, scope, wanted)
            entries.reverse()  # newest first
            now = time.time()
            scores = [
                round(0.5 ** (max(now - _created(e), 0.0) / _RECENCY_HALF_LIFE_S), 6)
                for e in entries
            ]
            if min_score is not None:
                kept = [(e, s) for e, s in zip(entries, scores, strict=True) if s >= min_score]
                entries, scores = [e for e, _ in kept], [s for _, s in kept]
        return {"records": self._records(method, entries, scores, vectors)}

    def _timeline(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        scope = self._scope(method, params, default=True)
        if scope is None:
            return {"records": []}
        limit = params.get("limit") or None  # 0: no limit (no max_recall_limit is declared)
        entries = yield from self._recent(method, scope, limit)
        return {"records": self._records(method, entries, None, params.get("embeddings") is True)}

    def _fetch(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        for namespace, key in _addresses(params["key"], self.namespace):
            reply = yield HttpCall("GET", _path(namespace, "entries", key))
            if reply.status == 404:
                continue
            entry = parse(_ENTRY, reply, method, "entry")
            vectors = params.get("embeddings") is True
            return {"record": self._records(method, [entry], None, vectors)[0]}
        return {"record": None}

    # --- writes -------------------------------------------------------------------------

    def _remember(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        """One upsert per record, in order. The draft has no batch, so a batch is **not
        atomic**: every record is checked before the first is sent, but a failure part-way
        leaves the earlier ones written (a retry rewrites them in place: upserts are
        idempotent). A record's key says its entry's address through the mapping; one
        without a key is stored at ``({namespace}, {id})``."""
        bodies: list[tuple[str, bytes]] = []
        for index, raw in enumerate(params["records"]):
            try:
                record = RecordInput.model_validate(raw)
            except ValidationError as exc:
                raise InvalidParams(f"records[{index}]: {exc}", method=method) from None
            for name in _RECORD_FIELDS_REFUSED:
                if _asks(getattr(record, name)):
                    raise _refuse(method, f"records[{index}].{name}")
            try:
                namespace, write = record_input_to_entry_write(record, self.namespace)
            except ValueError as exc:
                raise InvalidParams(
                    f"records[{index}] cannot be stored as an entry: a record must carry a "
                    f"key under a valid namespace ({exc})",
                    method=method,
                ) from None
            body: dict[str, Any] = {"key": write.key, "type": write.type, "value": write.value}
            if write.embedding is not None:
                body["embedding"] = write.embedding
            if write.meta is not None:
                body["meta"] = write.meta.model_dump(mode="json", exclude_unset=True)
            bodies.append((namespace, encode_message(body)))
        ids = []
        for namespace, content in bodies:
            reply = yield HttpCall("POST", _path(namespace, "entries"), body=content)
            entry = parse(_ENTRY, reply, method, "entry", ok=(200, 201))
            ids.append(entry.id)
        return {"ids": ids}

    def _forget(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        where = dict(params.get("where") or {})
        if "key" in where:
            keys = where.pop("key")
            keys = keys if isinstance(keys, list) else [keys]
            named = _single(method, "namespace", where.pop("namespace", None))
            if where or params.get("key_prefix") is not None:
                raise _refuse(method, "forgetting by key with a selector other than namespace")
            if not all(isinstance(key, str) for key in keys):
                return {"forgotten": 0}  # no key is anything but a string
            return (yield from self._forget_keys(method, keys, named))
        if not where and params.get("key_prefix") is None:
            raise InvalidParams(
                "memory/forget needs at least one of ids, query, tier, where, key_prefix",
                method=method,
            )
        scope = self._scope(method, params, default=False)
        if scope is None:
            return {"forgotten": 0}
        reply = yield HttpCall("DELETE", _path(scope.namespace, "entries"), scope.query())
        expect(reply, method, ok=(200, 204))
        count = reply.headers.get(DELETED_COUNT_HEADER, "")
        if not count.isdigit():
            raise ResponseValidationError(
                f"a bulk delete must answer with {DELETED_COUNT_HEADER}, not {count!r}",
                method=method,
            )
        return {"forgotten": int(count)}

    def _forget_keys(self, method: str, keys: list[str], named: Any) -> Steps[Any]:
        """Delete at every address of each key (a draft server may hold distinct entries at
        two of them), or, with ``where.namespace``, at the one address in that namespace."""
        forgotten = 0
        for key in dict.fromkeys(keys):
            addresses = _addresses(key, self.namespace)
            if named is not None:
                addresses = [a for a in addresses if a[0] == named][:1]
            for namespace, name in addresses:
                reply = yield HttpCall("DELETE", _path(namespace, "entries", name))
                if reply.status != 404:
                    expect(reply, method, ok=(200, 204))
                    forgotten += 1
        return {"forgotten": forgotten}

"""One caller's REST view of the store: who it acts as, how a stored record reads as an
entry, and the record filters that select a namespace, a type and tags.

The filters follow the reading rules of :mod:`a2m_types.rest` exactly, so what a list or
query selects is what its entries say about themselves."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from a2m_server.protocol import CallContext, Protocol
from a2m_server.protocol.wire import record_to_wire
from a2m_server.store import RecordFilter, Scope, StoredRecord
from a2m_types import Entry, Record, from_epoch_ms, record_to_entry
from a2m_types.rest import validate_key, validate_namespace

from .errors import RestError

log = logging.getLogger("a2m_server.rest")

__all__ = ["RestView"]


@dataclass
class RestView:
    """The protocol and one connection's context, seen through the REST mapping."""

    proto: Protocol
    ctx: CallContext

    @cached_property
    def owner(self) -> str | None:
        """Whom writes belong to and reads are scoped for (the principal, with auth)."""
        return self.proto.acting_owner(self.ctx, None)

    @property
    def read_scope(self) -> Scope | None:
        return self.proto.read_scope(self.owner)

    @property
    def write_scope(self) -> Scope | None:
        return self.proto.write_scope(self.owner)

    @cached_property
    def kind_of_tier(self) -> dict[str, str] | None:
        """Tier name to kind, for the tiers that have one; ``None`` without ``tiers``."""
        if "tiers" not in self.ctx.capabilities:
            return None
        return {t.name: t.kind for t in self.proto.config.tiers if t.kind is not None}

    @cached_property
    def tier_for_kind(self) -> dict[str, str] | None:
        """The first tier of each kind: where an entry of that type is written."""
        if self.kind_of_tier is None:
            return None
        found: dict[str, str] = {}
        for name, kind in self.kind_of_tier.items():
            found.setdefault(kind, name)
        return found

    def require(self, capability: str, what: str) -> None:
        """``501 CAPABILITY_NOT_SUPPORTED`` unless this connection declares ``capability``."""
        if capability not in self.ctx.capabilities:
            raise RestError.capability(capability, what)

    def entry(self, stored: StoredRecord, *, hint: str | None = None) -> Entry | None:
        """How ``stored`` reads over REST (``hint``: the namespace the caller addressed);
        ``None`` for a record REST cannot address: no namespace in its key, or a namespace
        or key part that REST would refuse (written over JSON-RPC)."""
        wire = record_to_wire(stored, self.ctx.capabilities, embeddings=True)
        entry = record_to_entry(
            Record.model_validate(wire),
            namespace_hint=hint,
            kind_of_tier=self.kind_of_tier,
            updated_at=from_epoch_ms(stored.updated_at),
        )
        if entry is None:
            return None
        try:
            validate_namespace(entry.namespace)
            validate_key(entry.key)
        except ValueError:
            return None
        return entry

    def entry_wire(self, stored: StoredRecord, *, hint: str | None = None) -> dict[str, Any]:
        """The entry's JSON; a record that reads as no entry here is a fault (every filter
        below selects only records with a place over REST)."""
        try:
            entry = self.entry(stored, hint=hint)
            wire = None if entry is None else entry.to_wire()
        except (ValueError, RecursionError) as exc:
            # Metadata that cannot be read or serialised (stored by an earlier release).
            raise UnreadableEntry(stored.id) from exc
        if wire is None:
            raise NoRestAddress(f"record {stored.id} has no REST address")
        return wire

    def readable_entries(
        self, records: Sequence[StoredRecord], *, hint: str | None = None
    ) -> list[tuple[StoredRecord, dict[str, Any]]]:
        """Each record with its entry's JSON, leaving out (and logging) any record whose
        entry cannot be written: one record stored by an earlier release with metadata
        nested past what a serialiser follows must not fail every listing it is in. A
        record written over JSON-RPC at a key REST cannot address (``app/x/``, a segment
        ``..``, a namespace with a capital) is not visible over REST, so it is left out."""
        out = []
        for record in records:
            try:
                out.append((record, self.entry_wire(record, hint=hint)))
            except NoRestAddress:
                continue
            except UnreadableEntry:
                log.error(
                    "record %s left out of a REST answer: its metadata cannot be written "
                    "as JSON (nested too deep, stored by an earlier release?)",
                    record.id,
                )
        return out

    def selector(
        self,
        namespace: str,
        *,
        recursive: bool,
        type_: str | None = None,
        tags: Sequence[str] | None = None,
        scope: Scope | None,
    ) -> RecordFilter:
        """The records whose entries lie in ``namespace`` (or beneath it, ``recursive``),
        have type ``type_`` and carry every tag in ``tags``, within ``scope``."""
        base = RecordFilter(scope=scope, tags_all=list(tags) if tags else None)
        has_uri: bool | None = None
        type_branches: list[RecordFilter] | None = None
        if type_ is not None:
            has_uri, type_branches = self._type_condition(type_)
        # An entry's namespace is its record's metadata.namespace where that is a string
        # the key lies beneath, else everything before the key's last "/" (as
        # split_record_key reads it). Beneath this namespace, a stated namespace the key
        # lies beneath is this one, one below it, or one of its ancestors: those last are
        # another namespace's entries (key "a/x/k" stated in "a" is the entry "x/k" of "a").
        # (Inside any_of, as every condition here: a caller's where fills ``where``.)
        not_above = {"namespace": {"$nin": ancestors(namespace)}} if "/" in namespace else None
        if recursive:
            beneath = RecordFilter(where=not_above, any_of=type_branches)
            return base.with_(key_under=namespace, has_uri=has_uri, any_of=[beneath])
        exact = [
            # Written over REST: the namespace is stated.
            RecordFilter(key_under=namespace, where={"namespace": namespace}),
            # Otherwise the namespace is everything before the last "/": a key one segment
            # beneath, unless its stated namespace is an ancestor the key lies beneath.
            RecordFilter(key_child_of=namespace, where=not_above),
        ]
        if type_branches is not None:
            exact = [branch.with_(any_of=type_branches) for branch in exact]
        return base.with_(has_uri=has_uri, any_of=exact)

    def _type_condition(self, type_: str) -> tuple[bool, list[RecordFilter] | None]:
        """``entry_type``'s rule as a filter: a uri makes ``external``; else the tier's
        kind decides; in a tier without one, ``metadata.type`` (absent reads ``semantic``)."""
        if type_ == "external":
            return True, None
        # A stated type that names no kind (absent, or "external" without a uri) reads semantic.
        stated: list[Any] = [type_, None, "external"] if type_ == "semantic" else [type_]
        kinds = self.kind_of_tier
        if kinds is None:
            return False, [RecordFilter(where={"type": stated})]
        kinded = [name for name, kind in kinds.items() if kind == type_]
        kindless: list[Any] = [t.name for t in self.proto.config.tiers if t.name not in kinds]
        return False, [
            RecordFilter(tiers=kinded),
            RecordFilter(where={"tier": [*kindless, None], "type": stated}),
        ]


def ancestors(namespace: str) -> list[str]:
    """The namespaces above ``namespace``, nearest last: ``a/b/c`` → ``a``, ``a/b``."""
    parts = namespace.split("/")
    return ["/".join(parts[:n]) for n in range(1, len(parts))]


class NoRestAddress(RuntimeError):
    """A stored record whose key names no REST entry (written over JSON-RPC)."""


class UnreadableEntry(RestError):
    """A stored record whose entry cannot be serialised (metadata nested too deep)."""

    def __init__(self, record_id: str) -> None:
        super().__init__(
            "BACKEND_ERROR",
            f"record {record_id} cannot be read: its metadata nests deeper than this server "
            "serialises (it was stored before metadata depth was limited); "
            "forget it or rewrite it",
            data={"id": record_id},
        )

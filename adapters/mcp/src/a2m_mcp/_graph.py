"""The knowledge graph of ``@modelcontextprotocol/server-memory``, kept as A2M records.

Every fact is a record of its own at a key derived from what it says, so two processes
writing the same graph never overwrite each other's work: an entity is
``<prefix>/entities/<h(name)>``, each of its observations
``<prefix>/observations/<h(name)>/<h(text)>``, each relation
``<prefix>/relations/<h(from)>/<h(type, to)>`` (``h`` a SHA-256 digest). Writing a fact that
exists already rewrites the same key with the same content, which is why concurrent
writers lose nothing and duplicate nothing. Records read as ordinary memories in every
framework: the content is a sentence (``Alice (person)``, ``Alice: drinks tea``,
``Alice works_at Acme``) and ``metadata`` carries the graph fields (``kg_kind``,
``kg_entity``, ``kg_type``, ``kg_observation``, ``kg_from``, ``kg_to``, ``kg_relation``).

A2M calls per tool: ``create_entities`` 2 (one existence check, one batch write; with at
most :data:`FEW_NAMES` names, the check is one call per name); ``create_relations`` 2 (the
check looks up the relations named, by key, one call per ``max_recall_limit`` of them,
however many their entities hold); ``add_observations`` 3 (the entities, as
``create_entities`` checks them, then the observations named, by key, as relations are);
``delete_entities`` 4; ``delete_observations`` and ``delete_relations`` 1 per
:data:`DELETIONS_PER_CALL` items where the server runs ``$or`` (else 1 per item);
``read_graph``, ``search_nodes``, ``open_nodes`` one ``memory/events`` poll,
and one ``memory/timeline`` reading the records written since the last call (the first
call: one per :data:`PAGE_SIZE` graph records, or the server's ``max_recall_limit`` where
that is smaller). Writes of more than the server's ``max_records_per_call`` records go in
several batches, in order; a batch the server refuses leaves the ones before it written,
each fact whole, and calling again adds the rest (a fact already there is skipped).

On a server that pages no timeline by cursor (a plain 0.1 server), a read is one
``memory/timeline``: the whole graph where the server declares no ``max_recall_limit``;
where it declares one and the graph may hold more, :class:`GraphTooLarge` rather than a
graph silently missing facts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
from typing_extensions import TypedDict

from a2m import AsyncA2MClient, ForgottenEvent, PromotedEvent, Record, WrittenEvent
from a2m.adapter_support import ServerLayout, drive_async, remember_whole

PAGE_SIZE = 1000
"""Records per ``memory/timeline`` page when the graph is read."""

EVENT_PAGE = 1000
"""Events per ``memory/events`` poll when bringing the kept graph up to date."""

MAX_EVENT_PAGES = 5
"""Past this many pages of events since the last read, the graph is read again whole."""

FEW_NAMES = 8
"""Up to this many names, a write's existence check looks each one up under its own key."""

DELETIONS_PER_CALL = 100
"""Relations (or entities' observations) one ``memory/forget`` deletes, as one ``$or``
(the most where objects one ``$or`` list may hold)."""


class Entity(TypedDict):
    """A node: its unique name, its type and what is known about it, oldest first."""

    name: str
    entityType: str
    observations: list[str]


# A directed edge between two entity names, in active voice; the upstream field names,
# so a client switches servers without a change (``from`` is a keyword: functional form).
Relation = TypedDict("Relation", {"from": str, "to": str, "relationType": str})


class Graph(TypedDict):
    """Entities and the relations among them, as ``read_graph`` returns them."""

    entities: list[Entity]
    relations: list[Relation]


class ObservationAdded(TypedDict):
    """The observations ``add_observations`` actually added to one entity."""

    entityName: str
    addedObservations: list[str]


DURABLE_TIER = "semantic"
"""The tier graph records and observations go to where the store has one: facts, not turns."""


async def durable_tier(client: AsyncA2MClient) -> str | None:
    """:data:`DURABLE_TIER` when the store declares tiers and has it, else ``None`` (the
    store's default tier)."""
    description = client.description or await client.describe()
    if "tiers" not in description.capabilities:
        return None
    names = {tier.name for tier in description.tiers or []}
    return DURABLE_TIER if DURABLE_TIER in names else None


class EntityNotFound(LookupError):
    """``add_observations`` named an entity the graph does not hold."""


class GraphTooLarge(RuntimeError):
    """The graph holds more records than the server returns in one call, and the server
    cannot page through them (it declares no ``timeline.cursor``): answering from what
    one call returns would be a different graph."""


def digest(*parts: str) -> str:
    """A short, fixed-length key segment for arbitrary text (names may hold ``/``).

    Parts are ended by NUL, which keeps every key written before; where a part holds NUL
    itself that would be ambiguous (``("x\\0y", "z")`` and ``("x", "y\\0z")``), so such
    parts are length-prefixed after a byte UTF-8 never holds instead."""
    h = hashlib.sha256()
    if len(parts) > 1 and any("\x00" in part for part in parts):
        h.update(b"\xff")
        for part in parts:
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
        return h.hexdigest()[:32]
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


def relation(source: str, relation_type: str, target: str) -> Relation:
    """A relation in the upstream shape (``from`` is a Python keyword)."""
    return {"from": source, "to": target, "relationType": relation_type}


class KnowledgeGraph:
    """The nine knowledge-graph operations over an A2M client, under ``prefix``.

    ``provenance`` (``source_framework``, ``source_agent``…) is added to every record's
    metadata and ``session`` to every record. The client is the caller's: never closed
    here."""

    def __init__(
        self,
        client: AsyncA2MClient,
        prefix: str,
        *,
        namespace: str | None = None,
        provenance: Mapping[str, Any] | None = None,
        session: str | None = None,
    ) -> None:
        self.client = client
        self.prefix = prefix.rstrip("/")
        self.namespace = namespace
        self.provenance = dict(provenance or {})
        self.session = session
        self._cache: _Snapshot | None = None
        self._lock = anyio.Lock()

    # --- keys and records -----------------------------------------------------------

    def entity_key(self, name: str) -> str:
        return f"{self.prefix}/entities/{digest(name)}"

    def observations_prefix(self, name: str) -> str:
        return f"{self.prefix}/observations/{digest(name)}"

    def observation_key(self, name: str, text: str) -> str:
        return f"{self.observations_prefix(name)}/{digest(text)}"

    def relation_key(self, source: str, relation_type: str, target: str) -> str:
        return f"{self.prefix}/relations/{digest(source)}/{digest(relation_type, target)}"

    def _record(self, key: str, content: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        metadata: dict[str, Any] = {**self.provenance, **fields, "tags": ["knowledge-graph"]}
        if self.namespace is not None:
            metadata["namespace"] = self.namespace
        record: dict[str, Any] = {"content": content, "key": key, "metadata": metadata}
        if self.session is not None:
            record["session"] = self.session
        return record

    def _entity_record(self, entity: Entity) -> dict[str, Any]:
        name, kind = entity["name"], entity["entityType"]
        fields = {"kg_kind": "entity", "kg_entity": name, "kg_type": kind}
        return self._record(self.entity_key(name), f"{name} ({kind})", fields)

    def _observation_record(self, name: str, text: str) -> dict[str, Any]:
        fields = {"kg_kind": "observation", "kg_entity": name, "kg_observation": text}
        return self._record(self.observation_key(name, text), f"{name}: {text}", fields)

    def _relation_record(self, source: str, relation_type: str, target: str) -> dict[str, Any]:
        fields = {
            "kg_kind": "relation",
            "kg_from": source,
            "kg_to": target,
            "kg_relation": relation_type,
        }
        key = self.relation_key(source, relation_type, target)
        return self._record(key, f"{source} {relation_type} {target}", fields)

    async def _layout(self) -> ServerLayout:
        return ServerLayout.of(self.client.description or await self.client.describe())

    async def _write(self, records: Sequence[dict[str, Any]]) -> None:
        """One ``memory/remember`` per ``max_records_per_call`` records, in order, all or
        nothing as upstream's one file write is: where a later call is refused, one
        ``memory/forget`` removes what the earlier ones added (every record is new: the
        tools write only names, observations and relations not yet present)."""
        if not records:
            return
        tier = await durable_tier(self.client)
        if tier is not None:
            records = [{**record, "tier": tier} for record in records]
        layout = await self._layout()
        flow = remember_whole(
            records,
            per_call=layout.max_records_per_call,
            per_read=layout.max_recall_limit,
            capabilities=layout.capabilities,
            fresh=True,  # only names, observations and relations found absent are written
        )
        await drive_async(flow, self.client, settle=True)

    async def _records(
        self, key_prefix: str, where: Mapping[str, Any] | None = None
    ) -> list[Record]:
        """Every record under ``key_prefix`` (matching ``where``), oldest first: by cursor
        where the server pages so; else in one call, or :class:`GraphTooLarge` where that
        call may not hold them all."""
        layout = await self._layout()
        size = min(PAGE_SIZE, layout.max_recall_limit)
        if not await self.client.pages_by_cursor():
            if not layout.recall_limit_declared:  # §4.4: no limit given, every record
                return (await self.client.timeline(key_prefix=key_prefix, where=where)).records
            limit = layout.max_recall_limit
            records = (
                await self.client.timeline(key_prefix=key_prefix, where=where, limit=limit)
            ).records
            if len(records) >= limit:
                raise GraphTooLarge(
                    f"the knowledge graph under {key_prefix!r} may hold more than the {limit} "
                    "records this memory server returns in one call, and the server cannot "
                    "page through them (its describe declares no timeline.cursor): use a "
                    "server that pages timelines, or one with a higher max_recall_limit"
                )
            return records
        found: list[Record] = []
        cursor = ""
        while True:
            page = await self.client.timeline(
                key_prefix=key_prefix, where=where, limit=size, cursor=cursor
            )
            found.extend(page.records)
            if not page.next_cursor or not page.records:
                return found
            cursor = page.next_cursor

    async def _existing_entities(self, names: Iterable[str]) -> set[str]:
        wanted = sorted(set(names))
        if not wanted:
            return set()
        records = await self._by_name(wanted, self.entity_key, "entities", "kg_entity")
        return {str((r.metadata or {}).get("kg_entity")) for r in records}

    async def _by_name(
        self,
        names: Sequence[str],
        key_of: Callable[[str], str],
        folder: str,
        field: str,
    ) -> list[Record]:
        """The records of ``folder`` whose ``field`` is one of ``names``: for a few names,
        one ``memory/timeline`` per name under its own key (an index lookup); for many,
        one filtered listing of the folder."""
        if len(names) > FEW_NAMES:
            return await self._records(f"{self.prefix}/{folder}", {field: list(names)})
        found: list[Record] = []
        for name in names:
            found.extend(await self._records(key_of(name), {field: name}))
        return found

    # --- the nine tools -------------------------------------------------------------

    async def create_entities(self, entities: Sequence[Entity]) -> list[Entity]:
        """Add the entities whose names are new (with their observations); the ones
        added, in the order given. An existing name is left exactly as it is."""
        existing = await self._existing_entities(e["name"] for e in entities)
        added: list[Entity] = []
        records: list[dict[str, Any]] = []
        for entity in entities:
            if entity["name"] in existing:
                continue
            existing.add(entity["name"])
            added.append(entity)
            records.append(self._entity_record(entity))
            seen: set[str] = set()
            for text in entity["observations"]:
                if text not in seen:
                    seen.add(text)
                    records.append(self._observation_record(entity["name"], text))
        await self._write(records)
        return added

    async def create_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        """Add the relations not already present; the ones added, in the order given.
        Like upstream, the entities they name need not exist."""
        triples = list(dict.fromkeys((r["from"], r["relationType"], r["to"]) for r in relations))
        keys = {triple: self._relation_keys(*triple) for triple in triples}
        present = await self._present([key for held in keys.values() for key in held])
        # A record at a relation's key is that relation, but a legacy key may be another's
        # (the ambiguity it was replaced for): there, the record says which it is.
        existing = {
            triple
            for triple, held in keys.items()
            if any(_says(record, triple) for key in held for record in present.get(key, ()))
        }
        added: list[Relation] = []
        records: list[dict[str, Any]] = []
        for item in relations:
            triple = (item["from"], item["relationType"], item["to"])
            if triple in existing:
                continue
            existing.add(triple)
            added.append(relation(*triple))
            records.append(self._relation_record(*triple))
        await self._write(records)
        return added

    async def add_observations(
        self, observations: Sequence[Mapping[str, Any]]
    ) -> list[ObservationAdded]:
        """Add observations to existing entities, skipping those already present. An
        unknown entity fails the whole call before anything is written."""
        names = [str(o["entityName"]) for o in observations]
        existing = await self._existing_entities(names)
        for name in names:
            if name not in existing:
                raise EntityNotFound(f"Entity with name {name} not found")
        facts = [(str(o["entityName"]), str(text)) for o in observations for text in o["contents"]]
        present = await self._present([self.observation_key(*fact) for fact in facts])
        known = {fact for fact in facts if self.observation_key(*fact) in present}
        results: list[ObservationAdded] = []
        records: list[dict[str, Any]] = []
        for item in observations:
            name = str(item["entityName"])
            added: list[str] = []
            for text in item["contents"]:
                if (name, text) in known:
                    continue
                known.add((name, text))
                added.append(text)
                records.append(self._observation_record(name, text))
            results.append({"entityName": name, "addedObservations": added})
        await self._write(records)
        return results

    async def delete_entities(self, names: Sequence[str]) -> None:
        """Delete entities, their observations and every relation touching them."""
        wanted = sorted(set(names))
        if not wanted:
            return
        # Relations first, the entities last: an interrupted delete leaves the entities
        # visible, so repeating the call finishes it.
        relations = f"{self.prefix}/relations"
        await self.client.forget(key_prefix=relations, where={"kg_from": wanted})
        await self.client.forget(key_prefix=relations, where={"kg_to": wanted})
        await self.client.forget(
            key_prefix=f"{self.prefix}/observations", where={"kg_entity": wanted}
        )
        await self.client.forget(key_prefix=f"{self.prefix}/entities", where={"kg_entity": wanted})

    async def delete_observations(self, deletions: Sequence[Mapping[str, Any]]) -> None:
        """Delete the named observations; unknown entities or texts are ignored. One
        ``forget`` per :data:`DELETIONS_PER_CALL` entities where the server runs ``$or``,
        else one per entity."""
        wanted: dict[str, set[str]] = {}
        for item in deletions:
            texts = {str(text) for text in item["observations"]}
            if texts:
                wanted.setdefault(str(item["entityName"]), set()).update(texts)
        selectors = [
            {"kg_entity": name, "kg_observation": sorted(texts)} for name, texts in wanted.items()
        ]
        await self._forget_each(f"{self.prefix}/observations", selectors, "kg_entity")

    async def _forget_each(
        self, key_prefix: str, selectors: list[dict[str, Any]], head: str
    ) -> None:
        """Forget, under ``key_prefix``, the records each of ``selectors`` (metadata
        equalities) matches: as one ``$or`` per :data:`DELETIONS_PER_CALL` of them where
        the server runs it, else one call each, under the key prefix of the name at
        ``head``, which then leaves the where."""
        description = self.client.description or await self.client.describe()
        if description.where is not None and "$or" in description.where.operators:
            for start in range(0, len(selectors), DELETIONS_PER_CALL):
                chunk = selectors[start : start + DELETIONS_PER_CALL]
                await self.client.forget(key_prefix=key_prefix, where={"$or": chunk})
            return
        for selector in selectors:
            where = {name: value for name, value in selector.items() if name != head}
            await self.client.forget(
                key_prefix=f"{key_prefix}/{digest(selector[head])}/", where=where
            )

    async def delete_relations(self, relations: Sequence[Relation]) -> None:
        """Delete the given relations; ones not present are ignored. A relation is found
        by what it says (``kg_from``, ``kg_relation``, ``kg_to``), not by its key, so one
        stored under a key of an earlier release goes too. A2M calls: as
        :meth:`delete_observations`."""
        triples = dict.fromkeys((r["from"], r["relationType"], r["to"]) for r in relations)
        selectors = [
            {"kg_from": source, "kg_relation": relation_type, "kg_to": target}
            for source, relation_type, target in triples
        ]
        await self._forget_each(f"{self.prefix}/relations", selectors, "kg_from")

    async def read_graph(self) -> Graph:
        """The whole graph, entities and relations in the order they were created."""
        snapshot = await self._snapshot()
        return _graph(snapshot.entities, snapshot.relations)

    async def search_nodes(self, query: str) -> Graph:
        """Entities whose name, type or an observation holds ``query`` (any case), with
        every relation touching one of them."""
        snapshot = await self._snapshot()
        needle = query.lower()
        found = [
            e
            for e in snapshot.entities
            if needle in e["name"].lower()
            or needle in e["entityType"].lower()
            or any(needle in o.lower() for o in e["observations"])
        ]
        return _with_relations(found, snapshot.relations)

    async def open_nodes(self, names: Sequence[str]) -> Graph:
        """The named entities, with every relation touching one of them."""
        snapshot = await self._snapshot()
        wanted = set(names)
        found = [e for e in snapshot.entities if e["name"] in wanted]
        return _with_relations(found, snapshot.relations)

    # --- the graph as last read, kept while the store's event log says it holds -------

    async def _snapshot(self) -> _Snapshot:
        """The graph, read whole only once: on a store with ``events``, one
        ``memory/events`` poll tells which records under the prefix any process wrote or
        removed since, and only those written are read (one ``memory/timeline``). A reset
        log, an event it cannot place (a consolidation…) or more than
        :data:`MAX_EVENT_PAGES` pages of events mean a whole read again. On a store
        without ``events`` every call reads the graph whole."""
        async with self._lock:
            cached = self._cache
            if cached is not None and await self._catch_up(cached):
                return cached
            self._cache = None
            head = await self._head()
            snapshot = _Snapshot.of(await self._records(self.prefix), head)
            if head is not None:
                self._cache = snapshot
            return snapshot

    async def _head(self) -> str | None:
        description = self.client.description or await self.client.describe()
        if "events" not in description.capabilities:
            return None
        return (await self.client.events()).cursor

    def _in_graph(self, key: str | None) -> bool:
        return key is not None and (key == self.prefix or key.startswith(self.prefix + "/"))

    async def _catch_up(self, snapshot: _Snapshot) -> bool:
        """Bring ``snapshot`` up to the log's head; ``False`` when it cannot be."""
        cursor = snapshot.cursor
        written: set[str] = set()
        removed: set[str] = set()
        for _ in range(MAX_EVENT_PAGES):
            page = await self.client.events(cursor, limit=EVENT_PAGE)
            if page.reset:
                return False
            for event in page.events:
                if isinstance(event, WrittenEvent):
                    if self._in_graph(event.key):
                        written.add(event.id)
                        removed.discard(event.id)
                elif isinstance(event, ForgottenEvent):
                    if event.ids is None:
                        return False
                    for gone in event.ids:
                        if gone in written or gone in snapshot.records:
                            written.discard(gone)
                            removed.add(gone)
                elif not isinstance(event, PromotedEvent):
                    # Consolidation, summaries, anything unknown: read it all again.
                    return False
            cursor = page.cursor
            if not page.more:
                break
        else:
            return False
        fresh = await self._records(self.prefix, {"id": sorted(written)}) if written else []
        # A record written and then removed before this read is simply not found.
        removed |= written - {record.id for record in fresh}
        snapshot.apply(fresh, removed, cursor)
        return True

    # --- reads the writes need -------------------------------------------------------

    def _relation_keys(self, source: str, relation_type: str, target: str) -> list[str]:
        """The keys a relation may be stored at: its own, and, for parts holding NUL, the
        key releases before the length-prefixed digest gave it."""
        keys = [self.relation_key(source, relation_type, target)]
        if "\x00" in relation_type + target:
            legacy = hashlib.sha256()
            for part in (relation_type, target):
                legacy.update(part.encode("utf-8") + b"\x00")
            keys.append(f"{self.prefix}/relations/{digest(source)}/{legacy.hexdigest()[:32]}")
        return keys

    async def _present(self, keys: Sequence[str]) -> dict[str, list[Record]]:
        """The records this caller reads at ``keys``: the facts a write names, looked up by
        their own keys (one ``memory/timeline`` per ``max_recall_limit`` keys), however many
        facts their entities already hold."""
        wanted = list(dict.fromkeys(keys))
        step = (await self._layout()).max_recall_limit
        found: dict[str, list[Record]] = {}
        for start in range(0, len(wanted), step):
            chunk = wanted[start : start + step]
            page = await self.client.timeline(
                key_prefix=self.prefix, where={"key": chunk}, limit=step
            )
            for record in page.records:
                if record.key is not None:
                    found.setdefault(record.key, []).append(record)
        return found


def _says(record: Record, triple: tuple[str, str, str]) -> bool:
    """Whether ``record`` holds the relation ``triple`` (from, type, to)."""
    meta = record.metadata or {}
    return (meta.get("kg_from"), meta.get("kg_relation"), meta.get("kg_to")) == triple


@dataclass
class _Snapshot:
    """The graph's records as of ``cursor`` (a position in the store's event log), in
    creation order, and the entities and relations they make."""

    records: dict[str, tuple[tuple[datetime, int], Record]]
    cursor: str | None
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    written: int = 0

    @classmethod
    def of(cls, records: Sequence[Record], cursor: str | None) -> _Snapshot:
        ordered = {r.id: ((r.created_at, n), r) for n, r in enumerate(records)}
        snapshot = cls(ordered, cursor, written=len(records))
        snapshot.rebuild()
        return snapshot

    def apply(self, fresh: Sequence[Record], removed: Iterable[str], cursor: str | None) -> None:
        """Take in records written (a rewritten key keeps its place) and drop removed ones."""
        changed = bool(fresh)
        for record in fresh:
            known = self.records.get(record.id)
            if known is None:
                self.written += 1
                place = (record.created_at, self.written)
            else:
                place = known[0]
            self.records[record.id] = (place, record)
        for gone in removed:
            changed = self.records.pop(gone, None) is not None or changed
        self.cursor = cursor
        if changed:
            self.rebuild()

    def rebuild(self) -> None:
        entities: dict[str, Entity] = {}
        observations: dict[str, list[str]] = {}
        relations: list[Relation] = []
        for _, record in sorted(self.records.values(), key=lambda item: item[0]):
            meta = record.metadata or {}
            kind = meta.get("kg_kind")
            if kind == "entity":
                name = str(meta["kg_entity"])
                entities[name] = {
                    "name": name,
                    "entityType": str(meta["kg_type"]),
                    "observations": [],
                }
            elif kind == "observation":
                observations.setdefault(str(meta["kg_entity"]), []).append(
                    str(meta["kg_observation"])
                )
            elif kind == "relation":
                relations.append(
                    relation(str(meta["kg_from"]), str(meta["kg_relation"]), str(meta["kg_to"]))
                )
        for name, entity in entities.items():
            entity["observations"] = observations.get(name, [])
        self.entities = list(entities.values())
        self.relations = relations


def _graph(entities: Iterable[Entity], relations: Iterable[Relation]) -> Graph:
    """Copies, so a caller changing the result never changes the kept snapshot."""
    return {
        "entities": [
            {
                "name": e["name"],
                "entityType": e["entityType"],
                "observations": list(e["observations"]),
            }
            for e in entities
        ],
        "relations": [relation(r["from"], r["relationType"], r["to"]) for r in relations],
    }


def _with_relations(entities: list[Entity], relations: list[Relation]) -> Graph:
    names = {e["name"] for e in entities}
    touching = [r for r in relations if r["from"] in names or r["to"] in names]
    return _graph(entities, touching)

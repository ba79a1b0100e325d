"""The MCP server: A2M memory tools, the seed's ``remember_observation``, the nine
knowledge-graph tools of ``@modelcontextprotocol/server-memory``, resources and a prompt,
all over one :class:`~a2m.AsyncA2MClient`.

A2M calls per tool: ``remember`` 1, ``recall`` 1, ``fetch`` ≤ 2, ``timeline`` 1,
``forget`` ≤ 2, ``remember_observation`` 1 with the server's ``observations`` capability,
else 2 (read the stored observation, write it back with its weight raised); the graph
tools as :class:`~a2m_mcp.KnowledgeGraph` states. The first call also sends one ``memory/describe``.

Writes and deletes land under the configured namespace only; reads see the whole store,
because shared memory is the point. Every record carries its provenance in ``metadata``
(``source_framework`` ``"mcp"``, ``source_agent``, ``namespace``, ``tags``) and the
configured ``session``. The model never names a tenant: the organisation, project and
agent an observation belongs to come from :class:`MemoryConfig` (or, over an
authenticated A2M connection, from the server's principal)."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from a2m import A2MError, AsyncA2MClient, Record

from ._graph import (
    Entity,
    EntityNotFound,
    Graph,
    KnowledgeGraph,
    ObservationAdded,
    Relation,
    durable_tier,
)

SOURCE_FRAMEWORK = "mcp"
MAX_LIMIT = 100
"""The most records one ``recall`` or ``timeline`` tool call returns."""
TAG_OVERFETCH = 10
MAX_CANDIDATES = 1000
"""A ``recall`` filtered by tags ranks up to 10 times ``limit`` (at most 1000) candidates."""
OBSERVATIONS_CAPABILITY = "observations"
"""The A2M capability under which a server keeps observations itself."""
_SEGMENT = re.compile(r"^[a-z0-9_-]+(/[a-z0-9_-]+)*$")
Text = Annotated[str, Field(min_length=1)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many candidates at most.")]
_READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
_DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)


@dataclass(frozen=True)
class MemoryConfig:
    """Who writes through this server, and where.

    ``namespace`` scopes every write and delete (keys under ``<namespace>/``);
    ``graph_prefix`` is where the knowledge graph lives (default ``<namespace>/graph``),
    shared by every server given the same one. ``agent``, ``org`` and ``project`` are the
    tenant an observation belongs to and the provenance of every record; ``session`` the
    conversation records belong to."""

    namespace: str = "mcp"
    agent: str | None = None
    org: str | None = None
    project: str | None = None
    session: str | None = None
    graph_prefix: str | None = None

    def __post_init__(self) -> None:
        if not _SEGMENT.match(self.namespace):
            raise ValueError(
                f"namespace must be lowercase [a-z0-9_-] segments joined by '/', "
                f"not {self.namespace!r}"
            )

    @property
    def graph(self) -> str:
        return (self.graph_prefix or f"{self.namespace}/graph").rstrip("/")

    def provenance(self) -> dict[str, Any]:
        stated: dict[str, Any] = {"source_framework": SOURCE_FRAMEWORK}
        if self.agent is not None:
            stated["source_agent"] = self.agent
        return stated


# --- structured results -------------------------------------------------------------


class Memory(BaseModel):
    """One stored memory as a tool returns it."""

    id: str
    content: str
    key: str | None = None
    tier: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str
    score: float | None = None


class RememberOut(BaseModel):
    id: str
    key: str


class RecallOut(BaseModel):
    memories: list[Memory]


class TimelineOut(BaseModel):
    memories: list[Memory]
    next_cursor: str | None = None


class FetchOut(BaseModel):
    memory: Memory | None


class ForgetOut(BaseModel):
    forgotten: int
    confirmed: bool
    candidates: list[Memory] = Field(default_factory=list)


class ObservationOut(BaseModel):
    id: str
    weight: float
    duplicate: bool


class EntitiesOut(BaseModel):
    entities: list[Entity]


class RelationsOut(BaseModel):
    relations: list[Relation]


class ObservationsOut(BaseModel):
    results: list[ObservationAdded]


class GraphOut(BaseModel):
    entities: list[Entity]
    relations: list[Relation]


class DeletedOut(BaseModel):
    success: bool
    message: str


class ObservationInput(BaseModel):
    entityName: str = Field(description="The name of the entity to add the observations to")
    contents: list[str] = Field(description="An array of observation contents to add")


class ObservationDeletion(BaseModel):
    entityName: str = Field(description="The name of the entity containing the observations")
    observations: list[str] = Field(description="An array of observations to delete")


def _memory(record: Record) -> Memory:
    metadata = dict(record.metadata or {})
    tags = metadata.get("tags")
    return Memory(
        id=record.id,
        content=record.content,
        key=record.key,
        tier=record.tier,
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
        metadata=metadata,
        created_at=record.created_at.isoformat(),
        score=record.score,
    )


def _lines(memories: Sequence[Memory], empty: str) -> str:
    if not memories:
        return empty
    lines = []
    for number, m in enumerate(memories, 1):
        details = [f"id={m.id}"]
        if m.key:
            details.append(f"key={m.key}")
        if m.tier:
            details.append(f"tier={m.tier}")
        if m.tags:
            details.append("tags=" + ",".join(m.tags))
        if m.score is not None:
            details.append(f"score={m.score:.3f}")
        details.append(m.created_at)
        lines.append(f"{number}. {m.content}\n   ({'; '.join(details)})")
    return "\n".join(lines)


def _result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured.model_dump(mode="json"),
    )


def _json(value: Any) -> str:
    # The upstream knowledge-graph server's text: JSON.stringify(value, null, 2).
    return json.dumps(value, indent=2, ensure_ascii=False)


def _refuse(error: A2MError) -> ToolError:
    return ToolError(f"the memory store refused the call: {error}")


def _content_hash(text: str) -> str:
    normalised = " ".join(text.split()).casefold()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


# --- the server ---------------------------------------------------------------------


class A2MTools:
    """The tool bodies, over one client and one configuration (exposed for tests and
    for embedding the tools in another MCP server)."""

    def __init__(self, client: AsyncA2MClient, config: MemoryConfig | None = None) -> None:
        self.client = client
        self.config = config or MemoryConfig()
        self.graph = KnowledgeGraph(
            client,
            self.config.graph,
            namespace=self.config.namespace,
            provenance=self.config.provenance(),
            session=self.config.session,
        )

    # --- helpers ---------------------------------------------------------------------

    def _key(self, key: str) -> str:
        key = key.strip()
        if not key or key.startswith("/") or "//" in key:
            raise ToolError(f"key must be a non-empty path like 'user/city', not {key!r}")
        return f"{self.config.namespace}/{key}"

    def _record(
        self, content: str, key: str, metadata: Mapping[str, Any], tier: str | None
    ) -> dict[str, Any]:
        record: dict[str, Any] = {"content": content, "key": key, "metadata": dict(metadata)}
        if tier is not None:
            record["tier"] = tier
        if self.config.session is not None:
            record["session"] = self.config.session
        return record

    def _stamped(
        self, metadata: Mapping[str, Any] | None, tags: Sequence[str] | None
    ) -> dict[str, Any]:
        # Provenance is the server's to state: a model cannot overwrite it.
        stamped = dict(metadata or {})
        stamped.update(self.config.provenance())
        stamped["namespace"] = self.config.namespace
        if tags:
            stamped["tags"] = list(dict.fromkeys(tags))
        return stamped

    # --- A2M tools -------------------------------------------------------------------

    async def remember(
        self,
        content: str,
        key: str | None = None,
        tags: list[str] | None = None,
        tier: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> CallToolResult:
        if not content.strip():
            raise ToolError("content must not be empty")
        full_key = self._key(key) if key is not None else self._key(f"memories/{uuid.uuid4().hex}")
        record = self._record(content, full_key, self._stamped(metadata, tags), tier)
        try:
            result = await self.client.remember([record])
        except A2MError as error:
            raise _refuse(error) from None
        out = RememberOut(id=result.ids[0], key=full_key)
        return _result(f"Remembered memory {out.id} at key {full_key}.", out)

    async def recall(
        self, query: str, limit: int = 10, filters: dict[str, Any] | None = None
    ) -> CallToolResult:
        if not query.strip():
            raise ToolError("query must not be empty")
        where = dict(filters or {})
        wanted = where.pop("tags", None)
        tags = [wanted] if isinstance(wanted, str) else list(wanted or [])
        if not all(isinstance(tag, str) for tag in tags):
            raise ToolError("filters.tags must be a tag or a list of tags")
        # A store matches metadata by equality; tags (a list) are matched here, among
        # more candidates than asked for.
        fetch = min(max(limit * TAG_OVERFETCH, limit), MAX_CANDIDATES) if tags else limit
        try:
            result = await self.client.recall(query, limit=fetch, where=where or None)
        except A2MError as error:
            raise _refuse(error) from None
        memories = [_memory(r) for r in result.records]
        if tags:
            memories = [m for m in memories if set(tags) <= set(m.tags)][:limit]
        return _result(_lines(memories, "No matching memories."), RecallOut(memories=memories))

    async def fetch(self, key: str) -> CallToolResult:
        full_key = self._key(key)
        try:
            found = (await self.client.fetch(full_key)).record
            if found is None:
                # Reads are not fenced in: a key of another namespace is read as given.
                found = (await self.client.fetch(key.strip())).record
        except A2MError as error:
            raise _refuse(error) from None
        memory = _memory(found) if found is not None else None
        text = _lines([memory], "") if memory is not None else f"Nothing is stored at key {key}."
        return _result(text, FetchOut(memory=memory))

    async def timeline(self, limit: int = 20, cursor: str | None = None) -> CallToolResult:
        try:
            if cursor is None:
                page = await self.client.timeline(limit=limit)
            else:
                page = await self.client.timeline(limit=limit, cursor=cursor)
        except A2MError as error:
            raise _refuse(error) from None
        memories = [_memory(r) for r in page.records]
        next_cursor = getattr(page, "next_cursor", None)
        text = _lines(memories, "No memories yet.")
        if next_cursor:
            text += f"\n(more: call timeline with cursor={next_cursor!r})"
        return _result(text, TimelineOut(memories=memories, next_cursor=next_cursor))

    async def forget(
        self,
        ids: list[str] | None = None,
        key: str | None = None,
        query: str | None = None,
        confirm: bool = False,
        limit: int = 10,
    ) -> CallToolResult:
        if not ids and key is None and not (query and query.strip()):
            raise ToolError("say what to forget: ids, a key, or a query")
        scope = self.config.namespace
        try:
            if query and query.strip():
                found = await self.client.recall(query, limit=limit, key_prefix=scope)
                candidates = [_memory(r) for r in found.records]
                if not confirm:
                    text = (
                        _lines(candidates, "No memory matches; nothing would be forgotten.")
                        + "\nNothing was forgotten yet: call forget again with the same query "
                        "and confirm=true to delete these, or pass their ids."
                    )
                    return _result(
                        text, ForgetOut(forgotten=0, confirmed=False, candidates=candidates)
                    )
                ids = [*(ids or []), *(m.id for m in candidates)]
            selected = list(ids or [])
            if key is not None:
                record = (await self.client.fetch(self._key(key))).record
                if record is not None:
                    selected.append(record.id)
            forgotten = 0
            if selected:
                # key_prefix keeps deletes inside this server's namespace.
                done = await self.client.forget(ids=list(dict.fromkeys(selected)), key_prefix=scope)
                forgotten = done.forgotten
        except A2MError as error:
            raise _refuse(error) from None
        text = f"Forgot {forgotten} memor{'y' if forgotten == 1 else 'ies'}."
        return _result(text, ForgetOut(forgotten=forgotten, confirmed=True))

    async def remember_observation(
        self,
        content: str,
        classification: str = "note",
        filePath: str | None = None,
        tags: list[str] | None = None,
        weight: float = 1.0,
    ) -> CallToolResult:
        if not content.strip():
            raise ToolError("content must not be empty")
        classification = (classification or "note").strip() or "note"
        native = getattr(self.client, "remember_observation", None)
        try:
            if not self._negotiated():
                await self.client.describe()
            if native is not None and self.client.supports(OBSERVATIONS_CAPABILITY):
                done = await native(
                    content,
                    classification=classification,
                    file_path=filePath,
                    tags=tags,
                    weight=weight,
                )
                out = ObservationOut(
                    id=str(done.id),
                    weight=float(done.weight),
                    duplicate=bool(getattr(done, "duplicate", False)),
                )
            else:
                out = await self._observation_record(
                    content, classification, filePath, tags, weight
                )
        except A2MError as error:
            raise _refuse(error) from None
        verb = (
            "Raised the weight of the identical observation"
            if out.duplicate
            else "Stored observation"
        )
        return _result(f"{verb} {out.id} (weight {out.weight:g}).", out)

    def _negotiated(self) -> bool:
        try:
            _ = self.client.capabilities
        except RuntimeError:
            return False
        return True

    def _tenant(self) -> list[str]:
        c = self.config
        return [c.org or "_", c.project or "_", c.agent or "_"]

    async def _observation_record(
        self,
        content: str,
        classification: str,
        file_path: str | None,
        tags: list[str] | None,
        weight: float,
    ) -> ObservationOut:
        """An ordinary record holding the observation's fields in ``metadata``, at a key
        derived from the tenant and the content hash, so writing the same fact again
        raises the stored weight instead of adding a duplicate."""
        digest = _content_hash(content)
        key = f"{self.config.namespace}/observations/{'/'.join(self._tenant())}/{digest[:32]}"
        key = "/".join(_safe(part) for part in key.split("/"))
        existing = (await self.client.fetch(key)).record
        stored = dict((existing.metadata or {}).get("observation") or {}) if existing else {}
        total = float(stored.get("weight", 0.0)) + weight
        merged_tags = list(dict.fromkeys([*(stored.get("tags") or []), *(tags or [])]))
        observation = {
            # A duplicate keeps what it was first classified as; only its weight grows.
            "classification": stored.get("classification", classification.split(".")[0]),
            "kind": stored.get("kind", classification),
            "filePath": file_path if file_path is not None else stored.get("filePath"),
            "tags": merged_tags,
            "weight": total,
            "source": "explicit",
            "org": self.config.org,
            "project": self.config.project,
            "agent": self.config.agent,
            "content_hash": digest,
        }
        metadata = self._stamped({"observation": observation, "kind": "observation"}, merged_tags)
        tier = await durable_tier(self.client)
        result = await self.client.remember([self._record(content, key, metadata, tier)])
        return ObservationOut(id=result.ids[0], weight=total, duplicate=existing is not None)

    # --- resources and prompt --------------------------------------------------------

    async def recent_text(self, limit: int = 20) -> str:
        page = await self.client.timeline(limit=limit)
        memories = [_memory(r) for r in reversed(page.records)]
        return _lines(memories, "No memories yet.")

    async def observations_text(self, agent: str, limit: int = 100) -> str:
        prefix = f"{self.config.namespace}/observations"
        page = await self.client.timeline(
            limit=limit, key_prefix=prefix, where={"source_agent": agent}
        )
        memories = [_memory(r) for r in reversed(page.records)]
        return _lines(memories, f"No observations from agent {agent}.")

    async def prompt_text(self, topic: str, limit: int = 8) -> str:
        found = await self.client.recall(topic, limit=limit)
        if not found.records:
            return f"No stored memory relates to: {topic}"
        facts = "\n".join(f"- {r.content}" for r in found.records)
        return f"Relevant memories about {topic!r}, most relevant first:\n{facts}"


def _safe(part: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_-]", "-", part.lower())
    return cleaned or "_"


def build_server(
    client: AsyncA2MClient,
    config: MemoryConfig | None = None,
    *,
    name: str = "a2m-memory",
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer[Any]:
    """An MCP server whose tools, resources and prompt all read and write the A2M store
    behind ``client`` (which the caller owns and closes). ``log_level`` is the MCP SDK's
    (on stderr; its ``INFO`` logs every request)."""
    tools = A2MTools(client, config)
    graph = tools.graph
    server: MCPServer[Any] = MCPServer(
        name,
        log_level=log_level,
        instructions=(
            "Shared long-term memory. Use recall before answering questions about past work, "
            "remember to keep durable facts, remember_observation for conventions and "
            "decisions learned while working; the knowledge-graph tools keep entities, "
            "relations and observations."
        ),
    )

    @server.tool(
        description=(
            "Store a memory in the shared store. Give a `key` (like 'user/city') to keep one "
            "current value for a fact: writing the same key again replaces it. `tags` help "
            "later filtering; `tier` is one of the store's tiers (working, episodic, semantic, "
            "procedural); `metadata` is any JSON object kept with the memory."
        ),
        annotations=_WRITE,
    )
    async def remember(
        content: Annotated[
            str, Field(description="The fact or note to remember, as readable text.")
        ],
        key: Annotated[
            str | None,
            Field(
                description="Optional address of the fact, e.g. 'user/city'; rewrites replace it."
            ),
        ] = None,
        tags: Annotated[
            list[str] | None, Field(description="Free-form tags for filtering.")
        ] = None,
        tier: Annotated[
            str | None, Field(description="Memory tier: working, episodic, semantic or procedural.")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Extra JSON fields kept with the memory.")
        ] = None,
    ) -> Annotated[CallToolResult, RememberOut]:
        return await tools.remember(content, key, tags, tier, metadata)

    @server.tool(
        description=(
            "Search the shared memory for what is relevant to `query`, best match first. "
            "`filters` keeps only memories whose fields or metadata equal the given values, "
            '(e.g. {"tier": "semantic"}; a list value means any of); "tags" takes a tag or a '
            "list of tags every result must carry."
        ),
        annotations=_READ_ONLY,
    )
    async def recall(
        query: Annotated[str, Field(min_length=1, description="What you want to know, in words.")],
        limit: Annotated[
            int, Field(ge=1, le=MAX_LIMIT, description="How many memories at most.")
        ] = 10,
        filters: Annotated[
            dict[str, Any] | None, Field(description="Field or metadata equality filters.")
        ] = None,
    ) -> Annotated[CallToolResult, RecallOut]:
        return await tools.recall(query, limit, filters)

    @server.tool(
        description=(
            "Delete memories. Give `ids`, a `key`, or a `query`. With a query, the first call "
            "only lists what would be deleted; call again with confirm=true to delete them. "
            "Only memories written through this server's namespace can be deleted."
        ),
        annotations=_DELETE,
    )
    async def forget(
        ids: Annotated[list[str] | None, Field(description="Ids of memories to delete.")] = None,
        key: Annotated[str | None, Field(description="The key of a memory to delete.")] = None,
        query: Annotated[
            str | None, Field(description="Delete the memories matching this (after confirmation).")
        ] = None,
        confirm: Annotated[
            bool, Field(description="Set true to delete what `query` matches.")
        ] = False,
        limit: Limit = 10,
    ) -> Annotated[CallToolResult, ForgetOut]:
        return await tools.forget(ids, key, query, confirm, limit)

    @server.tool(
        description="Read the memory stored at `key` (as written by remember), or nothing.",
        annotations=_READ_ONLY,
    )
    async def fetch(
        key: Annotated[Text, Field(description="The memory's key, e.g. 'user/city'.")],
    ) -> Annotated[CallToolResult, FetchOut]:
        return await tools.fetch(key)

    @server.tool(
        description=(
            "List memories in the order they were written. Without `cursor`: the most recent "
            '`limit`. With cursor "": the oldest ones, then pass the returned next_cursor to '
            "page forward."
        ),
        annotations=_READ_ONLY,
    )
    async def timeline(
        limit: Annotated[
            int, Field(ge=1, le=MAX_LIMIT, description="How many memories per page.")
        ] = 20,
        cursor: Annotated[
            str | None, Field(description='"" to start at the oldest; a next_cursor to go on.')
        ] = None,
    ) -> Annotated[CallToolResult, TimelineOut]:
        return await tools.timeline(limit, cursor)

    @server.tool(
        description=(
            "Persist a durable fact, learning or convention observed while working. "
            "Identical content raises the stored observation's weight instead of duplicating it."
        ),
        annotations=_WRITE,
    )
    async def remember_observation(
        content: Annotated[
            str,
            Field(description="The durable fact, learning, or convention to persist. Be concise."),
        ],
        classification: Annotated[
            str,
            Field(
                description="Semantic category: pattern, decision, error, tool-use, convention. Defaults to note."
            ),
        ] = "note",
        filePath: Annotated[
            str | None, Field(description="Source file or module this observation concerns.")
        ] = None,
        tags: Annotated[
            list[str] | None, Field(description="Free-form string tags for later filtering.")
        ] = None,
        weight: Annotated[
            float,
            Field(
                gt=0,
                le=1000,
                allow_inf_nan=False,
                description="Retrieval importance (default 1.0). Use >1 for key facts you want surfaced first.",
            ),
        ] = 1.0,
    ) -> Annotated[CallToolResult, ObservationOut]:
        return await tools.remember_observation(content, classification, filePath, tags, weight)

    # --- the knowledge graph, named and shaped as @modelcontextprotocol/server-memory ---

    async def graph_call(coro: Any) -> Any:
        try:
            return await coro
        except EntityNotFound as error:
            raise ToolError(str(error)) from None
        except A2MError as error:
            raise _refuse(error) from None

    @server.tool(
        title="Create Entities",
        description="Create multiple new entities in the knowledge graph",
        annotations=_WRITE,
    )
    async def create_entities(entities: list[Entity]) -> Annotated[CallToolResult, EntitiesOut]:
        added = await graph_call(graph.create_entities(entities))
        return _result(_json(added), EntitiesOut(entities=added))

    @server.tool(
        title="Create Relations",
        description=(
            "Create multiple new relations between entities in the knowledge graph. "
            "Relations should be in active voice"
        ),
        annotations=_WRITE,
    )
    async def create_relations(
        relations: list[Relation],
    ) -> Annotated[CallToolResult, RelationsOut]:
        added = await graph_call(graph.create_relations(relations))
        return _result(_json(added), RelationsOut(relations=added))

    @server.tool(
        title="Add Observations",
        description="Add new observations to existing entities in the knowledge graph",
        annotations=_WRITE,
    )
    async def add_observations(
        observations: list[ObservationInput],
    ) -> Annotated[CallToolResult, ObservationsOut]:
        items = [o.model_dump() for o in observations]
        results = await graph_call(graph.add_observations(items))
        return _result(_json(results), ObservationsOut(results=results))

    def deleted(message: str) -> CallToolResult:
        return _result(message, DeletedOut(success=True, message=message))

    @server.tool(
        title="Delete Entities",
        description="Delete multiple entities and their associated relations from the knowledge graph",
        annotations=_DELETE,
    )
    async def delete_entities(
        entityNames: Annotated[list[str], Field(description="An array of entity names to delete")],
    ) -> Annotated[CallToolResult, DeletedOut]:
        await graph_call(graph.delete_entities(entityNames))
        return deleted("Entities deleted successfully")

    @server.tool(
        title="Delete Observations",
        description="Delete specific observations from entities in the knowledge graph",
        annotations=_DELETE,
    )
    async def delete_observations(
        deletions: list[ObservationDeletion],
    ) -> Annotated[CallToolResult, DeletedOut]:
        await graph_call(graph.delete_observations([d.model_dump() for d in deletions]))
        return deleted("Observations deleted successfully")

    @server.tool(
        title="Delete Relations",
        description="Delete multiple relations from the knowledge graph",
        annotations=_DELETE,
    )
    async def delete_relations(
        relations: Annotated[list[Relation], Field(description="An array of relations to delete")],
    ) -> Annotated[CallToolResult, DeletedOut]:
        await graph_call(graph.delete_relations(relations))
        return deleted("Relations deleted successfully")

    def graph_result(found: Graph) -> CallToolResult:
        return _result(_json(found), GraphOut(**found))

    @server.tool(
        title="Read Graph", description="Read the entire knowledge graph", annotations=_READ_ONLY
    )
    async def read_graph() -> Annotated[CallToolResult, GraphOut]:
        return graph_result(await graph_call(graph.read_graph()))

    @server.tool(
        title="Search Nodes",
        description="Search for nodes in the knowledge graph based on a query",
        annotations=_READ_ONLY,
    )
    async def search_nodes(
        query: Annotated[
            str,
            Field(
                description="The search query to match against entity names, types, and observation content"
            ),
        ],
    ) -> Annotated[CallToolResult, GraphOut]:
        return graph_result(await graph_call(graph.search_nodes(query)))

    @server.tool(
        title="Open Nodes",
        description="Open specific nodes in the knowledge graph by their names",
        annotations=_READ_ONLY,
    )
    async def open_nodes(
        names: Annotated[list[str], Field(description="An array of entity names to retrieve")],
    ) -> Annotated[CallToolResult, GraphOut]:
        return graph_result(await graph_call(graph.open_nodes(names)))

    # --- resources and prompt ---------------------------------------------------------

    @server.resource(
        "a2m://memories/recent",
        name="recent-memories",
        description="The 20 most recent memories in the shared store, newest first.",
        mime_type="text/plain",
    )
    async def recent_memories() -> str:
        return await tools.recent_text()

    @server.resource(
        "a2m://observations/{agent}",
        name="agent-observations",
        description="The observations one agent has recorded, newest first.",
        mime_type="text/plain",
    )
    async def agent_observations(agent: str) -> str:
        return await tools.observations_text(agent)

    @server.resource(
        "memory://knowledge-graph",
        name="knowledge-graph",
        description="The full knowledge graph with all entities and relations",
        mime_type="application/json",
    )
    async def knowledge_graph() -> str:
        return _json(await graph.read_graph())

    @server.prompt(
        name="relevant_memories",
        description="Start a conversation with the stored memories relevant to a topic.",
    )
    async def relevant_memories(topic: str) -> str:
        return await tools.prompt_text(topic)

    return server

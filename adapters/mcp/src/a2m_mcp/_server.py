"""The MCP server: A2M memory tools, the seed's ``remember_observation``, the nine
knowledge-graph tools of ``@modelcontextprotocol/server-memory``, resources and a prompt,
all over one :class:`~a2m.AsyncA2MClient`.

A2M calls per tool: ``remember`` 1, ``recall`` 1 (plus, over an authenticated
connection, one ``memory/fetch`` per key several principals hold among the results until
the caller is known: that key's record is the caller's own), ``fetch`` ≤ 2, ``timeline`` 1,
``forget`` ≤ 3 (ids given: one ``memory/timeline`` finds those of the knowledge graph, which it leaves to the graph tools), ``remember_observation`` 1 where the server offers the ``observations``
extension (``docs/observations.md``: it deduplicates, weighs and audits), else 2 (read the stored observation, write it back with its weight raised); the graph
tools as :class:`~a2m_mcp.KnowledgeGraph` states. The first call also sends one ``memory/describe``.

Writes and deletes land under the configured namespace only; reads see the whole store,
because shared memory is the point. Every record carries its provenance in ``metadata``
(``source_framework`` ``"mcp"``, ``source_agent``, ``namespace``, ``tags``) and the
configured ``session``. The model never names a tenant: the organisation, project and
agent an observation belongs to come from :class:`MemoryConfig` (or, over an
authenticated A2M connection, from the server's principal)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from a2m import A2MError, AsyncA2MClient

from ._graph import (
    Entity,
    EntityNotFound,
    Graph,
    GraphTooLarge,
    Relation,
)
from ._results import (
    DeletedOut,
    EntitiesOut,
    FetchOut,
    ForgetOut,
    GraphOut,
    ObservationDeletion,
    ObservationInput,
    ObservationOut,
    ObservationsOut,
    RecallOut,
    RelationsOut,
    RememberOut,
    TimelineOut,
    json_text,
    tool_error,
    tool_result,
)
from ._tools import MAX_LIMIT, A2MTools, MemoryConfig

Text = Annotated[str, Field(min_length=1)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many candidates at most.")]
_READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
_DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)


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
            "Only memories written through this server's namespace can be deleted; the "
            "knowledge graph changes only through delete_entities, delete_observations and "
            "delete_relations."
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
        except (EntityNotFound, GraphTooLarge) as error:
            raise ToolError(str(error)) from None
        except A2MError as error:
            raise tool_error(error) from None
        except UnicodeEncodeError as error:  # a name's digest: checked before any write
            bad = error.object[error.start : error.end]
            raise ToolError(
                f"names, types, observations and relation types must be text: {bad!r} is a "
                "lone surrogate, which UTF-8 cannot hold; nothing was written"
            ) from None

    @server.tool(
        title="Create Entities",
        description="Create multiple new entities in the knowledge graph",
        annotations=_WRITE,
    )
    async def create_entities(entities: list[Entity]) -> Annotated[CallToolResult, EntitiesOut]:
        added = await graph_call(graph.create_entities(entities))
        return tool_result(json_text(added), EntitiesOut(entities=added))

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
        return tool_result(json_text(added), RelationsOut(relations=added))

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
        return tool_result(json_text(results), ObservationsOut(results=results))

    def deleted(message: str) -> CallToolResult:
        return tool_result(message, DeletedOut(success=True, message=message))

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
        return tool_result(json_text(found), GraphOut(**found))

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
        description=(
            "The observations one agent has recorded, newest first, with those another "
            "project granted marked as transferred."
        ),
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
        return json_text(await graph.read_graph())

    @server.prompt(
        name="relevant_memories",
        description=(
            "Start a conversation with the stored memories relevant to a topic, and the "
            "observations another project granted."
        ),
    )
    async def relevant_memories(topic: str) -> str:
        return await tools.prompt_text(topic)

    return server

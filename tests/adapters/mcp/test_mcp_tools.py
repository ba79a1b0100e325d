"""Every A2M tool, the observation tool, the resources and the prompt, through the real
MCP client in this process; every bad input an ``isError`` result with clear text, the
server still answering afterwards."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_kit import CONFIG, text

from a2m import AsyncA2MClient
from a2m_mcp import MemoryConfig, build_server
from a2m_server.config import LimitsConfig, ObservationsConfig, ServerConfig
from a2m_server.server import A2MServer

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]

A2M_TOOLS = {"remember", "recall", "forget", "fetch", "timeline", "remember_observation"}
GRAPH_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}


async def call(mcp: Client, name: str, **arguments: Any) -> Any:
    result = await mcp.call_tool(name, arguments)
    assert not result.is_error, text(result)
    return result


async def test_every_tool_is_listed_with_a_schema_and_a_description(mcp: Client) -> None:
    tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    assert set(tools) == A2M_TOOLS | GRAPH_TOOLS
    for tool in tools.values():
        assert tool.description, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None, tool.name
    assert tools["remember"].input_schema["required"] == ["content"]
    assert tools["remember_observation"].input_schema["required"] == ["content"]
    observation = tools["remember_observation"].input_schema["properties"]
    assert set(observation) == {"content", "classification", "filePath", "tags", "weight"}
    assert tools["recall"].annotations is not None
    assert tools["recall"].annotations.read_only_hint is True


async def test_remember_then_recall_fetch_and_timeline(mcp: Client, a2m: AsyncA2MClient) -> None:
    written = await call(
        mcp,
        "remember",
        content="the deploy key rotates every 90 days",
        key="ops/deploy-key",
        tags=["ops", "security"],
        metadata={"ticket": "OPS-7", "source_framework": "forged"},
    )
    assert written.structured_content["key"] == "mcp/ops/deploy-key"
    stored = (await a2m.fetch("mcp/ops/deploy-key")).record
    assert stored is not None
    assert stored.id == written.structured_content["id"]
    meta = stored.metadata or {}
    # Provenance is the server's: the model's metadata cannot overwrite it.
    assert meta["source_framework"] == "mcp"
    assert meta["source_agent"] == "coder"
    assert meta["tags"] == ["ops", "security"]
    assert meta["ticket"] == "OPS-7"

    await call(mcp, "remember", content="lunch is at noon")
    found = await call(mcp, "recall", query="how often does the deploy key rotate?", limit=1)
    memories = found.structured_content["memories"]
    assert [m["content"] for m in memories] == ["the deploy key rotates every 90 days"]
    assert "the deploy key rotates every 90 days" in text(found)

    fetched = await call(mcp, "fetch", key="ops/deploy-key")
    assert fetched.structured_content["memory"]["id"] == stored.id
    # Reads are not fenced in: a full key of the store is read as given.
    assert (await call(mcp, "fetch", key="mcp/ops/deploy-key")).structured_content["memory"]
    missing = await call(mcp, "fetch", key="ops/unknown")
    assert missing.structured_content == {"memory": None}
    assert "Nothing is stored" in text(missing)

    # The same key again replaces the fact instead of adding a second one.
    await call(
        mcp, "remember", content="the deploy key rotates every 30 days", key="ops/deploy-key"
    )
    again = await call(mcp, "fetch", key="ops/deploy-key")
    assert again.structured_content["memory"]["content"] == "the deploy key rotates every 30 days"
    assert again.structured_content["memory"]["id"] == stored.id

    # Creation order: a replaced key keeps its place (and id).
    recent = await call(mcp, "timeline", limit=1)
    assert [m["content"] for m in recent.structured_content["memories"]] == ["lunch is at noon"]
    first = await call(mcp, "timeline", limit=1, cursor="")
    assert [m["content"] for m in first.structured_content["memories"]] == [
        "the deploy key rotates every 30 days"
    ]
    cursor = first.structured_content["next_cursor"]
    assert cursor
    second = await call(mcp, "timeline", limit=1, cursor=cursor)
    assert [m["content"] for m in second.structured_content["memories"]] == ["lunch is at noon"]


async def test_recall_filters(mcp: Client) -> None:
    await call(mcp, "remember", content="invoices are sent monthly", tags=["billing"])
    await call(mcp, "remember", content="invoices are archived yearly", tier="semantic")
    found = await call(mcp, "recall", query="invoices", filters={"tier": "semantic"})
    assert [m["content"] for m in found.structured_content["memories"]] == [
        "invoices are archived yearly"
    ]
    tagged = await call(mcp, "recall", query="invoices", filters={"tags": "billing"})
    assert [m["content"] for m in tagged.structured_content["memories"]] == [
        "invoices are sent monthly"
    ]
    both = await call(mcp, "recall", query="invoices", filters={"tags": ["billing", "other"]})
    assert both.structured_content["memories"] == []


async def test_forget_by_query_asks_for_confirmation_first(
    mcp: Client, a2m: AsyncA2MClient
) -> None:
    await call(mcp, "remember", content="the staging password is hunter2", key="secrets/staging")
    await call(mcp, "remember", content="the office plant needs water")
    preview = await call(mcp, "forget", query="staging password")
    assert preview.structured_content["forgotten"] == 0
    assert preview.structured_content["confirmed"] is False
    assert [c["content"] for c in preview.structured_content["candidates"]][:1] == [
        "the staging password is hunter2"
    ]
    assert "confirm=true" in text(preview)
    assert (await a2m.fetch("mcp/secrets/staging")).record is not None

    done = await call(mcp, "forget", query="staging password", confirm=True, limit=1)
    assert done.structured_content["forgotten"] == 1
    assert (await a2m.fetch("mcp/secrets/staging")).record is None
    assert len((await a2m.timeline()).records) == 1


async def test_forget_by_key_and_ids_stays_in_the_namespace(
    mcp: Client, a2m: AsyncA2MClient
) -> None:
    other = (await a2m.remember([{"content": "another agent's fact", "key": "crew/fact"}])).ids[0]
    await call(mcp, "remember", content="a", key="one")
    two = await call(mcp, "remember", content="b", key="two")
    by_key = await call(mcp, "forget", key="one")
    assert by_key.structured_content["forgotten"] == 1
    by_ids = await call(mcp, "forget", ids=[two.structured_content["id"], other])
    # Deletes are scoped to this server's namespace: the other agent's record stays.
    assert by_ids.structured_content["forgotten"] == 1
    assert [r.id for r in (await a2m.timeline()).records] == [other]


async def test_forget_leaves_the_knowledge_graph_to_its_own_tools(
    mcp: Client, a2m: AsyncA2MClient
) -> None:
    """By query, ids or key, ``forget`` never deletes a graph record: an entity's record
    deleted alone would leave its observations, to come back when the entity is created
    again (upstream gives a new entity exactly the observations it is given)."""
    alice = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}
    await call(mcp, "create_entities", entities=[alice])
    graph = (await a2m.timeline(key_prefix="mcp/graph")).records
    assert len(graph) == 2  # the entity and its observation
    await call(mcp, "remember", content="a person who likes tea", key="note")
    by_query = await call(mcp, "forget", query="person likes tea", confirm=True, limit=10)
    assert by_query.structured_content["forgotten"] == 1  # the note, not the graph
    by_ids = await call(mcp, "forget", ids=[r.id for r in graph])
    assert by_ids.structured_content["forgotten"] == 0
    assert len((await a2m.timeline(key_prefix="mcp/graph")).records) == 2
    await call(mcp, "delete_entities", entityNames=["Alice"])
    robot = {"name": "Alice", "entityType": "robot", "observations": []}
    await call(mcp, "create_entities", entities=[robot])
    read = (await call(mcp, "read_graph")).structured_content
    assert read["entities"] == [robot]


async def test_forget_by_more_ids_than_one_timeline_returns_still_spares_the_graph() -> None:
    """The check of which ids are graph records reads them all, whatever the server's
    ``max_recall_limit``: one timeline returning only the newest five let the older
    entities' records be deleted, their observations left behind."""
    tenant = ObservationsConfig(org="acme", project="billing")
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=5), observations=tenant)
    with A2MServer(config) as store:
        async with (
            AsyncA2MClient.in_process(store) as a2m,
            Client(build_server(a2m, CONFIG)) as mcp,
        ):
            entities = [{"name": f"e{n}", "entityType": "t", "observations": []} for n in range(12)]
            await call(mcp, "create_entities", entities=entities)
            await call(mcp, "remember", content="a plain note", key="note")
            (note,) = (await a2m.timeline(key_prefix="mcp/note")).records
            ids, cursor = [note.id], ""
            while cursor is not None:  # every graph record, five at a time
                page = await a2m.timeline(key_prefix="mcp/graph", limit=5, cursor=cursor)
                ids += [r.id for r in page.records]
                cursor = page.next_cursor if page.records else None
            assert len(ids) == 13
            forgot = await call(mcp, "forget", ids=ids)
            assert forgot.structured_content["forgotten"] == 1  # the note alone
            read = (await call(mcp, "read_graph")).structured_content
            assert sorted(e["name"] for e in read["entities"]) == sorted(
                e["name"] for e in entities
            )


async def test_relations_whose_parts_hold_nul_are_kept_apart(mcp: Client) -> None:
    """``(A, "x\\0y", z)`` and ``(A, "x", "y\\0z")`` are two relations, as upstream
    keeps them; joining the parts with NUL gave them one key, the second replacing the
    first."""
    entities = [{"name": n, "entityType": "t", "observations": []} for n in ("A", "z", "y\x00z")]
    await call(mcp, "create_entities", entities=entities)
    first = {"from": "A", "to": "z", "relationType": "x\x00y"}
    second = {"from": "A", "to": "y\x00z", "relationType": "x"}
    await call(mcp, "create_relations", relations=[first])
    await call(mcp, "create_relations", relations=[second])
    read = (await call(mcp, "read_graph")).structured_content
    assert sorted(read["relations"], key=str) == sorted([first, second], key=str)


async def _remember_one_fact_twice(mcp: Client) -> None:
    """The same convention, remembered twice in other words: the second call finds the
    first by its content hash and raises its weight (2 + 1)."""
    first = await call(
        mcp,
        "remember_observation",
        content="All dates are ISO 8601 UTC strings.",
        classification="convention",
        filePath="services/billing/dates.ts",
        tags=["datetime"],
        weight=2.0,
    )
    assert first.structured_content["duplicate"] is False
    again = await call(
        mcp,
        "remember_observation",
        content="all dates are  ISO 8601 UTC strings.",
        tags=["billing"],
    )
    assert again.structured_content == {
        "id": first.structured_content["id"],
        "weight": 3.0,
        "duplicate": True,
    }


async def test_remember_observation_goes_to_the_observations_extension(
    mcp: Client, a2m: AsyncA2MClient
) -> None:
    await _remember_one_fact_twice(mcp)
    (observation,) = (await a2m.list_observations(owner="coder")).observations
    assert (observation.org, observation.project, observation.agent) == (
        "acme",
        "billing",
        "coder",
    )
    assert observation.classification == "convention"
    assert observation.file_path == "services/billing/dates.ts"
    assert observation.source == "explicit"
    assert observation.weight == 3.0
    audit = (await a2m.observation_audit(owner="coder")).entries
    assert len(audit) == 2  # created, then raised by the duplicate: the server shows its work


async def test_the_model_cannot_name_a_tenant(mcp: Client, a2m: AsyncA2MClient) -> None:
    result = await mcp.call_tool(
        "remember_observation", {"content": "x", "org": "other", "agent": "intruder"}
    )
    # Arguments outside the schema are dropped: the tenant stays the configured one.
    assert not result.is_error, text(result)
    (observation,) = (await a2m.list_observations(owner="coder")).observations
    assert (observation.org, observation.agent) == ("acme", "coder")
    (record,) = (await a2m.timeline()).records
    assert "intruder" not in str(record.metadata)


async def test_on_a_server_without_the_extension_an_observation_is_a_record() -> None:
    """Any A2M server: the observation is an ordinary record at a key of the tenant and
    the content hash, so the same fact raises the stored weight."""
    config = ServerConfig(observations=ObservationsConfig(enabled=False))
    with A2MServer(config) as store:
        a2m = AsyncA2MClient.in_process(store)
        async with Client(build_server(a2m, CONFIG)) as mcp:
            await _remember_one_fact_twice(mcp)
        records = (await a2m.timeline()).records
        assert len(records) == 1
        observation = (records[0].metadata or {})["observation"]
        assert (observation["org"], observation["project"]) == ("acme", "billing")
        assert observation["agent"] == "coder"
        assert observation["classification"] == "convention"
        assert observation["filePath"] == "services/billing/dates.ts"
        assert observation["source"] == "explicit"
        assert observation["tags"] == ["datetime", "billing"]
        assert records[0].tier == "semantic"
        await a2m.aclose()


async def test_resources_and_prompt(mcp: Client) -> None:
    await call(mcp, "remember", content="the build uses uv")
    await call(mcp, "remember_observation", content="tests bind 127.0.0.1 only")
    resources = {str(r.uri) for r in (await mcp.list_resources()).resources}
    assert {"a2m://memories/recent", "memory://knowledge-graph"} <= resources
    templates = {t.uri_template for t in (await mcp.list_resource_templates()).resource_templates}
    assert "a2m://observations/{agent}" in templates

    recent = (await mcp.read_resource("a2m://memories/recent")).contents[0]
    assert "the build uses uv" in recent.text
    mine = (await mcp.read_resource("a2m://observations/coder")).contents[0]
    assert "tests bind 127.0.0.1 only" in mine.text
    assert "the build uses uv" not in mine.text
    other = (await mcp.read_resource("a2m://observations/nobody")).contents[0]
    assert "Only an operator" in other.text  # another agent's observations are its own
    graph = (await mcp.read_resource("memory://knowledge-graph")).contents[0]
    assert graph.text == '{\n  "entities": [],\n  "relations": []\n}'

    prompts = {p.name for p in (await mcp.list_prompts()).prompts}
    assert "relevant_memories" in prompts
    prompt = await mcp.get_prompt("relevant_memories", {"topic": "which build tool?"})
    assert "the build uses uv" in prompt.messages[0].content.text


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {}, "content"),
    ("remember", {"content": 42}, "content"),
    ("remember", {"content": "   "}, "must not be empty"),
    ("remember", {"content": "x" * 200_001}, "max_content_length"),
    ("remember", {"content": "x", "key": "/absolute"}, "key must be"),
    ("remember", {"content": "x", "tags": "not-a-list"}, "tags"),
    ("remember", {"content": "x", "tier": "nonexistent-tier"}, "tier"),
    ("recall", {}, "query"),
    ("recall", {"query": "x", "limit": 0}, "limit"),
    ("recall", {"query": "x", "limit": "ten"}, "limit"),
    ("recall", {"query": "x", "filters": {"tags": [1]}}, "filters.tags"),
    ("recall", {"query": "x", "filters": {"tags": 5}}, "filters.tags"),
    ("recall", {"query": "x", "filters": {"tags": {"a": 1}}}, "filters.tags"),
    ("remember", {"content": "x", "key": "graph/entities/forged"}, "knowledge graph"),
    (
        "create_entities",
        {"entities": [{"name": "bad\ud800", "entityType": "t", "observations": []}]},
        "lone surrogate",
    ),
    (
        "create_relations",
        {"relations": [{"from": "A", "to": "B", "relationType": "r\udfff"}]},
        "lone surrogate",
    ),
    ("fetch", {"key": ""}, "key"),
    ("timeline", {"cursor": "not-a-cursor"}, "cursor"),
    ("forget", {}, "ids, a key, or a query"),
    ("remember_observation", {"classification": "note"}, "content"),
    ("remember_observation", {"content": "x", "weight": -1}, "weight"),
    ("remember_observation", {"content": "x", "weight": "heavy"}, "weight"),
    ("create_entities", {"entities": "nope"}, "entities"),
    ("create_entities", {"entities": [{"name": "A"}]}, "entityType"),
    ("create_relations", {"relations": [{"from": "A", "to": "B"}]}, "relationType"),
    (
        "add_observations",
        {"observations": [{"entityName": "Ghost", "contents": ["x"]}]},
        "Entity with name Ghost not found",
    ),
    ("delete_entities", {"entityNames": "A"}, "entityNames"),
    ("open_nodes", {}, "names"),
    ("search_nodes", {"query": 3}, "query"),
]


@pytest.mark.parametrize(("tool", "arguments", "says"), BAD_CALLS)
async def test_bad_input_is_a_tool_error_and_the_server_keeps_answering(
    mcp: Client, a2m: AsyncA2MClient, tool: str, arguments: dict[str, Any], says: str
) -> None:
    result = await mcp.call_tool(tool, arguments)
    assert result.is_error
    assert says in text(result)
    assert tool in text(result)
    # Nothing was written, and the server still answers.
    assert (await a2m.timeline()).records == []
    assert not (await mcp.call_tool("read_graph", {})).is_error


async def test_an_unknown_tool_is_refused(mcp: Client) -> None:
    result = await mcp.call_tool("no_such_tool", {})
    assert result.is_error
    assert "no_such_tool" in text(result)


async def test_namespace_must_be_valid() -> None:
    with pytest.raises(ValueError, match="namespace"):
        MemoryConfig(namespace="Not Valid")


async def test_graph_prefix_is_shared_between_namespaces(a2m: AsyncA2MClient) -> None:
    shared = MemoryConfig(namespace="one", graph_prefix="team/graph")
    other = MemoryConfig(namespace="two", graph_prefix="team/graph")
    async with (
        Client(build_server(a2m, shared)) as first,
        Client(build_server(a2m, other)) as second,
    ):
        await call(
            first,
            "create_entities",
            entities=[{"name": "X", "entityType": "t", "observations": []}],
        )
        graph = await call(second, "read_graph")
        assert [e["name"] for e in graph.structured_content["entities"]] == ["X"]
    assert CONFIG.graph == "mcp/graph"


async def test_recall_reads_the_callers_own_record_where_principals_share_a_key(
    store: A2MServer,
) -> None:
    # Keys are unique per owner (§3.6): alice and bob may each hold mcp/team/city in a
    # shared tier. Each one's recall shows that memory once, as its own.
    from a2m_testing.servers import serve_http

    config = MemoryConfig(namespace="mcp", org="acme", project="billing")
    tokens = {"alice-token": "alice", "bob-token": "bob"}
    with serve_http(store, tokens=tokens) as url:
        async with (
            AsyncA2MClient(url, token="alice-token") as alice,
            AsyncA2MClient(url, token="bob-token") as bob,
        ):
            for client, city in ((alice, "Lisbon"), (bob, "Oslo")):
                async with Client(build_server(client, config)) as mcp:
                    await call(
                        mcp, "remember", content=f"the team sits in {city}", key="team/city",
                        tier="semantic",
                    )  # fmt: skip
            for client, city in ((alice, "Lisbon"), (bob, "Oslo")):
                async with Client(build_server(client, config)) as mcp:
                    found = await call(mcp, "recall", query="team city", limit=10)
                    memories = found.structured_content["memories"]
                    at_key = [m for m in memories if m["key"] == "mcp/team/city"]
                    assert [m["content"] for m in at_key] == [f"the team sits in {city}"]

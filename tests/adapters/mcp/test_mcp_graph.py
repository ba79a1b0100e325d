"""The knowledge-graph tools answer as ``@modelcontextprotocol/server-memory`` does: the
same call sequence gives the same results (recorded from upstream in
``upstream_graph.json``, and live against upstream when Node and the npm package are
here), and the graph is ordinary A2M records."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from graph_sequence import replay, same, same_as_recorded
from mcp import Client, StdioServerParameters
from mcp_kit import text

from a2m import AsyncA2MClient
from a2m.transports import AsyncInProcessTransport
from a2m_mcp import KnowledgeGraph
from a2m_mcp._graph import digest
from a2m_server import A2MServer
from a2m_server.config import ServerConfig

pytestmark = pytest.mark.anyio

# Where upstream's entry point is, when installed (npm install @modelcontextprotocol/server-memory).
UPSTREAM = os.environ.get(
    "A2M_MCP_UPSTREAM",
    str(Path.cwd() / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"),
)


async def test_the_same_calls_give_upstreams_recorded_results(mcp: Client) -> None:
    same_as_recorded(await replay(mcp))


@pytest.mark.skipif(
    shutil.which("node") is None or not Path(UPSTREAM).is_file(),
    reason="upstream server-memory is not installed here (needs node and "
    "`npm install @modelcontextprotocol/server-memory`; set A2M_MCP_UPSTREAM)",
)
async def test_the_same_calls_give_upstreams_live_results(mcp: Client, tmp_path: Path) -> None:
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    params = StdioServerParameters(command="node", args=[UPSTREAM], env=env)
    async with Client(params) as upstream:
        theirs = await replay(upstream)
    ours = await replay(mcp)
    for mine, upstream_result in zip(ours, theirs, strict=True):
        same(mine, upstream_result)


async def test_the_tool_schemas_match_upstreams_arguments(mcp: Client) -> None:
    tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    required = {
        "create_entities": ["entities"],
        "create_relations": ["relations"],
        "add_observations": ["observations"],
        "delete_entities": ["entityNames"],
        "delete_observations": ["deletions"],
        "delete_relations": ["relations"],
        "search_nodes": ["query"],
        "open_nodes": ["names"],
    }
    for name, fields in required.items():
        assert tools[name].input_schema["required"] == fields, name
    assert tools["read_graph"].input_schema.get("required", []) == []
    entity = tools["create_entities"].input_schema["$defs"]["Entity"]
    assert sorted(entity["required"]) == ["entityType", "name", "observations"]
    relation = tools["create_relations"].input_schema["$defs"]["Relation"]
    assert sorted(relation["required"]) == ["from", "relationType", "to"]


async def test_graph_facts_are_ordinary_records(mcp: Client, a2m: AsyncA2MClient) -> None:
    await mcp.call_tool(
        "create_entities",
        {"entities": [{"name": "Alice", "entityType": "person", "observations": ["Drinks tea"]}]},
    )
    await mcp.call_tool(
        "create_relations",
        {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]},
    )
    records = (await a2m.timeline()).records
    assert [r.content for r in records] == [
        "Alice (person)",
        "Alice: Drinks tea",
        "Alice works_at Acme",
    ]
    for record in records:
        assert record.key is not None
        assert record.key.startswith("mcp/graph/")
        assert record.tier == "semantic"
        meta = record.metadata or {}
        assert meta["source_framework"] == "mcp"
        assert meta["source_agent"] == "coder"
    # Any framework recalling "tea" finds the observation.
    found = await a2m.recall("who drinks tea?", limit=1)
    assert found.records[0].content == "Alice: Drinks tea"


async def test_a_failed_add_observations_writes_nothing(mcp: Client, a2m: AsyncA2MClient) -> None:
    await mcp.call_tool(
        "create_entities",
        {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]},
    )
    before = [r.id for r in (await a2m.timeline()).records]
    result = await mcp.call_tool(
        "add_observations",
        {
            "observations": [
                {"entityName": "Bob", "contents": ["Owns a boat"]},
                {"entityName": "Ghost", "contents": ["Boo"]},
            ]
        },
    )
    assert result.is_error
    assert "Entity with name Ghost not found" in text(result)
    assert [r.id for r in (await a2m.timeline()).records] == before


async def test_duplicates_within_one_call_are_written_once(a2m: AsyncA2MClient) -> None:
    graph = KnowledgeGraph(a2m, "g")
    added = await graph.create_entities(
        [
            {"name": "A", "entityType": "t", "observations": ["x", "x"]},
            {"name": "A", "entityType": "t", "observations": []},
        ]
    )
    assert added == [{"name": "A", "entityType": "t", "observations": ["x", "x"]}]
    result = await graph.add_observations([{"entityName": "A", "contents": ["y", "y"]}])
    assert result == [{"entityName": "A", "addedObservations": ["y"]}]
    assert (await graph.read_graph())["entities"] == [
        {"name": "A", "entityType": "t", "observations": ["x", "y"]}
    ]


async def test_a_large_graph_reads_back_whole_across_pages(a2m: AsyncA2MClient) -> None:
    graph = KnowledgeGraph(a2m, "big")
    entities = [
        {"name": f"node-{i}", "entityType": "thing", "observations": [f"fact {i}"]}
        for i in range(1200)
    ]
    await graph.create_entities(entities)
    await graph.create_relations(
        [{"from": f"node-{i}", "to": f"node-{i + 1}", "relationType": "next"} for i in range(1199)]
    )
    read = await graph.read_graph()
    assert read["entities"] == entities
    assert len(read["relations"]) == 1199
    found = await graph.search_nodes("FACT 1199")
    assert [e["name"] for e in found["entities"]] == ["node-1199"]
    assert found["relations"] == [{"from": "node-1198", "to": "node-1199", "relationType": "next"}]


async def test_a_kept_graph_sees_every_other_writers_change(store: Any) -> None:
    """One graph reads (and keeps what it read); another client changes the store in every
    way; each change shows in the first graph's next answer."""
    reader_client = AsyncA2MClient.in_process(store)
    writer_client = AsyncA2MClient.in_process(store)
    try:
        reader = KnowledgeGraph(reader_client, "team/graph")
        writer = KnowledgeGraph(writer_client, "team/graph")
        await writer.create_entities([{"name": "A", "entityType": "t", "observations": ["one"]}])
        assert [e["name"] for e in (await reader.read_graph())["entities"]] == ["A"]
        kept = reader._cache
        assert kept is not None

        # Writes and deletes outside the graph leave what was read standing.
        unrelated = await writer_client.remember([{"content": "elsewhere", "key": "team/notes/x"}])
        await writer_client.forget(ids=unrelated.ids)
        assert (await reader.search_nodes("one"))["entities"][0]["name"] == "A"
        assert reader._cache is kept

        await writer.add_observations([{"entityName": "A", "contents": ["two"]}])
        assert (await reader.open_nodes(["A"]))["entities"][0]["observations"] == ["one", "two"]
        # Caught up from the event log, not read again whole.
        assert reader._cache is kept
        await writer.create_relations([{"from": "A", "to": "B", "relationType": "r"}])
        assert len((await reader.search_nodes("a"))["relations"]) == 1
        await writer.delete_observations([{"entityName": "A", "observations": ["one"]}])
        assert (await reader.search_nodes("one"))["entities"] == []
        # A delete through the bare client, not the graph, is seen too.
        await writer_client.forget(key_prefix="team/graph/relations")
        assert (await reader.read_graph())["relations"] == []
        await writer.delete_entities(["A"])
        assert await reader.read_graph() == {"entities": [], "relations": []}
        assert reader._cache is kept
        # A rewritten key keeps its place; an event the graph cannot place means a whole read.
        await writer.create_entities([{"name": "Z", "entityType": "t", "observations": []}])
        await writer.create_entities([{"name": "Y", "entityType": "t", "observations": []}])
        await writer_client.remember(
            [
                {
                    "content": "Z (u)",
                    "key": writer.entity_key("Z"),
                    "metadata": {"kg_kind": "entity", "kg_entity": "Z", "kg_type": "u"},
                }
            ]
        )
        assert [(e["name"], e["entityType"]) for e in (await reader.read_graph())["entities"]] == [
            ("Z", "u"),
            ("Y", "t"),
        ]
        await writer_client.consolidate()
        assert [e["name"] for e in (await reader.read_graph())["entities"]] == ["Z", "Y"]
        assert reader._cache is not kept
        await writer.delete_entities(["Z", "Y"])
        # What a caller does to a result never changes what the graph holds.
        await writer.create_entities([{"name": "C", "entityType": "t", "observations": ["x"]}])
        first = await reader.read_graph()
        first["entities"][0]["observations"].append("tampered")
        assert (await reader.read_graph())["entities"][0]["observations"] == ["x"]
    finally:
        await reader_client.aclose()
        await writer_client.aclose()


@pytest.mark.parametrize("count", [3, 12])
async def test_many_names_at_once_behave_as_a_few(a2m: AsyncA2MClient, count: int) -> None:
    """Up to 8 names are looked up one by one, more in one listing: the same answers."""
    graph = KnowledgeGraph(a2m, "g")
    names = [f"n{i}" for i in range(count)]
    await graph.create_entities(
        [{"name": n, "entityType": "t", "observations": ["a"]} for n in names]
    )
    again = await graph.create_entities(
        [{"name": n, "entityType": "t", "observations": []} for n in [*names, "new"]]
    )
    assert [e["name"] for e in again] == ["new"]
    added = await graph.add_observations([{"entityName": n, "contents": ["a", "b"]} for n in names])
    assert added == [{"entityName": n, "addedObservations": ["b"]} for n in names]
    ring = [
        {"from": n, "to": names[(i + 1) % count], "relationType": "r"} for i, n in enumerate(names)
    ]
    assert await graph.create_relations(ring) == ring
    assert await graph.create_relations(ring) == []
    await graph.delete_entities(names[1:])
    assert await graph.read_graph() == {
        "entities": [
            {"name": "n0", "entityType": "t", "observations": ["a", "b"]},
            {"name": "new", "entityType": "t", "observations": []},
        ],
        "relations": [],
    }


class CountingTransport(AsyncInProcessTransport):
    """The in-process transport, keeping each request's method."""

    def __init__(self, server: A2MServer) -> None:
        super().__init__(server)
        self.sent: list[str] = []

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        self.sent.append(request["method"])
        return await super().handle_async_request(request, timeout=timeout)


@pytest.mark.parametrize("operators", [True, False], ids=["or", "plain"])
async def test_deletions_cost_one_forget_per_hundred_items_where_the_server_runs_or(
    operators: bool,
) -> None:
    """150 relations and 150 entities' observations go in two ``forget`` each on a server
    running ``$or``; on a plain 0.1 server, one each, with the same graph left."""
    count = 150
    names = [f"n{i}" for i in range(count)]
    config = ServerConfig(where_operators=operators)
    with A2MServer(config) as server:
        transport = CountingTransport(server)
        async with AsyncA2MClient(transport=transport) as client:
            graph = KnowledgeGraph(client, "g")
            await graph.create_entities(
                [{"name": n, "entityType": "t", "observations": ["a", "b"]} for n in names]
            )
            ring = [
                {"from": n, "to": names[(i + 1) % count], "relationType": "r"}
                for i, n in enumerate(names)
            ]
            await graph.create_relations([*ring, {"from": "n0", "to": "n2", "relationType": "r"}])
            transport.sent.clear()
            await graph.delete_relations([*ring, ring[0]])
            await graph.delete_observations(
                [{"entityName": n, "observations": ["a"]} for n in names]
            )
            calls = 4 if operators else 2 * count
            assert transport.sent == ["memory/forget"] * calls
            left = await graph.read_graph()
    assert left["relations"] == [{"from": "n0", "to": "n2", "relationType": "r"}]
    assert [e["observations"] for e in left["entities"]] == [["b"]] * count


@pytest.mark.parametrize("operators", [True, False], ids=["or", "plain"])
async def test_a_relation_stored_under_an_earlier_releases_key_is_deleted(
    operators: bool,
) -> None:
    """Relations whose parts hold NUL were keyed by the parts joined with NUL; such a
    record, written before the keys changed, is found and deleted by what it says."""
    with A2MServer(ServerConfig(where_operators=operators)) as server:
        async with AsyncA2MClient.in_process(server) as client:
            graph = KnowledgeGraph(client, "g")
            record = graph._relation_record("A", "x\x00y", "z")
            old = hashlib.sha256(b"x\x00y\x00z\x00").hexdigest()[:32]
            record["key"] = f"g/relations/{digest('A')}/{old}"
            assert record["key"] != graph.relation_key("A", "x\x00y", "z")
            await client.remember([record])
            kept = {"from": "A", "to": "y\x00z", "relationType": "x"}
            await graph.create_relations([kept])
            stored = (await graph.read_graph())["relations"]
            assert sorted(stored, key=str) == sorted(
                [{"from": "A", "to": "z", "relationType": "x\x00y"}, kept], key=str
            )
            old_relation = {"from": "A", "to": "z", "relationType": "x\x00y"}
            assert await graph.create_relations([old_relation]) == []  # present already
            await graph.delete_relations([old_relation])
            assert (await graph.read_graph())["relations"] == [kept]


async def test_a_write_checks_only_the_facts_it_names() -> None:
    """Adding one relation or observation to an entity holding 1,200 of each costs one
    existence check however many it holds (it read every one of them, a timeline per
    1,000), then the write."""
    with A2MServer() as server:
        transport = CountingTransport(server)
        async with AsyncA2MClient(transport=transport) as client:
            graph = KnowledgeGraph(client, "g")
            many = [f"fact {n}" for n in range(1200)]
            await graph.create_entities([{"name": "hub", "entityType": "t", "observations": many}])
            await graph.create_relations(
                [{"from": "hub", "to": f"n{n}", "relationType": "r"} for n in range(1200)]
            )
            transport.sent.clear()
            new = {"from": "hub", "to": "n0", "relationType": "new"}
            assert await graph.create_relations([new, {**new, "relationType": "r"}]) == [new]
            assert transport.sent == ["memory/timeline", "memory/remember"]
            transport.sent.clear()
            added = await graph.add_observations(
                [{"entityName": "hub", "contents": ["fact 7", "a new fact"]}]
            )
            assert added == [{"entityName": "hub", "addedObservations": ["a new fact"]}]
            assert transport.sent == ["memory/timeline"] * 2 + ["memory/remember"]

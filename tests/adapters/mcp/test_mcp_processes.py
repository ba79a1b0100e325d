"""``a2m-mcp`` as its users start it: over stdio and streamable HTTP, on an embedded
SQLite store or on another A2M server by URL, and two processes writing one store at once."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_kit import command, http_server, stdio_params, text

from a2m import A2MClient

pytestmark = pytest.mark.anyio


async def _every_tool(client: Client) -> None:
    """Each tool once, and one error of each kind, through ``client``."""

    async def ok(name: str, **arguments: Any) -> Any:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, f"{name}: {text(result)}"
        return result.structured_content

    assert (await ok("remember", content="the CI runs on two cores", key="ci/cores"))["id"]
    assert (await ok("recall", query="how many cores does CI have?"))["memories"][0]["content"] == (
        "the CI runs on two cores"
    )
    assert (await ok("fetch", key="ci/cores"))["memory"]["content"] == "the CI runs on two cores"
    assert len((await ok("timeline", limit=5))["memories"]) == 1
    assert (await ok("remember_observation", content="tests bind loopback only"))["weight"] == 1.0
    entity = {"name": "CI", "entityType": "system", "observations": ["two cores"]}
    assert (await ok("create_entities", entities=[entity]))["entities"] == [entity]
    relation = {"from": "CI", "to": "uv", "relationType": "uses"}
    assert (await ok("create_relations", relations=[relation]))["relations"] == [relation]
    added = await ok(
        "add_observations", observations=[{"entityName": "CI", "contents": ["90 min"]}]
    )
    assert added == {"results": [{"entityName": "CI", "addedObservations": ["90 min"]}]}
    assert (await ok("search_nodes", query="90 MIN"))["relations"] == [relation]
    assert (await ok("open_nodes", names=["CI"]))["entities"][0]["observations"] == [
        "two cores",
        "90 min",
    ]
    await ok("delete_observations", deletions=[{"entityName": "CI", "observations": ["90 min"]}])
    await ok("delete_relations", relations=[relation])
    await ok("delete_entities", entityNames=["CI"])
    assert await ok("read_graph") == {"entities": [], "relations": []}
    assert (await ok("forget", key="ci/cores"))["forgotten"] == 1

    for name, arguments in [
        ("remember", {"content": 7}),
        ("remember", {"content": "x" * 100_001}),
        ("add_observations", {"observations": [{"entityName": "Nope", "contents": ["x"]}]}),
        ("create_relations", {"relations": "x"}),
    ]:
        result = await client.call_tool(name, arguments)
        assert result.is_error, name
        assert name in text(result)
    # Still answering after every error.
    assert (await ok("read_graph")) == {"entities": [], "relations": []}


async def test_every_tool_over_stdio_on_an_embedded_store(db: str) -> None:
    async with Client(stdio_params("--db", db, "--agent", "coder")) as client:
        await _every_tool(client)
    # The embedded store is the SQLite file: what was written is there after exit.
    from a2m_server.server import A2MServer

    with A2MServer(db=db) as server, A2MClient.in_process(server) as a2m:
        contents = [r.content for r in a2m.timeline().records]
    assert contents == ["tests bind loopback only"]


async def test_every_tool_over_streamable_http(db: str) -> None:
    async with http_server("--db", db) as url, Client(url) as client:
        await _every_tool(client)


async def test_every_tool_against_an_a2m_server_by_url(a2m_http_url: str) -> None:
    async with Client(stdio_params("--url", a2m_http_url)) as client:
        await _every_tool(client)
    with A2MClient(a2m_http_url) as a2m:
        (record,) = a2m.timeline().records
    assert record.content == "tests bind loopback only"
    assert (record.metadata or {})["source_framework"] == "mcp"


async def test_two_processes_writing_the_same_entities_lose_nothing(db: str) -> None:
    rounds = 15
    names = [f"service-{i}" for i in range(5)]

    async def writer(label: str) -> None:
        async with Client(stdio_params("--db", db, "--agent", label)) as client:
            for step in range(rounds):
                entities = [
                    {"name": name, "entityType": "service", "observations": [f"{label} saw {step}"]}
                    for name in names
                ]
                result = await client.call_tool("create_entities", {"entities": entities})
                assert not result.is_error, text(result)
                observations = [
                    {"entityName": name, "contents": [f"{label} noted {step}", "shared fact"]}
                    for name in names
                ]
                result = await client.call_tool("add_observations", {"observations": observations})
                assert not result.is_error, text(result)
                relation = {"from": names[step % 5], "to": label, "relationType": "seen_by"}
                result = await client.call_tool("create_relations", {"relations": [relation]})
                assert not result.is_error, text(result)

    async with anyio.create_task_group() as group:
        group.start_soon(writer, "alpha")
        group.start_soon(writer, "beta")

    async with Client(stdio_params("--db", db)) as reader:
        graph = (await reader.call_tool("read_graph", {})).structured_content
    assert sorted(e["name"] for e in graph["entities"]) == names
    for entity in graph["entities"]:
        observations = entity["observations"]
        # Every observation of both writers is there, each exactly once.
        assert len(observations) == len(set(observations))
        for label in ("alpha", "beta"):
            for step in range(rounds):
                assert f"{label} noted {step}" in observations
        assert "shared fact" in observations
    relations = {json.dumps(r, sort_keys=True) for r in graph["relations"]}
    assert len(relations) == len(graph["relations"]) == 10


def test_the_command_line_refuses_db_and_url_together(db: str) -> None:
    import subprocess

    done = subprocess.run(
        [*command("--db", db, "--url", "http://127.0.0.1:1/")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr

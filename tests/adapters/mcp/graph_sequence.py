"""One sequence of knowledge-graph tool calls, replayed against ``a2m-mcp`` and against the
upstream ``@modelcontextprotocol/server-memory``, whose results must agree.

``upstream_graph.json`` holds what upstream answered to it: regenerate it with
``python tests/adapters/mcp/graph_sequence.py PATH/TO/server-memory/dist/index.js``
(``npm install @modelcontextprotocol/server-memory`` puts it under ``node_modules``)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).with_name("upstream_graph.json")

ALICE = {"name": "Alice", "entityType": "person", "observations": ["Drinks tea", "Speaks Dutch"]}
ACME = {"name": "Acme Corp", "entityType": "company", "observations": ["Makes anvils"]}
BOB = {"name": "Bob", "entityType": "person", "observations": []}

SEQUENCE: list[tuple[str, dict[str, Any]]] = [
    ("read_graph", {}),
    ("create_entities", {"entities": [ALICE, ACME]}),
    # Alice exists already (with another type): ignored, Bob added.
    ("create_entities", {"entities": [{**ALICE, "entityType": "robot"}, BOB]}),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Alice", "to": "Acme Corp", "relationType": "works_at"},
                {"from": "Bob", "to": "Alice", "relationType": "knows"},
                {"from": "Acme Corp", "to": "Globex", "relationType": "competes_with"},
            ]
        },
    ),
    # The first relation exists already: only the second is added.
    (
        "create_relations",
        {
            "relations": [
                {"from": "Alice", "to": "Acme Corp", "relationType": "works_at"},
                {"from": "Alice", "to": "Acme Corp", "relationType": "founded"},
            ]
        },
    ),
    # "Drinks tea" is present already: only the new observation is added.
    (
        "add_observations",
        {
            "observations": [
                {"entityName": "Alice", "contents": ["Drinks tea", "Plays chess"]},
                {"entityName": "Bob", "contents": ["Likes Chess"]},
            ]
        },
    ),
    # An unknown entity fails the call, and nothing of it is written.
    (
        "add_observations",
        {
            "observations": [
                {"entityName": "Bob", "contents": ["Owns a boat"]},
                {"entityName": "Nobody", "contents": ["Exists"]},
            ]
        },
    ),
    ("read_graph", {}),
    ("search_nodes", {"query": "CHESS"}),
    ("search_nodes", {"query": "company"}),
    ("search_nodes", {"query": "ali"}),
    ("search_nodes", {"query": "no such thing"}),
    ("open_nodes", {"names": ["Acme Corp", "Missing"]}),
    ("open_nodes", {"names": ["Alice", "Bob"]}),
    (
        "delete_observations",
        {
            "deletions": [
                {"entityName": "Alice", "observations": ["Speaks Dutch", "Never said"]},
                {"entityName": "Missing", "observations": ["x"]},
            ]
        },
    ),
    (
        "delete_relations",
        {
            "relations": [
                {"from": "Alice", "to": "Acme Corp", "relationType": "founded"},
                {"from": "No", "to": "One", "relationType": "here"},
            ]
        },
    ),
    ("read_graph", {}),
    # Deleting Alice deletes every relation touching her, and nothing else.
    ("delete_entities", {"entityNames": ["Alice", "Missing"]}),
    ("read_graph", {}),
    ("create_entities", {"entities": [ALICE]}),
    ("open_nodes", {"names": ["Alice"]}),
]


def outcome(result: Any) -> dict[str, Any]:
    """What is compared of one tool result: the error flag, the structured content and,
    for an error, its text."""
    texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
    return {
        "is_error": bool(result.is_error),
        "structured": None if result.is_error else result.structured_content,
        "text": texts[0] if texts else "",
    }


def same(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Assert one of our outcomes is upstream's."""
    assert ours["is_error"] == theirs["is_error"]
    if theirs["is_error"]:
        # Upstream's message, with the MCP SDK's "Error executing tool …" before it.
        assert theirs["text"] in ours["text"]
    else:
        assert ours["structured"] == theirs["structured"]
        assert ours["text"] == theirs["text"]


def same_as_recorded(ours: list[dict[str, Any]]) -> None:
    """Assert each outcome of :data:`SEQUENCE` is the one recorded from upstream, naming
    the first call that differs."""
    recorded = json.loads(RECORDED.read_text())
    assert len(recorded) == len(SEQUENCE)
    for (name, arguments), mine, theirs in zip(SEQUENCE, ours, recorded, strict=True):
        try:
            same(mine, theirs)
        except AssertionError as error:
            raise AssertionError(f"{name}({arguments}) differs from upstream") from error


async def replay(client: Any) -> list[dict[str, Any]]:
    """Run :data:`SEQUENCE` through an MCP client; one outcome per call."""
    outcomes = []
    for name, arguments in SEQUENCE:
        outcomes.append(outcome(await client.call_tool(name, arguments)))
    return outcomes


async def _record(index_js: str) -> None:
    from mcp import Client, StdioServerParameters

    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "MEMORY_FILE_PATH": str(Path(folder) / "memory.jsonl")}
        params = StdioServerParameters(command="node", args=[index_js], env=env)
        async with Client(params) as client:
            outcomes = await replay(client)
    RECORDED.write_text(json.dumps(outcomes, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    import anyio

    anyio.run(_record, sys.argv[1])

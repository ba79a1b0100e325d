"""``a2m-mcp --import-graph memory.jsonl``: a user of the upstream knowledge-graph server
keeps their graph when they switch — imported as the graph tools would write it, twice
adding nothing, a bad file refused before anything is written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_kit import command

from a2m import A2MClient, AsyncA2MClient
from a2m_mcp import MemoryConfig, build_server
from a2m_server.server import A2MServer

UPSTREAM_LINES = [
    {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["Drinks tea"]},
    {"type": "entity", "name": "Acme", "entityType": "company", "observations": ["Makes anvils"]},
    {"type": "relation", "from": "Alice", "to": "Acme", "relationType": "works_at"},
    {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["Speaks Dutch"]},
]


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _import(db: str, graph_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command("--db", db, "--import-graph", str(graph_file)),
        capture_output=True,
        text=True,
        timeout=120,
    )


async def _graph(db: str) -> dict[str, object]:
    with A2MServer(db=db) as store:
        client = AsyncA2MClient.in_process(store)
        async with Client(build_server(client, MemoryConfig())) as mcp:
            result = await mcp.call_tool("read_graph", {})
        await client.aclose()
    assert result.structured_content is not None
    return result.structured_content


def test_an_upstream_graph_file_is_imported_once(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    graph_file = _write(tmp_path / "memory.jsonl", UPSTREAM_LINES)
    first = _import(db, graph_file)
    assert first.returncode == 0, first.stderr
    assert "imported 2 entities, 3 observations and 1 relations" in first.stderr
    again = _import(db, graph_file)
    assert again.returncode == 0, again.stderr
    assert "imported 0 entities, 0 observations and 0 relations" in again.stderr
    graph = anyio.run(_graph, db)
    entities = {e["name"]: e for e in graph["entities"]}  # type: ignore[attr-defined]
    assert sorted(entities["Alice"]["observations"]) == ["Drinks tea", "Speaks Dutch"]
    assert entities["Acme"]["entityType"] == "company"
    assert graph["relations"] == [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{not json", "line 2: not JSON"),
        (json.dumps({"type": "entity", "entityType": "x"}), "line 2: 'name'"),
        (json.dumps({"type": "thing"}), "line 2: 'type' must be"),
    ],
)
def test_a_bad_graph_file_is_refused_and_nothing_written(
    tmp_path: Path, line: str, says: str
) -> None:
    db = str(tmp_path / "memory.db")
    graph_file = tmp_path / "memory.jsonl"
    graph_file.write_text(json.dumps(UPSTREAM_LINES[0]) + "\n" + line + "\n", encoding="utf-8")
    done = _import(db, graph_file)
    assert done.returncode == 2
    assert says in done.stderr
    with A2MServer(db=db) as store, A2MClient.in_process(store) as client:
        assert client.timeline().records == []


def test_a_missing_graph_file_is_one_clear_line(tmp_path: Path) -> None:
    done = _import(str(tmp_path / "memory.db"), tmp_path / "absent.jsonl")
    assert done.returncode == 2
    assert "absent.jsonl" in done.stderr
    assert "Traceback" not in done.stderr

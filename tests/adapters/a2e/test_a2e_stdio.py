"""``a2m-a2e stdio``: JSON lines on stdin/stdout, backed by the bundled server on a file
(``--db``) or at a URL (``--url``); the end of input is the agent's disconnect. And two
such hosts on one PostgreSQL store."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_a2e_wire import FORGET_REQ, INIT_REQ, RETRIEVE_REQ, SEED_MEMORY_ID, STORE_REQ

from a2m_a2e import new_message


class StdioHost:
    """One ``a2m-a2e stdio`` process, spoken to a line at a time."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "a2m_a2e", "stdio", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def send(self, message: dict[str, Any] | str) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, "the host closed its output"
        response: dict[str, Any] = json.loads(answer)
        return response

    def init(self, agent: str, namespace: str = "agent-session-1") -> str:
        response = self.send(
            new_message("memory/init/req", namespace=namespace, scope={"agent": agent})
        )
        return str(response["memory_id"])

    def disconnect(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                stream.close()


@contextmanager
def stdio_host(*args: str) -> Iterator[StdioHost]:
    host = StdioHost(*args)
    try:
        yield host
    finally:
        host.kill()


def stored_entry(key: dict[str, Any], content: Any, tier: str, **fields: Any) -> dict[str, Any]:
    return {"key": key, "content": content, "tier": tier, **fields}


def test_the_wire_examples_over_stdio_and_a_disconnect(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    with stdio_host("--db", db) as host:
        init = host.send(INIT_REQ)
        memory = init["memory_id"]
        assert (init["type"], init["req_id"]) == ("memory/init/resp", "m0a")
        assert host.send(STORE_REQ.replace(SEED_MEMORY_ID, memory))["stored"] == [
            {"agent": "a1", "topic": "prefs"}
        ]
        assert host.send(RETRIEVE_REQ.replace(SEED_MEMORY_ID, memory))["total"] == 1
        scratch = [stored_entry({"s": n}, n, "working", tags=["temp"]) for n in range(3)]
        host.send(new_message("memory/store/req", memory_id=memory, entries=scratch))
        assert host.send(FORGET_REQ.replace(SEED_MEMORY_ID, memory))["deleted"] == 3
        host.send(new_message("memory/store/req", memory_id=memory, entries=scratch))
        assert host.send("{not json")["code"] == "invalid_message"
        assert host.disconnect() == 0
    with stdio_host("--db", db) as again:
        memory = again.init("assistant")
        found = again.send(new_message("memory/retrieve/req", memory_id=memory))
        assert [e["key"] for e in found["entries"]] == [{"agent": "a1", "topic": "prefs"}]


def test_stdio_host_over_a_url(tmp_path: Path) -> None:
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    with A2MServer() as server, serve_http(server) as url, stdio_host("--url", url) as host:
        memory = host.init("assistant")
        stored = host.send(
            new_message(
                "memory/store/req",
                memory_id=memory,
                entries=[stored_entry({"k": 1}, {"x": 1}, "episodic")],
            )
        )
        assert stored["errors"] == []
        got = host.send(new_message("memory/retrieve/req", memory_id=memory, keys=[{"k": 1}]))
        assert got["entries"][0]["content"] == {"x": 1}


@pytest.mark.timeout(240)
def test_two_hosts_on_one_postgresql_store(postgres_server: Any) -> None:
    url = postgres_server.fresh_url()
    with (
        stdio_host("--db", url, "--semantic-writer", "curator") as one,
        stdio_host("--db", url) as two,
    ):
        curator = one.init("curator")
        mine = two.init("curator")
        stored = one.send(
            new_message(
                "memory/store/req",
                memory_id=curator,
                entries=[
                    stored_entry(
                        {"fact": "capital"}, "Paris is the capital", "semantic", tags=["geo"]
                    ),
                    stored_entry({"note": 1}, "the curator's own", "episodic", tags=["geo"]),
                    stored_entry({"scratch": 1}, "thinking", "working", tags=["geo"]),
                ],
            )
        )
        assert stored["errors"] == []
        seen = two.send(new_message("memory/retrieve/req", memory_id=mine, tags=["geo"]))
        assert sorted(e["tier"] for e in seen["entries"]) == ["episodic", "semantic"]
        refused = two.send(
            new_message(
                "memory/store/req",
                memory_id=mine,
                entries=[stored_entry({"fact": "x"}, "y", "semantic")],
            )
        )
        assert "permission_denied" in refused["errors"][0]  # host two grants no one
        two.send(
            new_message(
                "memory/store/req",
                memory_id=mine,
                entries=[stored_entry({"scratch": 2}, "two's scratch", "working", tags=["geo"])],
            )
        )
        assert one.disconnect() == 0
        after = two.send(new_message("memory/retrieve/req", memory_id=mine, tags=["geo"]))
        assert sorted(e["key"].popitem()[0] for e in after["entries"]) == [
            "fact",
            "note",
            "scratch",
        ]
        assert [e["content"] for e in after["entries"] if e["tier"] == "working"] == [
            "two's scratch"
        ]

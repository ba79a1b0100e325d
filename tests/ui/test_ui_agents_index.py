"""The agents index (``/ui/``) counts exactly what the signed-in principal may read, from
the counts the store keeps: past any number of records, after deletes and tier moves,
and never a record of another principal."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from a2m_server import A2MServer
from a2m_server.bindings.http import create_app

TOKENS = {"alice-token": "alice", "bob-token": "bob"}


def _signed_in(app: object, token: str) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1:8765")
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/login").text)
    assert csrf is not None
    client.post("/ui/login", data={"csrf": csrf.group(1), "token": token, "next": "/ui/"})
    return client


def _index(client: TestClient) -> dict[str, tuple[int, dict[str, int], dict[str, int]]]:
    """agent → (records, per framework, per tier), as the page shows them."""
    page = client.get("/ui/")
    assert page.status_code == 200
    assert "most recent" not in page.text
    shown: dict[str, tuple[int, dict[str, int], dict[str, int]]] = {}
    for row in re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", page.text):
        name = re.search(r">([^<]*)</a>", row)
        total = re.search(r'data-label="Records">(\d+)<', row)
        assert name is not None
        assert total is not None
        cells = re.findall(r'data-label="(?:Frameworks|Tiers)">(.*?)</td>', row)
        frameworks, tiers = (
            {n: int(c) for n, c in re.findall(r'<li>([^<]*) <span class="count">(\d+)', cell)}
            for cell in cells
        )
        shown[name.group(1)] = (int(total.group(1)), frameworks, tiers)
    return shown


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as running:
        alice = running.connect(principal="alice")
        for start in range(0, 2400, 400):  # more than the 2,000 a scan once read
            records = [
                {
                    "content": f"fact {i}",
                    "tier": "episodic",
                    "metadata": {
                        "source_agent": "planner" if i % 3 else "coder",
                        "source_framework": "crewai" if i % 2 else "langgraph",
                    },
                }
                for i in range(start, start + 400)
            ]
            alice.call("memory/remember", {"records": records})
        running.connect(principal="bob").call(
            "memory/remember",
            {"records": [{"content": "bob's", "metadata": {"source_agent": "scout"}}] * 3},
        )
        yield running


def test_counts_are_exact_per_principal_past_any_number_of_records(server: A2MServer) -> None:
    app = create_app(server, tokens=TOKENS)
    alice, bob = _signed_in(app, "alice-token"), _signed_in(app, "bob-token")
    assert _index(alice) == {
        "planner": (1600, {"crewai": 800, "langgraph": 800}, {"episodic": 1600}),
        "coder": (800, {"crewai": 400, "langgraph": 400}, {"episodic": 800}),
    }
    assert _index(bob) == {"scout": (3, {"—": 3}, {"working": 3})}

    # A delete and a tier move show at once, for their owner only.
    owner = server.connect(principal="alice")
    found = owner.call("memory/timeline", {"where": {"source_agent": "coder"}, "limit": 5})
    ids = [r["id"] for r in found["records"]]
    owner.call("memory/forget", {"ids": ids[:2]})
    owner.call("memory/promote", {"ids": ids[2:], "tier": "semantic"})
    coder = _index(alice)["coder"]
    assert coder[0] == 798
    assert coder[2] == {"episodic": 795, "semantic": 3}
    # semantic is a shared tier: bob now reads those three records too, and only them.
    moved: dict[str, int] = {}
    for record in found["records"][2:]:
        name = record["metadata"]["source_framework"]
        moved[name] = moved.get(name, 0) + 1
    assert _index(bob) == {
        "scout": (3, {"—": 3}, {"working": 3}),
        "coder": (3, moved, {"semantic": 3}),
    }


def test_without_tokens_the_index_counts_every_record(server: A2MServer) -> None:
    client = TestClient(create_app(server), base_url="http://127.0.0.1:8765")
    shown = _index(client)
    assert {agent: total for agent, (total, _, _) in shown.items()} == {
        "planner": 1600,
        "coder": 800,
        "scout": 3,
    }

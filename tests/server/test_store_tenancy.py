"""Tenancy (§6) with authenticated principals, on both stores: what ``memory/consolidate``
and ``memory/session/close`` answer counts only records the caller can read, the
``consolidated`` events a caller reads count only its own changes, and a write naming
another principal's record id is refused with ``SCOPE_DENIED`` (it used to answer with
that id and store nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from a2m_server import A2MServer, ServerConfig, TierConfig
from a2m_server.errors import ProtocolError
from a2m_testing.servers import serve_http

SCOPE_DENIED = -32005
TIERS = (
    TierConfig("working", kind="working", capacity=2, spill_to="episodic", per_session=True),
    TierConfig("episodic", kind="episodic", capacity=3, spill_to=None),
    TierConfig("semantic", kind="semantic", shared=True),
)


@pytest.fixture
def server(store_backend: str) -> Iterator[A2MServer]:
    with A2MServer(ServerConfig(tiers=TIERS)) as server:
        yield server


def as_(server: A2MServer, principal: str) -> Any:
    return server.connect(transport="http", principal=principal)


def described_counts(peer: Any) -> dict[str, int]:
    return {t["name"]: t["count"] for t in peer.call("memory/describe")["tiers"]}


def cursor(peer: Any) -> str:
    return str(peer.call("memory/events")["cursor"])


def consolidated_counts(peer: Any, since: str) -> list[dict[str, int]]:
    """The counts of every ``consolidated`` event ``peer`` reads after ``since``."""
    params = {"cursor": since, "kinds": ["consolidated"], "limit": 1000}
    events = peer.call("memory/events", params)["events"]
    assert all(event["kind"] == "consolidated" for event in events), events
    kinds = ("moved", "promoted", "dropped", "summarized")
    return [{kind: event[kind] for kind in kinds} for event in events]


def test_consolidate_and_session_close_count_only_what_the_caller_reads(
    server: A2MServer,
) -> None:
    alice, bob = as_(server, "alice"), as_(server, "bob")
    since = {"alice": cursor(alice), "bob": cursor(bob)}
    # Bob's private records overflow working into episodic, and episodic drops some.
    for n in range(8):
        bob.call("memory/remember", {"records": [{"content": f"bob private {n}", "session": "b1"}]})
    bob.call("memory/remember", {"records": [{"content": "bob shared", "tier": "semantic"}]})
    alice.call("memory/remember", {"records": [{"content": "alice own", "session": "a1"}]})

    result = alice.call("memory/consolidate")
    assert result["counts"] == described_counts(alice)
    assert result["counts"] == {"working": 1, "episodic": 0, "semantic": 1}
    assert (result["moved"], result["promoted"], result["dropped"]) == (0, 0, 0)
    closed = alice.call("memory/session/close", {"session": "a1"})
    assert closed["counts"] == described_counts(alice)
    assert closed["counts"] == {"working": 0, "episodic": 1, "semantic": 1}
    assert closed["flushed"] == 1
    assert closed["moved"] == 0
    assert closed["dropped"] == 0

    # Bob, who can read his own records, is told of them (alice's flush pushed one of
    # his out of the shared-capacity episodic tier; she was not told).
    assert bob.call("memory/consolidate")["counts"] == {"working": 2, "episodic": 2, "semantic": 1}
    closed = bob.call("memory/session/close", {"session": "b1"})
    assert closed["flushed"] == 2
    assert closed["dropped"] == 2  # episodic held 3 of its 3, and took 2 more

    # No consolidated event alice can read counts bob's private changes.
    for counts in consolidated_counts(alice, since["alice"]):
        assert counts == dict.fromkeys(("moved", "promoted", "dropped", "summarized"), 0)
    # Bob's own events count his: 6 moved out of working and 3 dropped by the writes, one
    # dropped after alice's flush, 2 dropped after his own (a flush is not a move).
    bob_counts = consolidated_counts(bob, since["bob"])
    assert sum(c["moved"] for c in bob_counts) == 6
    assert sum(c["dropped"] for c in bob_counts) == 6


def test_a_write_naming_another_principals_record_id_is_refused(server: A2MServer) -> None:
    alice, bob = as_(server, "alice"), as_(server, "bob")
    (taken,) = bob.call("memory/remember", {"records": [{"content": "bob's fact"}]})["ids"]
    before = alice.call("memory/timeline", {"limit": 100})["records"]
    with pytest.raises(ProtocolError) as refused:
        alice.call(
            "memory/remember",
            {"records": [{"content": "mine"}, {"id": taken, "content": "alice's text"}]},
        )
    assert refused.value.code == SCOPE_DENIED
    assert refused.value.data["field"] == "records.1.id"
    assert taken not in refused.value.message
    # Nothing written (the batch is one transaction), bob's record untouched.
    assert alice.call("memory/timeline", {"limit": 100})["records"] == before
    (record,) = [
        r for r in bob.call("memory/timeline", {"limit": 100})["records"] if r["id"] == taken
    ]
    assert record["content"] == "bob's fact"
    # The owner repeating its own id is still the same write, answered with the id.
    again = bob.call("memory/remember", {"records": [{"id": taken, "content": "bob's fact"}]})
    assert again["ids"] == [taken]


def test_over_http_with_tokens(server: A2MServer) -> None:
    tokens = {"token-a": "alice", "token-b": "bob"}
    with serve_http(server, tokens=tokens) as url:

        def call(token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
            response = httpx.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            )
            assert response.status_code == 200, response.text
            answer: dict[str, Any] = response.json()
            return answer

        for n in range(6):
            call("token-b", "memory/remember", {"records": [{"content": f"b {n}", "session": "s"}]})
        taken = call("token-b", "memory/remember", {"records": [{"content": "b"}]})["result"]
        answer = call("token-a", "memory/consolidate", {})["result"]
        assert answer["counts"] == {"working": 0, "episodic": 0, "semantic": 0}
        answer = call("token-a", "memory/remember", {"records": [{"id": taken["ids"][0],
                                                                  "content": "x"}]})  # fmt: skip
        assert answer["error"]["code"] == SCOPE_DENIED

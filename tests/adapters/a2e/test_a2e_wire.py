"""The four wire examples of seed 000, replayed as JSON text, produce the seed's responses
(message ids, timestamps and the issued memory_id aside), on every binding, sync and async."""

from __future__ import annotations

import json
from typing import Any

from a2e_support import Host, entry

SEED_MEMORY_ID = "a1b2c3d4-e5f6-7890-abcd-ef1234567890"

INIT_REQ = '{"type":"memory/init/req","id":"m0a","version":"1.0","ts":1716123456.500,"namespace":"agent-session-1","scope":{"agent":"assistant"},"metadata":{"version":"1.0"}}'
INIT_RESP = '{"type":"memory/init/resp","id":"m0b","version":"1.0","ts":1716123456.550,"req_id":"m0a","memory_id":"a1b2c3d4-e5f6-7890-abcd-ef1234567890","namespace":"agent-session-1"}'
STORE_REQ = '{"type":"memory/store/req","id":"m1","version":"1.0","ts":1716123456.789,"memory_id":"a1b2c3d4-e5f6-7890-abcd-ef1234567890","entries":[{"key":{"agent":"a1","topic":"prefs"},"content":{"language":"python","style":"concise"},"tier":"episodic","tags":["preferences"],"source":"turn-1","score":0.9,"ttl":0}]}'
STORE_RESP = '{"type":"memory/store/resp","id":"m2","version":"1.0","ts":1716123456.800,"req_id":"m1","stored":[{"agent":"a1","topic":"prefs"}],"errors":[]}'
RETRIEVE_REQ = '{"type":"memory/retrieve/req","id":"m3","version":"1.0","ts":1716123457.100,"memory_id":"a1b2c3d4-e5f6-7890-abcd-ef1234567890","keys":[],"query":"user coding preferences","tags":[],"tier":"","limit":5,"min_score":0.5}'
FORGET_REQ = '{"type":"memory/forget/req","id":"m4","version":"1.0","ts":1716123458.100,"memory_id":"a1b2c3d4-e5f6-7890-abcd-ef1234567890","keys":[],"tags":["temp"],"tier":"working"}'
FORGET_RESP = '{"type":"memory/forget/resp","id":"m5","version":"1.0","ts":1716123458.200,"req_id":"m4","deleted":3}'


def replay(host: Host, text: str, memory_id: str) -> dict[str, Any]:
    return host.handle_json(text.replace(SEED_MEMORY_ID, memory_id))


def same_but_ids_and_times(got: dict[str, Any], seed_text: str) -> None:
    seed = json.loads(seed_text)
    assert set(got) == set(seed)
    assert isinstance(got["id"], str)
    assert got["id"] != seed["id"]  # a fresh UUID, not an echo
    assert isinstance(got["ts"], float)
    ignored = {"id", "ts", "memory_id"}
    assert {k: v for k, v in got.items() if k not in ignored} == {
        k: v for k, v in seed.items() if k not in ignored
    }


def init(host: Host) -> str:
    response = host.handle_json(INIT_REQ)
    return str(response["memory_id"])


def test_initialize_memory_session(host: Host) -> None:
    response = host.handle_json(INIT_REQ)
    same_but_ids_and_times(response, INIT_RESP)
    assert response["memory_id"] != SEED_MEMORY_ID


def test_store_memory(host: Host) -> None:
    memory = init(host)
    same_but_ids_and_times(replay(host, STORE_REQ, memory), STORE_RESP)


def test_retrieve_by_similarity_search(host: Host) -> None:
    memory = init(host)
    replay(host, STORE_REQ, memory)
    host.store(memory, entry({"agent": "a1", "topic": "weather"}, "it rains", score=0.9))
    host.store(memory, entry({"agent": "a1", "topic": "old"}, "user coding preferences", score=0.2))
    response = replay(host, RETRIEVE_REQ, memory)
    assert set(response) == {"type", "id", "version", "ts", "req_id", "entries", "total"}
    assert (response["type"], response["req_id"], response["version"]) == (
        "memory/retrieve/resp",
        "m3",
        "1.0",
    )
    # min_score 0.5 leaves out the 0.2 entry even though its words match best.
    assert response["total"] == 1
    (found,) = response["entries"]
    assert {k: v for k, v in found.items() if k not in ("created_at", "updated_at")} == {
        "key": {"agent": "a1", "topic": "prefs"},
        "content": {"language": "python", "style": "concise"},
        "tier": "episodic",
        "tags": ["preferences"],
        "source": "turn-1",
        "score": 0.9,
        "ttl": 0,
    }


def test_forget_by_tag(host: Host) -> None:
    memory = init(host)
    host.store(
        memory, *[entry({"scratch": n}, f"step {n}", "working", tags=["temp"]) for n in range(3)]
    )
    host.store(memory, entry({"scratch": "kept"}, "episodic", tags=["temp"]))
    same_but_ids_and_times(replay(host, FORGET_REQ, memory), FORGET_RESP)
    assert host.retrieve(memory, tags=["temp"])["total"] == 1

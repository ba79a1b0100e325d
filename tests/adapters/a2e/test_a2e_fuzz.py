"""Malformed messages — wrong types, missing fields, unknown types, huge entries, content
10,000 levels deep — get a ``memory/error`` (or a response refusing the entry), never an
exception, and leave the host working."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from a2e_support import Backend, Host, entry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2m_a2e import HostLimits, new_message

REQUESTS = ["memory/init/req", "memory/store/req", "memory/retrieve/req", "memory/forget/req"]
FIELDS = [
    "type", "id", "version", "ts", "namespace", "scope", "metadata", "memory_id", "entries",
    "keys", "query", "tags", "tier", "limit", "min_score", "include_embeddings",
]  # fmt: skip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for level in range(levels):
        value = [value] if level % 2 else {"d": value}
    return value


@pytest.fixture(params=["sync", "async"])
def fuzzed(
    request: pytest.FixtureRequest, make_backend: Callable[[str], Backend]
) -> Iterator[tuple[Host, str]]:
    host = make_backend("in-process").host(
        request.param,
        semantic_writers=["*"],
        limits=HostLimits(max_entry_bytes=4096, max_message_bytes=1 << 20),
    )
    return host, host.init()


def must_answer(host: Host, message: Any) -> dict[str, Any]:
    response = host.handle(message)
    json.dumps(response)  # always JSON
    return response


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from([*REQUESTS, "memory/store/resp", "memory/nope", ""]),
    fields=st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6),
    drop=st.sets(st.sampled_from(FIELDS), max_size=4),
    use_memory=st.booleans(),
)
def test_random_fields_get_an_answer(
    fuzzed: tuple[Host, str], kind: str, fields: dict[str, Any], drop: set[str], use_memory: bool
) -> None:
    host, memory = fuzzed
    base = new_message(kind, memory_id=memory) if kind in REQUESTS[1:] else {"type": kind}
    if use_memory:
        fields.pop("memory_id", None)
    message = {**base, **fields}
    for name in drop:
        message.pop(name, None)
    response = must_answer(host, message)
    if response["type"] == "memory/error":
        assert isinstance(response["code"], str)
        assert response["code"]
        assert response["req_id"] == (message["id"] if isinstance(message.get("id"), str) else "")


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.lists(json_values, max_size=4))
def test_random_entries_are_refused_one_by_one(fuzzed: tuple[Host, str], raw: list[Any]) -> None:
    host, memory = fuzzed
    response = must_answer(host, new_message("memory/store/req", memory_id=memory, entries=raw))
    assert response["type"] == "memory/store/resp"
    assert len(response["stored"]) + len(response["errors"]) <= len(raw)


@pytest.mark.parametrize(
    "message",
    [
        None,
        [],
        "memory/init/req",
        {"type": 7},
        {"type": "memory/init/req"},  # no namespace
        {"type": "memory/init/req", "namespace": "Bad Namespace!"},
        {"type": "memory/init/req", "namespace": "ns", "scope": []},
        {"type": "memory/init/req", "namespace": "ns", "version": "2.0"},
        {"type": "memory/init/req", "namespace": "ns", "ts": "yesterday"},
        {"type": "memory/init/req", "namespace": "ns", "ts": float("nan")},
        {"type": "memory/init/req", "namespace": "ns", "ts": float("inf")},
        {"type": "memory/init/req", "namespace": "ns", "id": 12},
        {"type": "memory/store/req"},  # no memory_id
        {"type": "memory/retrieve/req", "memory_id": ["x"]},
    ],
)
def test_malformed_messages_are_errors(fuzzed: tuple[Host, str], message: Any) -> None:
    host, _ = fuzzed
    response = must_answer(host, message)
    assert response["type"] == "memory/error"


def test_wrong_field_types_in_a_live_memory_are_errors(fuzzed: tuple[Host, str]) -> None:
    host, memory = fuzzed
    for fields in (
        {"entries": {"key": {}}},
        {"entries": "x"},
    ):
        assert (
            must_answer(host, {**new_message("memory/store/req", memory_id=memory), **fields})[
                "code"
            ]
            == "invalid_message"
        )
    for fields in (
        {"keys": "k"},
        {"keys": [1]},
        {"tags": [1]},
        {"tier": "archive"},
        {"limit": -1},
        {"limit": True},
        {"min_score": "high"},
        {"query": 5},
        {"query": "\ud800"},
        {"tags": ["\udfff"]},
    ):
        request = {**new_message("memory/retrieve/req", memory_id=memory), **fields}
        assert must_answer(host, request)["code"] == "invalid_message", fields


def test_deep_and_huge_content_is_refused_and_the_host_keeps_working(
    fuzzed: tuple[Host, str],
) -> None:
    host, memory = fuzzed
    nested = deep(10_000)
    response = host.store(memory, entry({"k": "deep"}, nested), entry({"k": "ok"}, "fine"))
    assert response["stored"] == [{"k": "ok"}]
    assert "nests deeper than 64 levels" in response["errors"][0]
    huge = host.store(memory, entry({"k": "huge"}, "x" * 100_000))
    assert huge["stored"] == []
    assert "4096" in huge["errors"][0]
    deep_key = host.store(memory, {"key": nested, "content": 1, "tier": "episodic"})
    assert deep_key["stored"] == []
    assert len(deep_key["errors"]) == 1
    text = '{"type":"memory/store/req","entries":' + "[" * 10_000 + "]" * 10_000 + "}"
    assert host.handle_json(text)["code"] == "invalid_message"
    assert host.handle_json("x" * (2 << 20))["code"] == "invalid_message"  # over the message limit
    assert host.handle_json(b"\xff\xfe")["code"] == "invalid_message"
    assert host.handle_json("not json")["code"] == "invalid_message"
    assert host.retrieve(memory, keys=[{"k": "ok"}])["total"] == 1

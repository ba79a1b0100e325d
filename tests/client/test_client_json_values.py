"""The client refuses what JSON cannot carry exactly — NaN, infinities, sets, bytes, tuples,
keys that are not text, lone surrogates, values nested past ``MAX_JSON_DEPTH`` — in every
param of every method, with :class:`~a2m.InvalidParams` naming the place, before anything
is sent: on every binding (in-process, stdio, HTTP, REST), sync and async. Nothing of a
refused call reaches the store."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

import a2m
from a2m import A2MClient, AsyncA2MClient, RecordInput
from a2m.transports._base import encode_message
from a2m_types.json_values import MAX_JSON_DEPTH

pytestmark = pytest.mark.anyio


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _circular() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


BAD_VALUES: list[tuple[str, Any, str]] = [
    ("nan", math.nan, "holds nan"),
    ("inf", math.inf, "holds inf"),
    ("-inf", -math.inf, "holds -inf"),
    ("set", {1, 2}, "holds a set"),
    ("bytes", b"raw", "holds bytes"),
    ("tuple", (1, 2), "holds a tuple"),
    ("int-key", {1: "one"}, "has the key 1"),
    ("surrogate", "bad \ud800 text", "lone surrogate"),
    ("surrogate-key", {"\udfff": 1}, "lone surrogate"),
    ("too-deep", _nested(MAX_JSON_DEPTH + 1), f"deeper than {MAX_JSON_DEPTH} levels"),
    ("10000-deep", _nested(10_000), f"deeper than {MAX_JSON_DEPTH} levels"),
    ("circular", _circular(), f"deeper than {MAX_JSON_DEPTH} levels"),
]
SURROGATE = "lone \udc80 surrogate"


def _calls(bad: Any) -> list[tuple[str, tuple[Any, ...], dict[str, Any], str]]:
    """(method, args, kwargs, the path the refusal must name) for one bad value, placed
    in every param that carries free JSON."""
    return [
        ("remember", ({"content": "c", "metadata": {"k": bad}},), {}, "records[0].metadata.k"),
        (
            "remember",
            (["fine", {"content": "c", "metadata": {"a": [1, {"b": bad}]}}],),
            {},
            "records[1].metadata.a[1].b",
        ),
        ("remember", (RecordInput(content="c", metadata={"k": bad}),), {}, "records[0].metadata.k"),
        ("recall", ("q",), {"where": {"metadata.k": [1, bad]}}, "where.metadata.k[1]"),
        ("recall", ("q",), {"where": {"score": {"$in": [bad]}}}, "where.score.$in[0]"),
        ("timeline", (), {"where": {"k": {"$ne": bad}}}, "where.k.$ne"),
        ("forget", (), {"where": {"k": [bad]}}, "where.k[0]"),
    ]


# Text params: every one refuses a lone surrogate, naming itself.
SURROGATE_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("remember", (SURROGATE,), {}, "records[0].content"),
    ("remember", ({"content": "c", "key": SURROGATE},), {}, "records[0].key"),
    ("remember", ({"content": "c", "session": SURROGATE},), {}, "records[0].session"),
    ("remember", ("c",), {"session": SURROGATE}, "session"),
    ("recall", (SURROGATE,), {}, "query"),
    ("recall", ("q",), {"where": {SURROGATE: 1}}, "where"),
    ("recall", ("q",), {"key_prefix": SURROGATE}, "key_prefix"),
    ("timeline", (), {"tier": SURROGATE}, "tier"),
    ("forget", ([SURROGATE],), {}, "ids[0]"),
    ("fetch", (SURROGATE,), {}, "key"),
    ("promote", (["a", SURROGATE], "long"), {}, "ids[1]"),
    ("close_session", (SURROGATE,), {}, "session"),
    ("summarize", (), {"query": SURROGATE, "key": "k"}, "query"),
    ("summarize", (), {"where": {"k": math.nan}}, "where.k"),
]


_METHODS = {
    "remember": "remember",
    "recall": "recall",
    "timeline": "timeline",
    "forget": "forget",
    "fetch": "fetch",
    "promote": "promote",
    "close_session": "session/close",
    "summarize": "summarize",
}


class _Counter:
    def __init__(self, client: A2MClient | AsyncA2MClient) -> None:
        self.sent = 0
        transport = client._state.transport
        if isinstance(client, AsyncA2MClient):
            original = transport.handle_async_request

            async def send(request: dict[str, Any], **options: Any) -> Any:
                self.sent += 1
                return await original(request, **options)

            transport.handle_async_request = send  # type: ignore[method-assign]
        else:
            original_sync = transport.handle_request

            def send_sync(request: dict[str, Any], **options: Any) -> Any:
                self.sent += 1
                return original_sync(request, **options)

            transport.handle_request = send_sync  # type: ignore[method-assign]


def _all_cases() -> list[tuple[str, tuple[Any, ...], dict[str, Any], str, str]]:
    cases = [
        (method, args, kwargs, path, reason)
        for _, bad, reason in BAD_VALUES
        for method, args, kwargs, path in _calls(bad)
    ]
    cases += [
        (m, a, k, p, "holds nan" if "nan" in repr(k) else "lone surrogate")
        for m, a, k, p in SURROGATE_CALLS
    ]
    return cases


async def _check_every_case(client: A2MClient | AsyncA2MClient) -> None:
    async def run(method: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(client, method)(*args, **kwargs)
        return await result if isinstance(client, AsyncA2MClient) else result

    await run("describe")
    counter = _Counter(client)
    for method, args, kwargs, path, reason in _all_cases():
        with pytest.raises(a2m.InvalidParams) as caught:
            await run(method, *args, **kwargs)
        message = str(caught.value)
        if "invalid arguments (" in message:
            # Refused by validation (a constrained string), which names it its own way.
            dotted = re.sub(r"\[(\d+)\]", r".\1", path)
            assert f"({dotted}: " in message, (path, message)
            continue
        assert "nothing was sent" in message, (method, path, message)
        assert reason in message, (method, path, message)
        if path:
            # Too deep a value is named where it passes the limit, beneath ``path``.
            field = caught.value.data["field"]
            assert field == path or field.startswith((f"{path}[", f"{path}.")), (path, field)
            # (a path nested past reading is shortened in the message, kept whole in data)
            assert message.startswith(f"memory/{_METHODS[method]}: {field[:60]}"), message
    assert counter.sent == 0
    listed = await run("timeline")
    assert listed.records == []


async def test_the_sync_client_refuses_what_json_cannot_carry(
    a2m_binding: str, a2m_client_factory: Any
) -> None:
    await _check_every_case(a2m_client_factory(a2m_binding))


async def test_the_async_client_refuses_what_json_cannot_carry(
    a2m_binding: str, a2m_async_client_factory: Any
) -> None:
    await _check_every_case(a2m_async_client_factory(a2m_binding))


def test_values_json_carries_exactly_still_go_and_come_back(
    a2m_binding: str, a2m_client_factory: Any
) -> None:
    """The edge of the limit and the values the check lets through are stored exactly."""
    client = a2m_client_factory(a2m_binding)
    deepest = _nested(MAX_JSON_DEPTH - 1)  # under metadata, itself one level
    metadata = {"deep": deepest, "big": 10**30, "tiny": 5e-324, "text": "ünï ✓", "none": None}
    client.remember({"content": "edge", "key": "edge/1", "metadata": metadata})
    fetched = client.fetch("edge/1").record
    assert fetched is not None
    assert fetched.metadata == metadata


def test_the_encoder_backstop_names_the_place_and_never_leaks_a_bare_error() -> None:
    """A request built by hand still never leaves as NaN-as-null or a bare encoder error."""
    for params, path in [
        ({"x": [1.0, math.nan]}, "params.x[1]"),
        ({"x": {"y": {3, 4}}}, "params.x.y"),
        ({"x": "\ud800"}, "params.x"),
        ({"x": _nested(5000)}, "params.x"),
        ({"x": _circular()}, "params.x"),
    ]:
        message = {"jsonrpc": "2.0", "id": 1, "method": "memory/recall", "params": params}
        with pytest.raises(a2m.InvalidParams) as caught:
            encode_message(message)
        assert caught.value.data["field"].startswith(path)
        assert caught.value.method == "memory/recall"

"""Requests proven plain by construction: ``memory/remember`` params read off a validated
model go to orjson without the encoder's plain-JSON walk. Whatever callers pass, every
message orjson is handed must still pass that walk, and the bytes sent must be exactly the
standard library's."""

from __future__ import annotations

import json
import math
import random
import uuid
from datetime import datetime, timezone
from enum import Enum
from typing import Any

import pytest

from a2m import A2MClient, InvalidParams, RecordInput
from a2m import _core as core
from a2m._types import NOT_GIVEN
from a2m.transports import _base
from a2m.transports._base import PlainRequest, encode_message
from a2m_server import A2MServer
from a2m_types.plain_json import fast_dumps, orjson_matches_stdlib

orjson = pytest.importorskip("orjson")


def _stdlib(message: Any) -> bytes:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


class _Text(str):
    pass


class _Kind(str, Enum):
    NOTE = "note"


class _Float(float):
    pass


class _Checked:
    """The client encoder's orjson call, but every message handed to it must pass the
    plain-JSON walk."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, value: Any) -> bytes | None:
        assert type(value) is dict, "orjson must get a plain dict, never a subclass"
        assert orjson_matches_stdlib(value), f"orjson was handed a non-plain message: {value!r}"
        self.seen.append(value)
        return fast_dumps(value)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> _Checked:
    spy = _Checked()
    monkeypatch.setattr(_base, "fast_dumps", spy)
    return spy


rnd = random.Random(11)
VECTOR = [rnd.uniform(-1, 1) * 10 ** rnd.randint(-300, 300) for _ in range(384)]

PLAIN_BATCHES: list[Any] = [
    [{"content": "a fact", "embedding": VECTOR, "metadata": {"n": 2**63 - 1, "f": 0.1}}],
    [{"content": 'é\u2028\x00\x1f"\\', "key": "k/1", "salience": 0.25, "role": "user"}],
    # Subclasses and ints where strings and floats belong: validation makes them exact.
    [
        {
            "content": _Text("sub"),
            "role": _Kind.NOTE,
            "salience": _Float(0.5),
            "embedding": [_Float(1.5), 2, -0.0, 5e-324],
        }
    ],
    [RecordInput(content="model", embedding=[0.5, 0.25], metadata={"deep": [[1, {"x": None}]]})],
    # Plain JSON that orjson refuses (an int past 64 bits): the standard library encodes it.
    [{"content": "big", "metadata": {"big": 10**30, "small": -(2**63)}}],
]

NOT_PLAIN_METADATA: list[Any] = [
    {"x": math.nan},
    {"deep": {"v": [1.0, -math.inf]}},
    {"kind": _Kind.NOTE},
    {"t": (1, 2)},
    {"id": uuid.UUID(int=7)},
    {"when": datetime(2026, 1, 1, tzinfo=timezone.utc)},
    {"sub": _Text("s")},
    {"f": _Float(2.5)},
]


@pytest.mark.parametrize("records", PLAIN_BATCHES)
def test_validated_remember_params_are_plain_and_encode_as_the_stdlib_does(
    records: Any, checked: _Checked
) -> None:
    call = core.prepare_remember(records, NOT_GIVEN, NOT_GIVEN)
    assert call.plain
    request = core.build_request(call, 3)
    assert type(request) is PlainRequest
    # What the proof claims, checked the slow way: the walk agrees, the bytes are those
    # of the walked path byte for byte, and the values the standard library's, every
    # float bit for bit.
    assert orjson_matches_stdlib(dict(request))
    encoded = encode_message(request)
    assert encoded == encode_message(dict(request))
    assert json.loads(encoded) == json.loads(_stdlib(request))
    assert _float_bits(json.loads(encoded)) == _float_bits(json.loads(_stdlib(request)))
    assert len(checked.seen) == 2


def _float_bits(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [bits for item in value.values() for bits in _float_bits(item)]
    if isinstance(value, list):
        return [bits for item in value for bits in _float_bits(item)]
    return [value.hex()] if isinstance(value, float) else []


@pytest.mark.parametrize("metadata", NOT_PLAIN_METADATA)
def test_metadata_that_is_not_plain_json_is_walked_before_orjson(
    metadata: Any, checked: _Checked
) -> None:
    records = [{"content": "c", "embedding": [0.5, 1.0], "metadata": metadata}]
    try:
        call = core.prepare_remember(records, NOT_GIVEN, NOT_GIVEN)
    except InvalidParams:
        return  # refused unsent, which is as safe
    assert not call.plain
    request = core.build_request(call, 1)
    assert type(request) is dict
    try:
        expected = _stdlib(request)
    except ValueError:
        with pytest.raises(InvalidParams, match="NaN and Infinity cannot be sent"):
            encode_message(request)
        return
    assert json.loads(encode_message(request)) == json.loads(expected)


def test_a_plain_request_altered_afterwards_still_never_sends_nan_as_null() -> None:
    """The proof covers how the client builds a request; orjson's own refusals stay the
    backstop for anything else, falling back to the standard library's decision."""
    request = PlainRequest(jsonrpc="2.0", id=1, method="m", params={"big": 10**30})
    assert encode_message(request) == _stdlib(dict(request))
    request = PlainRequest(jsonrpc="2.0", id=1, method="m", params={"kind": _Kind.NOTE})
    assert encode_message(request) == _stdlib(dict(request))


def test_other_methods_are_never_marked_plain() -> None:
    call = core.prepare(core.RECALL, {"query": "q", "embedding": [0.5, 1.0]})
    assert not call.plain
    assert type(core.build_request(call, 1)) is dict


def test_a_client_writes_the_exact_floats_through_the_plain_path(checked: _Checked) -> None:
    with A2MServer() as server, A2MClient.in_process(server) as client:
        client.remember(
            [
                {"content": "one", "key": "k/1", "embedding": VECTOR, "metadata": {"n": 1}},
                {"content": "two", "key": "k/2", "metadata": {"kind": _Kind.NOTE}},
            ]
        )
        one = client.fetch("k/1", embeddings=True).record
        two = client.fetch("k/2").record
    assert one is not None
    assert two is not None
    assert [x.hex() for x in one.embedding or []] == [x.hex() for x in VECTOR]
    assert two.metadata == {"kind": "note"}
    assert any(message.get("method") == "memory/remember" for message in checked.seen)

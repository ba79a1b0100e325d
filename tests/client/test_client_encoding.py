"""The request encoder: orjson, where installed, for plain JSON messages without NaN or
infinity; the standard library for everything else. Either way the same JSON values, every
float exact, and the same refusals."""

from __future__ import annotations

import json
import math
import random
from datetime import datetime
from enum import IntEnum
from fractions import Fraction
from typing import Any

import pytest

from a2m import InvalidParams
from a2m.transports._base import encode_message
from a2m_types.plain_json import fast_dumps, orjson_matches_stdlib


def _stdlib(message: Any) -> bytes:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


class _Float(float):
    pass


rnd = random.Random(7)
VECTOR = [rnd.uniform(-1, 1) * 10 ** rnd.randint(-300, 300) for _ in range(500)]
MESSAGES: list[Any] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory/remember",
        "params": {
            "records": [
                {"content": 'é\u2028\x00\x1f"\\', "embedding": VECTOR, "metadata": {"n": 2**63 - 1}}
            ]
        },
    },
    {"a": [1, 2.5, True, None, "x", [], {}], "b": [5e-324, -0.0, 1.7976931348623157e308]},
    {"huge": [10**30, 1.0], "neg": -(2**63)},
    {"overflowing sum": [1e308, 1e308]},
    {"big": 10**400},
]


@pytest.mark.parametrize("message", MESSAGES)
def test_the_same_json_values_and_exact_floats(message: Any) -> None:
    encoded = encode_message(message)
    assert json.loads(encoded) == json.loads(_stdlib(message))
    assert json.loads(encoded) == message


def test_vectors_round_trip_bit_for_bit() -> None:
    back = json.loads(encode_message({"v": VECTOR}))["v"]
    assert [x.hex() for x in back] == [x.hex() for x in VECTOR]


@pytest.mark.parametrize(
    "message",
    [
        {"v": [0.5, math.nan]},
        {"v": [0.5, math.inf]},
        {"deep": {"x": [[1.0, -math.inf]]}},
        {"x": math.nan},
        {"v": [10**400, math.nan]},
        {"v": [0.5, _Float("nan")]},
    ],
)
def test_nan_and_infinity_are_refused_anywhere(message: Any) -> None:
    with pytest.raises(InvalidParams, match=r"params\.\S+ holds .*JSON cannot carry"):
        encode_message(message)


class _Level(IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "message",
    [
        {"when": datetime(2026, 1, 1)},
        {1: "int key"},
        {"s": {1, 2}},
        {"f": _Float(1.5)},
        # Numbers in a vector that are not plain floats or ints: the same JSON or the
        # same refusal, whoever encodes them.
        {"v": [0.5, _Float(2.5)]},
        {"v": [0.5, Fraction(1, 2)]},
        {"v": [0.5, complex(1, 2)]},
        {"v": [0.5, _Level.HIGH, True]},
    ],
)
def test_what_the_standard_library_decides_stays_its_decision(message: Any) -> None:
    try:
        expected: Any = _stdlib(message)
    except (TypeError, ValueError):  # what it refuses, the encoder refuses as the client's
        with pytest.raises(InvalidParams):
            encode_message(message)
        return
    assert json.loads(encode_message(message)) == json.loads(expected)


def test_orjson_is_used_when_installed() -> None:
    pytest.importorskip("orjson")
    assert fast_dumps(MESSAGES[0]) is not None
    assert orjson_matches_stdlib(MESSAGES[0])
    assert not orjson_matches_stdlib({"v": [1.0, math.nan]})

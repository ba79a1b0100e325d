"""The plain-JSON tests the fast encoders rely on: a value they call plain must come back
from JSON exactly as it went in, and orjson must write it as the standard library does."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from enum import Enum
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from a2m_types.plain_json import (
    NOT_READ,
    fast_dumps,
    fast_loads,
    is_plain_json,
    orjson_matches_stdlib,
)


class _Float(float):
    pass


class _Colour(str, Enum):
    RED = "red"


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300)
@given(_VALUES)
def test_a_plain_value_round_trips_and_orjson_writes_it_as_the_standard_library(
    value: Any,
) -> None:
    if not is_plain_json(value):
        return
    assert orjson_matches_stdlib(value)
    text = json.dumps(value, allow_nan=False)
    assert json.loads(text) == value
    try:
        fast = orjson.dumps(value)
    except TypeError:  # an int past 64 bits: the callers fall back to the standard library
        assert _has_big_int(value)
        return
    assert json.loads(fast) == json.loads(text)


def _has_big_int(value: Any) -> bool:
    if type(value) is int:
        return not -(2**63) <= value < 2**64
    if isinstance(value, dict):
        return any(_has_big_int(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_big_int(v) for v in value)
    return False


def test_what_is_not_plain() -> None:
    for value in (
        math.nan,
        {"a": [[math.inf]]},
        {1: "a key that is not a string"},
        {"a": (1, 2)},
        {"a": _Float(1.0)},
        {"a": _Colour.RED},
        [Decimal("1.5")],
        {"a": {"b": -math.inf}},
    ):
        assert not is_plain_json(value), value
    assert not orjson_matches_stdlib({"a": [1.0, math.nan]})
    assert not orjson_matches_stdlib({"a": [1e308, 1e308, math.inf]})
    assert not orjson_matches_stdlib({1: "a"})
    assert not orjson_matches_stdlib({"a": (1,)})


def test_a_list_of_numbers_is_judged_by_one_sum() -> None:
    # Finite floats whose sum overflows are still plain; a number of another type in a
    # list passes this looser test and is refused by orjson under the passthrough options.
    assert orjson_matches_stdlib([1e308, 1e308])
    assert is_plain_json([1e308, 1e308])
    assert orjson_matches_stdlib([2**70, 1.5])
    assert orjson_matches_stdlib([Decimal("1.5")])
    assert not is_plain_json([Decimal("1.5")])


def test_the_fast_codec_hands_back_what_only_the_standard_library_reads_as_it_does() -> None:
    assert fast_dumps({"a": [1, 2.5, None]}) == b'{"a":[1,2.5,null]}'
    assert fast_dumps({"big": 2**64}) is None  # past 64 bits: the standard library writes it
    assert fast_dumps({"t": (1, 2)}) is not None  # a tuple is a list to orjson too
    assert fast_dumps({"sub": _Float(1.0)}) is None  # subclasses are passed through, refused
    assert fast_loads(b'{"a":[1,2.5]}') == {"a": [1, 2.5]}
    assert fast_loads('{"n": 1234567890123456789}') is NOT_READ  # may pass 2**63
    assert fast_loads('{"s": "\ud800"}') is NOT_READ  # a lone surrogate
    assert fast_loads(b"NaN") is NOT_READ
    assert fast_loads(b"[1e400]") is NOT_READ

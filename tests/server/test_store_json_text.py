"""``store.dump_json``: the text a store keeps reads back as the value dumped, exactly as
the standard library's text does, and what the standard library refuses is refused;
``load_json`` reads kept text back as the standard library reads it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2m_server.store import dump_json
from a2m_server.store._json_text import load_json

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_the_text_reads_back_as_the_value(value: Any) -> None:
    text = dump_json(value)
    assert json.loads(text) == json.loads(json.dumps(value, allow_nan=False))
    assert "\n" not in text


@pytest.mark.parametrize(
    "value",
    [
        {"n": 2**64 + 7},  # past 64 bits
        {"s": "\ud800"},  # a lone surrogate
        {1: "int key"},  # a key the standard library turns into text
        {"x": None, "y": [1.5]},
        ["null", "not null"],
        {"é": "ü", "ctl": "\x00\x1f"},
    ],
)
def test_what_orjson_writes_otherwise_is_the_standard_librarys_text(value: Any) -> None:
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert json.loads(dump_json(value)) == json.loads(expected)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        dump_json({"x": [0.5, {"y": bad}]})


def test_a_type_json_lacks_is_refused() -> None:
    with pytest.raises(TypeError):
        dump_json({"x": object()})


@given(_JSON | st.integers(min_value=2**62, max_value=2**70).map(lambda n: {"n": [n, -n]}))
def test_kept_text_reads_back_as_the_standard_library_reads_it(value: Any) -> None:
    for text in (dump_json(value), json.dumps(value)):
        assert load_json(text) == json.loads(text)
        assert repr(load_json(text)) == repr(json.loads(text))  # 1 stays 1, not 1.0


@pytest.mark.parametrize(
    "text",
    [
        '{"n":18446744073709551616}',  # past 64 bits, which orjson would read as a float
        '{"n":-9223372036854775809,"id":"12345678901234567890"}',
        '{"s":"\\ud800"}',  # a lone surrogate, as the standard library writes one
        '{"f":[0.1,5e-324,1.7976931348623157e308,-0.0]}',
    ],
)
def test_what_orjson_would_read_otherwise_is_read_by_the_standard_library(text: str) -> None:
    assert repr(load_json(text)) == repr(json.loads(text))

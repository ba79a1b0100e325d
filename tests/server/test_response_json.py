"""The text every binding sends (``dispatch.encode``): one line that reads back as the
standard library's JSON of the same message, with what the standard library refuses
(NaN, infinity, a type JSON lacks) refused the same way, so a result holding one is still
answered as an internal error."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2m_server import A2MServer
from a2m_server.dispatch import encode

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _standard(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@given(_JSON)
def test_the_text_reads_back_as_the_standard_librarys(value: Any) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"value": value}}
    text = encode(message)
    assert json.loads(text) == json.loads(_standard(message))
    assert "\n" not in text


@pytest.mark.parametrize(
    "value",
    [
        {"n": 2**64 + 7},  # past 64 bits
        {"s": "\ud800"},  # a lone surrogate
        {1: "int key"},  # a key the standard library turns into text
        {"t": (1, "two")},  # a tuple, written as a list
        {"v": [0.1, 1e-7, 1e16, -0.0, 2**53 + 1]},
        {"é": "ü", "ctl": "\x00\x1f\n"},
    ],
)
def test_what_orjson_writes_otherwise_is_the_standard_librarys_text(value: Any) -> None:
    assert json.loads(encode(value)) == json.loads(_standard(value))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        encode({"result": {"records": [{"score": 0.5}, {"score": bad}]}})
    with pytest.raises(ValueError):
        encode({"result": {"embedding": [0.5, bad]}})


def test_a_type_json_lacks_is_refused() -> None:
    with pytest.raises(TypeError):
        encode({"result": object()})


def test_a_result_json_cannot_carry_is_an_internal_error() -> None:
    with A2MServer() as server, server.connect() as connection:
        connection._invoke = lambda method, params: {"score": math.inf}  # type: ignore[method-assign]
        answer = json.loads(
            connection.handle('{"jsonrpc":"2.0","id":7,"method":"memory/describe"}') or ""
        )
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32603

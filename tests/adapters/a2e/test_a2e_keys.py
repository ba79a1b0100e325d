"""Composite keys: one A2M entry key per dict whatever its item order, a different one for
every different dict, always a valid entry key, and decoded back exactly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import a2m_a2e
from a2m_a2e import decode_key, encode_key
from a2m_types.rest import validate_key

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
keys = st.dictionaries(
    st.text(min_size=1), scalars | st.lists(scalars, max_size=3), min_size=1, max_size=5
)


def encoded(key: dict[str, Any]) -> str:
    try:
        return encode_key(key)
    except ValueError:
        assume(False)
        raise


@settings(deadline=None)
@given(keys)
def test_every_key_round_trips_and_is_a_valid_entry_key(key: dict[str, Any]) -> None:
    text = encoded(key)
    assert validate_key(text) == text
    assert decode_key(text) == key
    assert encode_key(dict(reversed(list(key.items())))) == text


@settings(deadline=None)
@given(keys, keys)
def test_different_keys_never_collide(one: dict[str, Any], two: dict[str, Any]) -> None:
    if one != two:
        assert encoded(one) != encoded(two)


def test_a_key_too_long_once_encoded_is_refused() -> None:
    with pytest.raises(ValueError, match="at most 512"):
        encode_key({"k": "/" * 200})


def test_the_seeds_key_reads_as_it_is_written() -> None:
    assert encode_key({"topic": "prefs", "agent": "a1"}) == "agent=a1,topic=prefs"
    assert encode_key({"n": 1}) != encode_key({"n": "1"})
    assert decode_key("user/city") is None  # another adapter's key


@pytest.mark.parametrize("bad", [{}, {"": "x"}])
def test_keys_that_name_nothing_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="key"):
        encode_key(bad)


def test_public_names() -> None:
    assert set(a2m_a2e.__all__) == {
        "CAPABILITY", "ERROR", "FORGET_REQ", "FORGET_RESP", "INIT_REQ", "INIT_RESP",
        "PROTOCOL_VERSION", "RETRIEVE_REQ", "RETRIEVE_RESP", "STORE_REQ", "STORE_RESP", "TIERS",
        "A2EMemoryPlugin", "AsyncA2EMemoryPlugin", "ErrorCode", "HostLimits", "MemorySession",
        "decode_key", "encode_key", "new_message", "serve_lines",
    }  # fmt: skip
    assert all(hasattr(a2m_a2e, name) for name in a2m_a2e.__all__)

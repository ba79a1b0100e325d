"""The escaping between LangGraph namespace tuples and A2M keys: every tuple of strings has
an address, no two share one, and ordinary names stay as other frameworks write them."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from a2m_langchain.langgraph import decode_key, decode_segment, encode_key, encode_segment
from a2m_langchain.langgraph._addressing import (
    AddressError,
    item_address,
    names_needed,
    parse_address,
)
from a2m_types.rest import (
    KEY_PATTERN,
    MAX_NAMESPACE_LENGTH,
    NAMESPACE_PATTERN,
    validate_key,
    validate_namespace,
)

labels = st.text(max_size=12)


@given(labels)
def test_segments_round_trip_and_are_valid_a2m_segments(label: str) -> None:
    encoded = encode_segment(label)
    assert re.fullmatch(NAMESPACE_PATTERN, encoded)
    assert len(encoded) <= 64
    if not encoded.startswith("--_"):  # a hashed label is named by the record instead
        assert decode_segment(encoded) == label


@given(labels, labels)
def test_distinct_labels_never_share_a_segment(a: str, b: str) -> None:
    if a != b:
        assert encode_segment(a) != encode_segment(b)


@given(st.text(max_size=100))
def test_keys_round_trip_and_are_valid_a2m_keys(key: str) -> None:
    encoded = encode_key(key)
    assert "/" not in encoded
    assert re.fullmatch(KEY_PATTERN, encoded)
    if not encoded.startswith("%_"):
        assert decode_key(encoded) == key


@given(st.lists(labels, min_size=1, max_size=4), st.text(max_size=100))
# Four labels escaping to 257 characters, one past what an A2M namespace holds.
@example(["::\x80\x80\x80" + "\U00010000" * 3, *["00::\x80\x80\x80" + "\U00010000" * 3] * 3], "")
def test_addresses_parse_back_to_the_tuple_and_key(namespace: list[str], key: str) -> None:
    if len("/".join(encode_segment(label) for label in namespace)) > MAX_NAMESPACE_LENGTH:
        # Four long labels can escape past what an A2M namespace holds: refused, by name.
        with pytest.raises(AddressError, match="A2M namespaces hold at most"):
            item_address(namespace, key)
        return
    address = item_address(namespace, key)
    metadata = names_needed(namespace, key)
    assert parse_address(address, metadata) == (tuple(namespace), key)
    space, _, entry_key = address.rpartition("/")
    validate_namespace(space)
    validate_key(entry_key)


def test_ordinary_names_are_left_as_they_are() -> None:
    assert item_address(("users", "alice-1", "wf_42"), "city") == "users/alice-1/wf_42/city"
    assert encode_segment("") == "--"
    assert encode_segment("a/b") == "--a-2fb"
    assert encode_segment("Alice") == "---41lice"
    assert encode_segment("entries") == "--entries"  # a REST route word
    assert encode_key("a/b") == "%a%2fb"
    assert encode_key("..") == "%.."
    # Tuples that would meet if joined naively get different addresses.
    assert item_address(("a", "b"), "c") != item_address(("a",), "b/c")
    assert item_address(("a/b",), "c") != item_address(("a", "b"), "c")


def test_a_root_namespace_scopes_the_addresses() -> None:
    address = item_address(("x",), "k", ("app", "v1"))
    assert address == "app/v1/x/k"
    assert parse_address(address, None, ("app", "v1")) == (("x",), "k")
    assert parse_address(address, None, ("other",)) is None
    assert parse_address("app/v1/k", None, ("app", "v1")) is None  # no namespace left


def test_long_labels_and_keys_are_hashed_and_named_by_the_record() -> None:
    label, key = "L" * 200, "k" * 600
    address = item_address(("docs", label), key)
    assert address.startswith("docs/--_")
    assert len(address) < 120
    assert parse_address(address, names_needed(("docs", label), key)) == (("docs", label), key)
    # Names that do not produce the address are not believed.
    assert parse_address(address, {"langgraph_namespace": ["x"], "langgraph_key": "y"}) != (
        ("x",),
        "y",
    )

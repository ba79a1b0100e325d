"""The public names, the clear error an unsupported LangGraph gets, and what a server
offering only the REST draft's routes can and cannot carry."""

from __future__ import annotations

import pytest

import a2m_langchain.langgraph as adapter
from a2m import A2MClient, CapabilityNotSupported
from a2m_langchain.langgraph import A2MSaver, A2MStore, _compat
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http


def test_public_names() -> None:
    assert set(adapter.__all__) == {
        "SUPPORTED",
        "A2MSaver",
        "A2MStore",
        "AddressError",
        "AsyncA2MStore",
        "ValueRefused",
        "decode_key",
        "decode_segment",
        "encode_key",
        "encode_segment",
    }


def test_a_langgraph_without_the_interface_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_compat._NEEDED, "langgraph.store.base", ("BaseStore", "NoSuchThing"))
    with pytest.raises(ImportError) as caught:
        _compat.require_langgraph()
    message = str(caught.value)
    assert "langgraph >=1.2.24,<2" in message
    assert "NoSuchThing" in message
    assert "pip install 'a2m-langchain[langgraph]'" in message


def test_nothing_is_sent_before_the_first_operation() -> None:
    client = A2MClient("http://127.0.0.1:9/")  # nothing listens there
    A2MStore(client)
    A2MSaver(client)
    client.close()


def test_a_rest_draft_server_carries_the_store_but_not_lexical_search() -> None:
    with (
        A2MServer() as server,
        serve_http(server, rest_methods=False) as url,
        A2MClient.rest(url, namespace="langgraph") as client,
    ):
        store = A2MStore(client)
        store.put(("users", "Al"), "k/1", {"a": 1})
        item = store.get(("users", "Al"), "k/1")
        assert item is not None
        assert item.value == {"a": 1}
        assert [i.key for i in store.search(("users",), filter={"a": 1})] == ["k/1"]
        with pytest.raises(CapabilityNotSupported):
            store.search(("users",), query="a")
        store.delete(("users", "Al"), "k/1")
        assert store.get(("users", "Al"), "k/1") is None

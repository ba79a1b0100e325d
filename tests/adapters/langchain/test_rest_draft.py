"""What a server offering only the REST draft's routes (entries, query) can carry: vectors
and keyed documents, so the vector store (reading many ids a fetch at a time there) and a
semantic retriever work; not roles,
sessions or groups, nor ranking by text, so the chat history, A2MMemory and a lexical
retriever are refused up front with ``CapabilityNotSupported`` and write nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage
from langchain_support import WordEmbeddings

from a2m import A2MClient
from a2m.errors import CapabilityNotSupported
from a2m_langchain import A2MChatMessageHistory, A2MMemory, A2MRetriever, A2MVectorStore
from a2m_server.server import A2MServer
from a2m_testing.servers import Servers


@pytest.fixture
def draft(servers: Servers, server: A2MServer) -> Iterator[A2MClient]:
    with A2MClient.rest(servers.http_url(server, rest_methods=False), namespace="lc") as client:
        assert client.capabilities == {"core", "keys", "embeddings"}
        yield client


def test_vectors_and_keyed_documents_travel(draft: A2MClient, server: A2MServer) -> None:
    store = A2MVectorStore(WordEmbeddings(), draft, namespace="lc/docs")
    assert store.add_texts(["tea is a drink", "my cat is a pet"], ids=["tea", "cat"]) == [
        "tea",
        "cat",
    ]
    assert [d.id for d in store.similarity_search("pet cat", k=1)] == ["cat"]
    semantic = A2MRetriever(client=draft, embeddings=WordEmbeddings(), k=1)
    assert [d.page_content for d in semantic.invoke("drink tea")] == ["tea is a drink"]
    # the draft cannot select many keys at once: the contract fetches them one by one
    assert [d.page_content for d in store.get_by_ids(["cat", "tea"])] == [
        "my cat is a pet",
        "tea is a drink",
    ]
    store.delete(["tea"])
    with A2MClient.in_process(server) as direct:
        assert [r.content for r in direct.timeline().records] == ["my cat is a pet"]


def test_conversations_are_refused_and_nothing_is_written(
    draft: A2MClient, server: A2MServer
) -> None:
    with pytest.raises(CapabilityNotSupported, match="role"):
        A2MChatMessageHistory("conv-1", draft).add_messages([HumanMessage("hi")])
    with pytest.raises(CapabilityNotSupported):
        A2MMemory(client=draft, session_id="conv-1").save_context({"in": "a"}, {"out": "b"})
    with pytest.raises(CapabilityNotSupported, match="recall by text"):
        A2MRetriever(client=draft).invoke("tea")
    with A2MClient.in_process(server) as direct:
        assert direct.timeline().records == []

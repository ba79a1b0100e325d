"""Over an authenticated connection two principals may each hold a document id (keys are
unique per owner, spec §3.6): each store reads its own document, once, by id, by search,
by MMR and through its retriever; chat histories of one session id stay apart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_support import WordEmbeddings

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain import A2MChatMessageHistory, A2MRetriever, A2MVectorStore
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")


@pytest.fixture
def url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, tokens={"token-a": "alice", "token-b": "bob"}) as served:
        yield served


def test_each_principal_reads_its_own_document_once(url: str) -> None:
    embeddings = WordEmbeddings()
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        A2MVectorStore(embeddings, client=alice).add_documents(
            [Document("alice's notes about cats")], ids=["d1"]
        )
        A2MVectorStore(embeddings, client=bob).add_documents(
            [Document("bob's notes about cats")], ids=["d1"]
        )
        for client, text in ((alice, "alice's notes about cats"), (bob, "bob's notes about cats")):
            store = A2MVectorStore(embeddings, client=client)  # fresh: knows nobody yet
            assert [d.page_content for d in store.similarity_search("cats", k=5)] == [text]
            assert [d.page_content for d in store.get_by_ids(["d1"])] == [text]
            mmr = store.max_marginal_relevance_search("cats", k=3, fetch_k=5)
            assert [d.page_content for d in mmr] == [text]
            retrieved = store.as_retriever(search_kwargs={"k": 5}).invoke("cats")
            assert [(d.id, d.page_content) for d in retrieved] == [("d1", text)]


def test_chat_histories_of_one_session_stay_apart(url: str) -> None:
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        A2MChatMessageHistory("s1", alice).add_messages([HumanMessage("alice says hi")])
        A2MChatMessageHistory("s1", bob).add_messages([HumanMessage("bob says hi")])
        assert [m.content for m in A2MChatMessageHistory("s1", alice).messages] == ["alice says hi"]
        assert [m.content for m in A2MChatMessageHistory("s1", bob).messages] == ["bob says hi"]


def test_the_retriever_reads_each_key_once_as_its_caller_reads_it(url: str) -> None:
    # A2MRetriever reads across frameworks: a key two principals hold is one memory, and
    # the caller's own record of it is the one it gets, as memory/fetch gives it (§4.9).
    embeddings = WordEmbeddings()
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        A2MVectorStore(embeddings, client=alice).add_documents(
            [Document("alice's notes about cats")], ids=["d1"]
        )
        A2MVectorStore(embeddings, client=bob).add_documents(
            [Document("bob's notes about cats"), Document("bob's cats list")], ids=["d1", "d2"]
        )
        for client, own in ((alice, "alice's notes about cats"), (bob, "bob's notes about cats")):
            retriever = A2MRetriever(client=client, k=5)  # fresh: knows nobody yet
            for _ in range(2):  # and again, once the caller may be known
                documents = retriever.invoke("cats")
                at_d1 = [d for d in documents if d.metadata["key"] == "langchain/documents/d1"]
                assert [d.page_content for d in at_d1] == [own]
                assert len({d.id for d in documents}) == len(documents)
        mine = A2MRetriever(client=alice, k=5).invoke("cats")
        assert "bob's cats list" in [d.page_content for d in mine]  # reads still cross owners


async def test_the_async_retriever_reads_each_key_once_as_its_caller_reads_it(url: str) -> None:
    embeddings = WordEmbeddings()
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        A2MVectorStore(embeddings, client=alice).add_documents(
            [Document("alice's cats")], ids=["d1"]
        )
        A2MVectorStore(embeddings, client=bob).add_documents([Document("bob's cats")], ids=["d1"])
    async with AsyncA2MClient(url, token="token-a") as client:
        documents = await A2MRetriever(async_client=client, k=5).ainvoke("cats")
    assert [d.page_content for d in documents] == ["alice's cats"]

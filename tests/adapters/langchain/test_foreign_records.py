"""What other writers put in the store reaches LangChain: an entry posted to the REST
binding with plain HTTP (as curl would) is found by the retriever, by A2MMemory's
relevant-memory lookup and, in the vector store's namespace, by the vector store."""

from __future__ import annotations

import httpx
from langchain_support import WordEmbeddings

from a2m import A2MClient
from a2m_langchain import A2MMemory, A2MRetriever, A2MVectorStore
from a2m_server.server import A2MServer
from a2m_testing.servers import Servers


def test_a_plain_rest_entry_is_found_everywhere(servers: Servers, server: A2MServer) -> None:
    url = servers.http_url(server)
    embeddings = WordEmbeddings()
    entry = {
        "key": "tea-fact",
        "type": "semantic",
        "value": "tea is a hot drink",
        "embedding": embeddings.embed_query("tea is a hot drink"),
        "meta": {"source_framework": "curl", "source_agent": "ops"},
    }
    with httpx.Client(base_url=url.rstrip("/") + "/a2m/v1", timeout=30) as http:
        http.post("/langchain/documents/entries", json=entry).raise_for_status()
    with A2MClient(url) as client:
        (found,) = A2MRetriever(client=client, k=1).invoke("tea drink")
        assert found.page_content == "tea is a hot drink"
        assert found.metadata["source_framework"] == "curl"
        assert found.metadata["source_agent"] == "ops"
        assert found.metadata["key"] == "langchain/documents/tea-fact"
        memory = A2MMemory(client=client, session_id="s", relevant_key="facts", return_docs=True)
        (fact,) = memory.load_memory_variables({"input": "is tea hot?"})["facts"]
        assert fact.metadata["source_framework"] == "curl"
        store = A2MVectorStore(embeddings, client)
        (document,) = store.similarity_search("a hot drink", k=1)
        assert (document.id, document.page_content) == ("tea-fact", "tea is a hot drink")
        assert store.get_by_ids(["tea-fact"]) == [document]

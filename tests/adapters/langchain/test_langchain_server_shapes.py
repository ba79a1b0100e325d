"""The LangChain classes on every kind of conformant A2M server, not only the bundled one's
defaults: a plain 0.1 server (no timeline cursor, no ``where`` operators, no event log),
one declaring no ``max_recall_limit``, one returning 3 records a call (with and without a
cursor), one taking 2 records a call, and ones lacking an optional capability. Each class
answers as it does on the default server, side by side; where one call cannot carry the
answer it says so (``a2m.IncompleteListing``); no call it makes of its own accord asks
past the server's ``max_recall_limit``; writes go in batches the server accepts."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_support import WordEmbeddings

from a2m import A2MClient, AsyncA2MClient, CapabilityNotSupported, IncompleteListing
from a2m.errors import QuotaExceeded
from a2m_langchain import A2MChatMessageHistory, A2MMemory, A2MRetriever, A2MVectorStore
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import MethodLog
from a2m_testing.shapes import EVERY_CAPABILITY, SERVER_SHAPES, SMALL_RECALL_NO_CURSOR, client_on

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

SHAPES = {**SERVER_SHAPES, "no cursor, max_recall_limit 3": SMALL_RECALL_NO_CURSOR}
CAPPED = 3
"""The ``max_recall_limit`` of the capped shapes."""


def _capped(shape: str) -> bool:
    return "max_recall_limit 3" in shape


def _asked_within(log: MethodLog, limit: int) -> None:
    """No read asked for more than ``limit`` records."""
    for method, params in log.calls:
        if method in ("memory/recall", "memory/timeline"):
            assert (params.get("limit") or 0) <= limit, (method, params)


def _seed(client: A2MClient, records: list[dict[str, Any]]) -> None:
    """Records written by another framework, two a call (what every shape accepts)."""
    for start in range(0, len(records), 2):
        client.remember(records[start : start + 2])


def _conversation(n: int) -> list[BaseMessage]:
    return [HumanMessage(f"q{i} tea") if i % 2 == 0 else AIMessage(f"a{i} tea") for i in range(n)]


def _history_run(client: A2MClient, capped: bool) -> dict[str, Any]:
    history = A2MChatMessageHistory("s-1", client, agent="planner")
    history.add_messages(_conversation(7))
    seen: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen["all"] = [m.content for m in history.messages]
        seen["warned"] = any(issubclass(w.category, IncompleteListing) for w in caught)
    seen["recent 2"] = [m.content for m in history.recent_messages(2)]
    return seen


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_chat_history_reads_as_on_the_default_server(shape: str) -> None:
    with client_on() as (client, _):
        want = _history_run(client, False)
    with client_on(**SHAPES[shape]) as (client, log):
        got = _history_run(client, _capped(shape))
        if "max_records_per_call 2" in shape:
            assert log.count("memory/remember") == 4  # seven messages, two a call
        if _capped(shape):
            _asked_within(log, CAPPED)
    assert not want["warned"]
    assert got["recent 2"] == want["recent 2"]
    if shape == "no cursor, max_recall_limit 3":
        assert got["warned"], "a cut conversation must say so"
        assert got["all"] == want["all"][-CAPPED:]
    else:
        assert got == want


def _memory_run(client: A2MClient) -> dict[str, Any]:
    memory = A2MMemory(client=client, session_id="s-1", k=1, relevant_key="facts")
    _seed(client, [{"content": f"tea fact {n}" + " tea" * n} for n in range(5)])
    memory.save_context({"input": "hello tea"}, {"output": "hi tea"})
    memory.save_context({"input": "more tea"}, {"output": "sure tea"})
    loaded = memory.load_memory_variables({"input": "tea"})
    return {"history": loaded["history"], "facts": loaded["facts"].splitlines()}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_memory_loads_as_on_the_default_server(shape: str) -> None:
    with client_on() as (client, _):
        want = _memory_run(client)
    with client_on(**SHAPES[shape]) as (client, log):
        got = _memory_run(client)
        if _capped(shape):
            _asked_within(log, CAPPED)
    assert got["history"] == want["history"]
    if _capped(shape):
        # relevant_k 4 on a server returning 3 a call: what the server allows, best first
        assert got["facts"] == want["facts"][: len(got["facts"])]
        assert 1 <= len(got["facts"]) <= CAPPED
    else:
        assert got == want


def _retrieved(client: A2MClient, **options: Any) -> list[str]:
    _seed(client, [{"content": f"tea note {n}" + " tea" * n} for n in range(6)])
    return [d.page_content for d in A2MRetriever(client=client, **options).invoke("tea")]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_retriever_retrieves_as_on_the_default_server(shape: str) -> None:
    with client_on() as (client, _):
        want = _retrieved(client)
    with client_on(**SHAPES[shape]) as (client, log):
        got = _retrieved(client)
        if _capped(shape):
            _asked_within(log, CAPPED)
    assert len(want) == 4
    assert got == (want[:CAPPED] if _capped(shape) else want)


def _semantic(client: A2MClient) -> list[str]:
    embeddings = WordEmbeddings()
    texts = [d.page_content for d in DOCS]
    vectors = embeddings.embed_documents(texts)
    _seed(client, [{"content": t, "embedding": v} for t, v in zip(texts, vectors, strict=True)])
    retriever = A2MRetriever(client=client, embeddings=embeddings)
    return [d.page_content for d in retriever.invoke("cat pet animal drink tea tea")]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_semantic_retriever_retrieves_as_on_the_default_server(shape: str) -> None:
    with client_on() as (client, _):
        want = _semantic(client)
    with client_on(**SHAPES[shape]) as (client, log):
        got = _semantic(client)
        if _capped(shape):
            _asked_within(log, CAPPED)
    assert len(want) == 4
    assert got == (want[:CAPPED] if _capped(shape) else want)


DOCS = [
    Document("my cat is a lovely pet", metadata={"kind": "pet"}),
    Document("my dog is a loyal pet animal", metadata={"kind": "pet"}),
    Document("tea is my favourite drink", metadata={"kind": "drink"}),
    Document("coffee is a drink too", metadata={"kind": "drink"}),
    Document("paris is a city", metadata={"kind": "place"}),
]


def _store_run(client: A2MClient) -> dict[str, Any]:
    store = A2MVectorStore(WordEmbeddings(), client)
    ids = [f"doc-{n}" for n in range(len(DOCS))]
    store.add_documents(DOCS, ids=ids)
    seen: dict[str, Any] = {
        "search": [d.page_content for d in store.similarity_search("cat pet animal", k=2)],
        "k4": [
            d.page_content for d in store.similarity_search("cat pet animal drink tea tea", k=4)
        ],
        "filtered": [
            d.page_content for d in store.similarity_search("pet", k=2, filter={"kind": "drink"})
        ],
        "mmr": [d.page_content for d in store.max_marginal_relevance_search("cat pet", k=2)],
        "by id": [d.page_content for d in store.get_by_ids(list(reversed(ids)))],
    }
    store.delete(ids[:4])
    seen["left"] = [d.page_content for d in store.get_by_ids(ids)]
    return seen


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_vector_store_answers_as_on_the_default_server(shape: str) -> None:
    with client_on() as (client, _):
        want = _store_run(client)
    with client_on(**SHAPES[shape]) as (client, log):
        got = _store_run(client)
        if "max_records_per_call 2" in shape:
            assert log.count("memory/remember") == 3  # five documents, two a call
        if _capped(shape):
            _asked_within(log, CAPPED)
    if _capped(shape):
        assert got["k4"] == want["k4"][:CAPPED]  # k is an upper bound
        got["k4"] = want["k4"]
    assert got == want


async def _astore_run(client: AsyncA2MClient) -> dict[str, Any]:
    store = A2MVectorStore(WordEmbeddings(), client)
    ids = [f"doc-{n}" for n in range(len(DOCS))]
    await store.aadd_documents(DOCS, ids=ids)
    found = await store.asimilarity_search("cat pet animal drink tea tea", k=4)
    filtered = await store.asimilarity_search("pet", k=2, filter={"kind": "drink"})
    mmr = await store.amax_marginal_relevance_search("cat pet", k=2)
    by_id = await store.aget_by_ids(list(reversed(ids)))
    await store.adelete(ids[:4])
    left = await store.aget_by_ids(ids)
    return {
        "k4": [d.page_content for d in found],
        "filtered": [d.page_content for d in filtered],
        "mmr": [d.page_content for d in mmr],
        "by id": [d.page_content for d in by_id],
        "left": [d.page_content for d in left],
    }


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_the_async_vector_store_answers_as_on_the_default_server(shape: str) -> None:
    seen = []
    for config in ({}, SHAPES[shape]):
        with A2MServer(ServerConfig(**config)) as server:
            async with AsyncA2MClient.in_process(server) as client:
                seen.append(await _astore_run(client))
    want, got = seen
    if _capped(shape):
        assert got["k4"] == want["k4"][:CAPPED]
        got["k4"] = want["k4"]
    assert got == want


async def test_the_async_twins_ask_within_the_limit_too() -> None:
    with A2MServer(ServerConfig(**SMALL_RECALL_NO_CURSOR)) as server:
        log = MethodLog(server)
        client = AsyncA2MClient.in_process(log)
        try:
            await client.remember([{"content": f"tea note {n}"} for n in range(6)])
            docs = await A2MRetriever(client=client).ainvoke("tea")
            assert len(docs) == CAPPED
            memory = A2MMemory(client=client, session_id="s", relevant_key="facts")
            await memory.asave_context({"input": "tea"}, {"output": "tea"})
            loaded = await memory.aload_memory_variables({"input": "tea"})
            assert loaded["facts"]
            history = A2MChatMessageHistory("s", client)
            await history.aadd_messages(_conversation(4))
            with pytest.warns(IncompleteListing):
                assert len(await history.aget_messages()) == CAPPED
            _asked_within(log, CAPPED)
        finally:
            await client.aclose()


SMALL_BATCHES = ServerConfig(limits=LimitsConfig(max_records_per_call=2, max_content_length=40))
"""Two records a call, and content of at most 40 characters."""
TOO_LONG = [*_conversation(4), HumanMessage("tea " * 20)]
"""Five messages, the last too long for :data:`SMALL_BATCHES`: the third batch is refused."""


def test_a_write_in_several_batches_is_all_or_nothing() -> None:
    """The two batches the server took are taken back: the conversation is as it was."""
    with A2MServer(SMALL_BATCHES) as server, A2MClient.in_process(server) as client:
        history = A2MChatMessageHistory("s", client)
        history.add_messages(_conversation(2))
        with pytest.raises(QuotaExceeded):
            history.add_messages(TOO_LONG)
        assert [m.content for m in history.messages] == ["q0 tea", "a1 tea"]
        assert len(client.timeline().records) == 2


async def test_an_async_write_in_several_batches_is_all_or_nothing() -> None:
    with A2MServer(SMALL_BATCHES) as server:
        async with AsyncA2MClient.in_process(server) as client:
            history = A2MChatMessageHistory("s", client)
            await history.aadd_messages(_conversation(2))
            with pytest.raises(QuotaExceeded):
                await history.aadd_messages(TOO_LONG)
            assert [m.content for m in await history.aget_messages()] == ["q0 tea", "a1 tea"]
            assert len((await client.timeline()).records) == 2


def _stored(records: list[Any]) -> list[tuple[Any, ...]]:
    """What a reader sees of each record, embeddings included, ordered by key."""
    return sorted((r.key, r.content, r.metadata, r.embedding, r.session) for r in records)


ADDED = [
    Document("cat tea", metadata={"n": 0}),
    Document("dog tea", metadata={"n": 1}),
    Document("tea " * 20, metadata={"n": 2}),  # over max_content_length: refused
]
"""Three documents, the first replacing ``doc-0``, the last too long for
:data:`SMALL_BATCHES`: its call, the second, is refused after the first was taken."""


def test_adding_documents_in_several_batches_is_all_or_nothing() -> None:
    """Like PGVector's ``add_texts``, one transaction: the document the first call
    replaced is back as it was (content, metadata, vector), the one it added is gone."""
    with A2MServer(SMALL_BATCHES) as server, A2MClient.in_process(server) as client:
        store = A2MVectorStore(WordEmbeddings(), client)
        store.add_documents([Document("old cat", metadata={"n": -1})], ids=["doc-0"])
        before = _stored(client.timeline(embeddings=True).records)
        with pytest.raises(QuotaExceeded):
            store.add_documents(ADDED, ids=["doc-0", "doc-1", "doc-2"])
        assert _stored(client.timeline(embeddings=True).records) == before
        assert [d.page_content for d in store.get_by_ids(["doc-0", "doc-1"])] == ["old cat"]


async def test_adding_documents_async_in_several_batches_is_all_or_nothing() -> None:
    with A2MServer(SMALL_BATCHES) as server:
        async with AsyncA2MClient.in_process(server) as client:
            store = A2MVectorStore(WordEmbeddings(), client)
            await store.aadd_documents([Document("old cat", metadata={"n": -1})], ids=["doc-0"])
            before = _stored((await client.timeline(embeddings=True)).records)
            with pytest.raises(QuotaExceeded):
                await store.aadd_documents(ADDED, ids=["doc-0", "doc-1", "doc-2"])
            assert _stored((await client.timeline(embeddings=True)).records) == before


LACKING = ["keys", "sessions", "scopes", "tiers", "embeddings"]


@pytest.mark.parametrize("missing", LACKING)
def test_a_missing_capability_works_or_is_refused_by_name(missing: str) -> None:
    config = {"capabilities": EVERY_CAPABILITY - {missing}}
    with client_on() as (client, _):
        want = (_history_run(client, False), _retrieved(client), _memory_run(client))
    with client_on(**config) as (client, _):
        got = (_history_run(client, False), _retrieved(client), _memory_run(client))
        assert got == want
        if missing == "embeddings":  # vectors are refused by name, before anything is sent
            semantic = A2MRetriever(client=client, embeddings=WordEmbeddings())
            with pytest.raises(CapabilityNotSupported, match=missing):
                semantic.invoke("cat")
            with pytest.raises(CapabilityNotSupported, match=missing):
                A2MChatMessageHistory("e", client, embeddings=WordEmbeddings()).add_messages(
                    _conversation(1)
                )
        memory = A2MMemory(client=client, session_id="m", agent="planner")
        memory.save_context({"input": "x"}, {"output": "y"})
        assert memory.load_memory_variables({})["history"] == "Human: x\nAI: y"
        memory.clear()
        assert memory.load_memory_variables({})["history"] == ""
        if missing in ("keys", "embeddings"):  # documents are keyed entries with vectors
            with pytest.raises(CapabilityNotSupported, match=missing):
                _store_run(client)
            return
        seen = _store_run(client)
    with client_on() as (default, _):
        assert seen == _store_run(default)

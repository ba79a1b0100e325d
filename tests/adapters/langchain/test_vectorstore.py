"""A2MVectorStore beyond the standard suite: batching, filters, MMR, deletes scoped to the
store's namespace, from_texts, and the async twins, on three bindings."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_support import WordEmbeddings, counting

from a2m import A2MClient, AsyncA2MClient
from a2m.errors import QuotaExceeded
from a2m_langchain import A2MVectorStore
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.servers import Servers

PETS = [
    Document("my cat is a lovely pet", metadata={"kind": "pet", "legs": 4, "name": "tom"}),
    Document("my dog is a loyal pet animal", metadata={"kind": "pet", "legs": 4}),
    Document("tea is my favourite drink", metadata={"kind": "drink", "hot": True}),
    Document("coffee is a drink too", metadata={"kind": "drink", "hot": True}),
    Document("paris is a city", metadata={"kind": "place", "nested": {"country": "fr"}}),
]


def _pair(client: A2MClient) -> tuple[A2MVectorStore, InMemoryVectorStore]:
    embeddings = WordEmbeddings()
    ours = A2MVectorStore(embeddings, client)
    theirs = InMemoryVectorStore(embeddings)
    ids = [f"doc-{n}" for n in range(len(PETS))]
    assert ours.add_documents(PETS, ids=ids) == theirs.add_documents(PETS, ids=ids) == ids
    return ours, theirs


def _texts(documents: list[Document]) -> list[str]:
    return [d.page_content for d in documents]


def test_side_by_side_with_in_memory_vector_store(
    client: A2MClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, theirs = _pair(client)
    # queries whose two nearest are unambiguous: ties may come back in either order
    for query in ("a pet animal", "hot drink", "tea drink city"):
        assert ours.similarity_search(query, k=2) == theirs.similarity_search(query, k=2)
    for ids in (["doc-3", "missing", "doc-0"], ["doc-1", "doc-1", "missing", "doc-1"]):
        assert ours.get_by_ids(ids) == theirs.get_by_ids(ids)
    with counting(monkeypatch, client) as sent:  # asking for nothing sends nothing
        for store in (ours, theirs):
            assert store.similarity_search_with_score("a pet", k=0) == []
            assert store.max_marginal_relevance_search("a pet", k=0) == []
            assert store.max_marginal_relevance_search("a pet", k=2, fetch_k=0) == []
    assert sent["recall"] == 0
    mmr = {"k": 2, "fetch_k": 5, "lambda_mult": 0.1}
    assert _texts(ours.max_marginal_relevance_search("cat pet drink", **mmr)) == _texts(
        theirs.max_marginal_relevance_search("cat pet drink", **mmr)
    )


def test_filters_on_document_metadata(client: A2MClient) -> None:
    ours, theirs = _pair(client)
    assert _texts(ours.similarity_search("pet", k=5, filter={"kind": "drink"})) == [
        "tea is my favourite drink",
        "coffee is a drink too",
    ]
    assert _texts(ours.similarity_search("pet", k=5, filter={"name": {"$exists": True}})) == [
        "my cat is a lovely pet"
    ]
    assert _texts(
        ours.similarity_search("city", k=5, filter={"nested.country": {"$in": ["fr", "de"]}})
    ) == ["paris is a city"]
    # every document ties on "x": compare what passes, not its order
    either = {"$or": [{"legs": {"$gte": 4}}, {"hot": True}]}

    def passes(document: Document) -> bool:
        return document.metadata.get("legs", 0) >= 4 or bool(document.metadata.get("hot"))

    assert sorted(_texts(ours.similarity_search("x", k=5, filter=either))) == sorted(
        _texts(theirs.similarity_search("x", k=5, filter=passes))
    )
    # a callable, as InMemoryVectorStore takes it
    assert ours.similarity_search("pet", k=5, filter=lambda d: d.metadata["kind"] == "place") == [
        Document("paris is a city", id="doc-4", metadata=PETS[4].metadata)
    ]
    with pytest.raises(ValueError, match="unknown filter operator"):
        ours.similarity_search("pet", filter={"kind": {"$regex": "p.*"}})


def test_a_filter_means_the_same_in_the_server_and_here(client: A2MClient) -> None:
    """A boolean equals only a boolean and never orders, whether the server runs the
    filter or the store does (a part the server cannot run moves it all here)."""
    store = A2MVectorStore(WordEmbeddings(), client, namespace="app/flags")
    flags = {"yes": True, "one": 1, "no": False, "zero": 0}
    store.add_texts(list(flags), [{"flag": v} for v in flags.values()], ids=list(flags))
    local = {"other": {"$ne": "x"}}  # $ne: not pushed, so the whole filter runs here
    for part, expected in [
        ({"flag": 1}, {"one"}),
        ({"flag": True}, {"yes"}),
        ({"flag": {"$in": [0]}}, {"zero"}),
        ({"flag": {"$lte": 0}}, {"zero"}),
        ({"flag": {"$gte": 1}}, {"one"}),
    ]:
        for where in (part, {**part, **local}):
            found = {d.id for d in store.similarity_search("x", k=10, filter=where)}
            assert found == expected, where


def test_ids_no_key_can_be_name_no_document(client: A2MClient) -> None:
    """``get_by_ids`` and ``delete`` pass over an id no A2M key can be; ``add_texts``
    refuses it, nothing written."""
    from a2m import InvalidParams

    store = A2MVectorStore(WordEmbeddings(), client, namespace="app/ids")
    store.add_texts(["kept"], ids=["good"])
    odd = ["..", "a/", "/a", "a//b", "line\nbreak", "x" * 600]
    assert [d.id for d in store.get_by_ids(["good", *odd])] == ["good"]
    assert store.delete(odd) is True
    assert [d.id for d in store.get_by_ids(["good"])] == ["good"]
    for id in odd:
        with pytest.raises(InvalidParams):
            store.add_texts(["refused"], ids=[id])
    assert [d.id for d in store.similarity_search("refused kept", k=10)] == ["good"]


def test_scores_and_relevance(client: A2MClient) -> None:
    ours, _ = _pair(client)
    hits = ours.similarity_search_with_score("lovely cat pet", k=3)
    assert hits[0][0].page_content == "my cat is a lovely pet"
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    # the server's own scores, in [0, 1]: LangChain takes them as relevance as they are
    ((top, relevance),) = ours.similarity_search_with_relevance_scores("lovely cat pet", k=1)
    assert top == hits[0][0]
    assert 0.0 <= relevance <= 1.0


def test_adds_are_batched_one_remember_per_call_limit(
    servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = servers.server(ServerConfig(limits=LimitsConfig(max_records_per_call=4)))
    with A2MClient.in_process(server) as client:
        store = A2MVectorStore(WordEmbeddings(), client)
        store.add_texts(["warm up"])
        with counting(monkeypatch, client) as calls:
            ids = store.add_texts([f"text {n}" for n in range(10)])
            # 4 + 4 + 2 records; one timeline checking the keys, one reading them back
            assert dict(calls) == {"remember": 3, "timeline": 2}
            calls.clear()
            assert len(store.get_by_ids(ids)) == 10
            assert dict(calls) == {"timeline": 1}
            calls.clear()
            store.delete(ids)
            assert dict(calls) == {"timeline": 1, "forget": 1}
        assert store.get_by_ids(ids) == []


def test_a_thousand_ids_at_once(client: A2MClient) -> None:
    store = A2MVectorStore(WordEmbeddings(), client)
    ids = store.add_texts([f"tea number {n}" for n in range(1000)])
    assert [d.id for d in store.get_by_ids(ids)] == ids
    store.delete(ids)
    assert store.get_by_ids(ids) == []


def test_a_bad_batch_writes_nothing(client: A2MClient) -> None:
    store = A2MVectorStore(WordEmbeddings(), client)
    with pytest.raises(ValueError, match="metadatas"):
        store.add_texts(["a", "b"], metadatas=[{}])
    with pytest.raises(ValueError, match="ids"):
        store.add_texts(["a", "b"], ids=["1", ""])
    with pytest.raises(QuotaExceeded):  # the server refuses the second: neither is written
        store.add_texts(["fine", "x" * 100_001])
    assert client.timeline().records == []


def test_deletes_are_scoped_to_the_namespace(client: A2MClient) -> None:
    embeddings = WordEmbeddings()
    mine = A2MVectorStore(embeddings, client, namespace="app/mine")
    theirs = A2MVectorStore(embeddings, client, namespace="app/theirs")
    mine.add_texts(["tea drink"], ids=["same"])
    theirs.add_texts(["coffee drink"], ids=["same"])
    client.remember({"content": "a raw note about tea"})
    assert _texts(mine.get_by_ids(["same"])) == ["tea drink"]
    assert _texts(mine.similarity_search("drink", k=5)) == ["tea drink"]
    mine.delete(["same"])
    assert _texts(theirs.get_by_ids(["same"])) == ["coffee drink"]
    mine.add_texts(["cat", "dog"])
    mine.delete()
    assert mine.similarity_search("cat", k=5) == []
    assert _texts(theirs.similarity_search("drink", k=5)) == ["coffee drink"]
    assert len(client.timeline().records) == 2


def test_from_texts_and_provenance(client: A2MClient) -> None:
    store = A2MVectorStore.from_texts(
        ["tea is a drink"], WordEmbeddings(), [{"a": 1}], ids=["t"], client=client, agent="ada"
    )
    assert store.get_by_ids(["t"]) == [Document("tea is a drink", id="t", metadata={"a": 1})]
    (record,) = client.timeline().records
    assert record.key == "langchain/documents/t"
    assert record.tier == "semantic"
    assert record.metadata == {
        "namespace": "langchain/documents",
        "type": "semantic",
        "source_framework": "langchain",
        "source_agent": "ada",
        "document_metadata": {"a": 1},
    }


async def test_async_twins(aclient: AsyncA2MClient) -> None:
    store = await A2MVectorStore.afrom_texts(
        [d.page_content for d in PETS],
        WordEmbeddings(),
        [d.metadata for d in PETS],
        ids=[f"doc-{n}" for n in range(len(PETS))],
        client=aclient,
    )
    assert _texts(await store.asimilarity_search("pet", k=2, filter={"legs": 4})) == [
        "my cat is a lovely pet",
        "my dog is a loyal pet animal",
    ]
    hits = await store.asimilarity_search_with_score("city", k=1)
    assert hits[0][0].id == "doc-4"
    mmr = await store.amax_marginal_relevance_search("pet drink", k=2, fetch_k=5)
    assert len(mmr) == 2
    assert _texts(await store.aget_by_ids(["doc-2"])) == ["tea is my favourite drink"]
    await store.aadd_documents([Document("new tea", id="doc-2", metadata={})])
    assert await store.aget_by_ids(["doc-2"]) == [Document("new tea", id="doc-2", metadata={})]
    await store.adelete(["doc-2"])
    assert await store.aget_by_ids(["doc-2"]) == []
    await store.adelete()
    assert await store.asimilarity_search("pet", k=5) == []


@pytest.mark.parametrize("lambda_mult", [0.0, 0.3, 0.5, 1.0])
def test_mmr_picks_what_langchains_own_mmr_picks(lambda_mult: float) -> None:
    import numpy as np
    from langchain_core.vectorstores.utils import maximal_marginal_relevance as theirs

    from a2m_langchain._documents import maximal_marginal_relevance as ours

    rng = np.random.default_rng(7)
    for _ in range(20):
        vectors = rng.normal(size=(30, 8)).tolist()
        query = rng.normal(size=8).tolist()
        expected = theirs(np.array(query), vectors, lambda_mult=lambda_mult, k=6)
        assert ours(query, vectors, 6, lambda_mult) == expected
    assert ours([1.0, 0.0], [], 3, 0.5) == []


@pytest.mark.parametrize("operators", [True, False])
def test_a_filter_runs_in_the_server_where_it_declares_the_operators(
    servers: Servers, monkeypatch: pytest.MonkeyPatch, operators: bool
) -> None:
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=3), where_operators=operators)
    with A2MClient.in_process(servers.server(config)) as client:
        store = A2MVectorStore(WordEmbeddings(), client)
        texts = [f"cat pet number {n}" for n in range(9)] + ["paris is a city"]
        metadatas = [{"n": n, "kind": "pet"} for n in range(9)] + [{"n": 9, "kind": "place"}]
        store.add_texts(texts, metadatas)
        asked: list[dict[str, object]] = []
        recall = client.recall

        def spy(*args: object, **kwargs: object) -> object:
            asked.append(kwargs)
            return recall(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(client, "recall", spy)
        # the one place, far from the query: only a filter run by the server reaches it
        found = store.similarity_search("cat pet", k=2, filter={"kind": "place"})
        assert _texts(found) == (["paris is a city"] if operators else [])
        assert asked[-1]["limit"] == (2 if operators else 3)
        ranged = store.similarity_search("cat pet", k=5, filter={"n": {"$gte": 7, "$lt": 9}})
        got = sorted(d.metadata["n"] for d in ranged)
        # the nine pets tie on the query: without operators, whichever three came nearest
        assert got == [7, 8] if operators else set(got) <= {7, 8}
        # what only this side can judge stays here, on the nearest candidates
        store.similarity_search("cat pet", k=2, filter=lambda d: d.metadata["n"] > 0)
        store.similarity_search("cat pet", k=2, filter={"$or": [{"n": 1}, {"n": 2}]})
        assert [call["limit"] for call in asked[-2:]] == [3, 3]

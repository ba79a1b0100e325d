"""One semantic space for every framework (issue 31): with the server embedding (the
offline ``wordllama`` model) and no embedder configured on any side, what the raw
client, LangGraph's store and AutoGen's memory write, each of the others finds by
meaning, with a question that shares no word with it; the same questions find nothing on
a server that does not embed. A user embedder of another width is refused with the model
the store speaks named."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from a2m import A2MClient, RecordInput
from a2m_server import A2MServer, ServerConfig
from a2m_testing.servers import serve_http

MODEL = "wordllama/l2_supercat-256"
DISTRACTORS = [
    "The office printer on floor three is jammed again",
    "Lena prefers green tea over coffee in the morning",
    "Deploys are frozen during the holiday week",
    "The new laptop shipment arrives on Monday",
    "The flight to Lisbon departs at seven tomorrow",
]
# writer -> (what it writes, the reader, the question the reader asks)
FACTS = {
    "raw client": (
        "The quarterly budget review moved to Thursday afternoon",
        "LangGraph",
        "when is the finance meeting",
    ),
    "LangGraph": ("Maya adopted a small grey kitten last weekend", "AutoGen", "a pet cat"),
    "AutoGen": (
        "Our database backups run every night at two",
        "raw client",
        "how often are snapshots of our data saved",
    ),
}


class Side:
    """The three participants on one server, none with an embedder of its own."""

    def __init__(self, url: str) -> None:
        from a2m_autogen import A2MMemory
        from a2m_langchain.langgraph import A2MStore

        self.client = A2MClient(url)
        self.store = A2MStore(self.client)
        self.loop = asyncio.new_event_loop()
        self.memory = A2MMemory(url=url, namespace="interop/autogen", k=3)

    def write(self, writer: str, text: str) -> None:
        if writer == "raw client":
            # Keyed under a path, as LangGraph's store addresses its items.
            self.client.remember(RecordInput(content=text, key="interop/raw/budget"))
        elif writer == "LangGraph":
            self.store.put(("interop", "langgraph"), "pet", {"text": text})
        else:
            from autogen_core.memory import MemoryContent, MemoryMimeType

            content = MemoryContent(content=text, mime_type=MemoryMimeType.TEXT)
            self.loop.run_until_complete(self.memory.add(content))

    def read(self, reader: str, question: str) -> list[str]:
        """The best three texts ``reader`` finds for ``question``."""
        if reader == "raw client":
            return [r.content for r in self.client.recall(question, limit=3).records]
        if reader == "LangGraph":
            items = self.store.search((), query=question, limit=3)
            return [str(item.value.get("text", item.value.get("content", ""))) for item in items]
        found = self.loop.run_until_complete(self.memory.query(question))
        return [str(result.content) for result in found.results]

    def close(self) -> None:
        self.loop.run_until_complete(self.memory.close())
        self.loop.close()
        self.client.close()


@pytest.fixture(scope="module", params=["embedding", "plain"])
def side(request: pytest.FixtureRequest) -> Iterator[tuple[str, Side]]:
    config = ServerConfig(embedder="wordllama") if request.param == "embedding" else None
    with A2MServer(config) as server, serve_http(server) as url:
        made = Side(url)
        made.client.remember(
            [
                RecordInput(content=text, key=f"interop/raw/other-{i}")
                for i, text in enumerate(DISTRACTORS)
            ]
        )
        for writer, (text, _, _) in FACTS.items():
            made.write(writer, text)
        try:
            yield request.param, made
        finally:
            made.close()


@pytest.mark.parametrize("writer", list(FACTS))
def test_a_reader_finds_another_frameworks_record_by_meaning(
    side: tuple[str, Side], writer: str
) -> None:
    mode, participants = side
    text, reader, question = FACTS[writer]
    found = participants.read(reader, question)
    if mode == "embedding":
        assert found, f"{reader} found nothing for {question!r}"
        assert text in found[0]
    else:  # no word in common: lexical recall alone cannot find it
        assert not any(text in f for f in found)


def test_a_user_embedder_of_another_width_hears_the_stores_model() -> None:
    from a2m_langchain.langgraph import A2MStore

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 15 for _ in texts]

    with (
        A2MServer(ServerConfig(embedder="wordllama")) as server,
        serve_http(server) as url,
        A2MClient(url) as client,
    ):
        store = A2MStore(client, index={"dims": 16, "embed": embed})
        with pytest.raises(Exception, match=MODEL) as caught:
            store.put(("interop",), "k", {"text": "sixteen wide"})
        assert "256" in str(caught.value)


def test_agno_knowledge_with_no_embedder_finds_by_meaning(side: tuple[str, Side]) -> None:
    """Agno's vector database with no embedder sends the question as text: the server
    embeds it, and knowledge search reaches what LangGraph wrote by meaning."""
    from a2m_agno import A2MVectorDb

    mode, participants = side
    knowledge = A2MVectorDb(
        participants.client, namespace="interop/agno-knowledge", include_foreign=True
    )
    assert knowledge.embedder is None
    found = [document.content for document in knowledge.search("a pet cat", limit=3)]
    kitten = FACTS["LangGraph"][0]
    if mode == "embedding":
        assert found, "Agno knowledge found nothing by meaning"
        assert kitten in found[0]
    else:
        assert not any(kitten in text for text in found)

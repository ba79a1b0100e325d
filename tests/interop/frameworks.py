"""The interop matrix's framework participants: each drives a framework's own memory
interface — the object an application hands the framework — through our adapter.

Telemetry is off and CrewAI's HOME is a temporary folder before any framework is
imported (``conftest.py``). Interfaces that embed text get :class:`WordEmbeddings`, which
gives a fact's text the fact's own vector, so a vector written through one interface is
the vector every other participant compares."""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from participants import Fact, Participant, Seen, embed

from a2m import A2MClient

_WORD = re.compile(r"zq\w+?w\b")


def fact_vector(text: str) -> list[float]:
    """The vector of the fact word in ``text`` (the word alone, for a query)."""
    found = _WORD.search(text)
    return embed(found.group(0) if found else text)


class WordEmbeddings(Embeddings):
    """LangChain embeddings giving a fact's text the fact's vector."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [fact_vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return fact_vector(text)


def _embed_all(texts: Sequence[str]) -> list[list[float]]:
    return [fact_vector(text) for text in texts]


class LangChainMemory(Participant):
    """langchain-classic's ``BaseMemory`` (``A2MMemory``): a fact is a conversation turn's
    input (``save_context``), found again among the relevant memories
    ``load_memory_variables`` returns (``relevant_key``, as documents)."""

    name = "LangChain memory"
    source_framework = "langchain"

    def __init__(self, url: str) -> None:
        from a2m_langchain import A2MMemory

        self.client = A2MClient(url)
        self.memory = A2MMemory(
            client=self.client,
            session_id="interop-memory",
            namespace="interop/lc-memory",
            return_messages=True,
            relevant_key="facts",
            relevant_k=5,
            return_docs=True,
        )

    def write(self, fact: Fact) -> None:
        self.memory.save_context({"input": fact.text}, {"output": "Noted."})

    def read(self, fact: Fact) -> Seen | None:
        loaded = self.memory.load_memory_variables({"input": fact.word})
        for doc in loaded["facts"]:
            if fact.word in doc.page_content:
                return Seen(doc.page_content, doc.metadata.get("source_framework"))
        # The relevant memories leave out this session's turns: they are its history.
        for message in loaded["history"]:
            if fact.word in message.text:
                return Seen(message.text, self.source_framework)
        return None

    def close(self) -> None:
        self.client.close()


class LangChainChatHistory(Participant):
    """``BaseChatMessageHistory`` (``A2MChatMessageHistory``): a fact is a user message;
    reading is the session's ``messages``."""

    name = "LangChain chat history"
    source_framework = "langchain"

    def __init__(self, url: str) -> None:
        from a2m_langchain import A2MChatMessageHistory

        self.client = A2MClient(url)
        self.history = A2MChatMessageHistory(
            "interop-chat", self.client, namespace="interop/lc-chat"
        )

    def write(self, fact: Fact) -> None:
        self.history.add_user_message(fact.text)

    def read(self, fact: Fact) -> Seen | None:
        for message in self.history.messages:
            if fact.word in message.text:
                # A session's messages are this history's own: LangChain's.
                return Seen(message.text, self.source_framework)
        return None

    def close(self) -> None:
        self.client.close()


class LangChainVectorStore(Participant):
    """``VectorStore`` (``A2MVectorStore.add_texts``, embedding the fact) to write and
    ``BaseRetriever`` (``A2MRetriever``, lexical over the whole store) to read."""

    name = "LangChain vector store"
    source_framework = "langchain"
    carries_embeddings = True

    def __init__(self, url: str) -> None:
        from a2m_langchain import A2MRetriever, A2MVectorStore

        self.client = A2MClient(url)
        self.store = A2MVectorStore(WordEmbeddings(), self.client, namespace="interop/lc-docs")
        self.retriever = A2MRetriever(client=self.client, k=5)

    def write(self, fact: Fact) -> None:
        self.store.add_texts([fact.text], ids=[fact.word])

    def read(self, fact: Fact) -> Seen | None:
        for doc in self.retriever.invoke(fact.word):
            if fact.word in doc.page_content:
                key = doc.metadata.get("key")
                record = self.client.fetch(key, embeddings=True).record if key else None
                vector = record.embedding if record else None
                return Seen(doc.page_content, doc.metadata.get("source_framework"), vector)
        return None

    def close(self) -> None:
        self.client.close()


class LangGraphStore(Participant):
    """LangGraph's ``BaseStore`` (``A2MStore`` with an index): a fact is an item, found
    again with ``search((), query=…)`` across every namespace."""

    name = "LangGraph store"
    source_framework = "langgraph"
    carries_embeddings = True

    def __init__(self, url: str) -> None:
        from a2m_langchain.langgraph import A2MStore

        self.client = A2MClient(url)
        self.store = A2MStore(self.client, index={"dims": 16, "embed": _embed_all})
        # Searching by vector finds only records that carry one; without an index the
        # store searches by the query's words, which every record has.
        self.words = A2MStore(self.client)

    def write(self, fact: Fact) -> None:
        self.store.put(("interop", "langgraph"), fact.word, {"text": fact.text})

    def read(self, fact: Fact) -> Seen | None:
        for item in self.words.search((), query=fact.word, limit=10):
            value: dict[str, Any] = item.value
            text = str(value.get("text", value.get("content", "")))
            if fact.word in text:
                # An Item has no provenance of its own: the record it is says who wrote it.
                key = "/".join([*item.namespace, item.key])
                record = self.client.fetch(key, embeddings=True).record
                if record is None:
                    return Seen(text, None)
                meta = record.metadata or {}
                return Seen(text, meta.get("source_framework"), record.embedding)
        return None

    def close(self) -> None:
        self.client.close()


class CrewAIStorage(Participant):
    """CrewAI's ``StorageBackend`` (``A2MStorage.save``, the fact's vector included),
    read through CrewAI's ``Memory.recall`` on ``a2m_memory``, which carries the query's
    words to the storage beside its vector."""

    name = "CrewAI"
    source_framework = "crewai"
    carries_embeddings = True

    def __init__(self, url: str) -> None:
        from a2m_crewai import A2MStorage, a2m_memory

        self.client = A2MClient(url)
        self.storage = A2MStorage(self.client, agent="interop")
        # A shallow recall asks no model: the llm is never called.
        self.memory = a2m_memory(self.storage, llm="unused", embedder=_embed_all)

    def write(self, fact: Fact) -> None:
        from crewai.memory.types import MemoryRecord

        record = MemoryRecord(content=fact.text, scope="/interop", embedding=fact.embedding)
        self.storage.save([record])

    def read(self, fact: Fact) -> Seen | None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            matches = self.memory.recall(fact.word, limit=5, depth="shallow")
        for match in matches:
            if fact.word in match.record.content:
                meta = match.record.metadata or {}
                provenance = meta.get("source_framework", self.source_framework)
                return Seen(match.record.content, provenance, match.record.embedding)
        return None

    def close(self) -> None:
        self.memory.close()
        self.client.close()


class AutoGenMemory(Participant):
    """AutoGen's ``Memory`` (``A2MMemory.add`` / ``query``), on a loop of its own (the
    memory is async; the matrix drives participants from plain functions). AutoGen's
    memory carries no vectors."""

    name = "AutoGen"
    source_framework = "autogen"

    def __init__(self, url: str) -> None:
        from a2m_autogen import A2MMemory

        self.loop = asyncio.new_event_loop()
        self.memory = A2MMemory(url=url, namespace="interop/autogen", k=5)

    def write(self, fact: Fact) -> None:
        from autogen_core.memory import MemoryContent, MemoryMimeType

        content = MemoryContent(content=fact.text, mime_type=MemoryMimeType.TEXT)
        self.loop.run_until_complete(self.memory.add(content))

    def read(self, fact: Fact) -> Seen | None:
        from a2m_autogen import PROVENANCE_KEY

        found = self.loop.run_until_complete(self.memory.query(fact.word))
        for result in found.results:
            content = result.content
            text = content if isinstance(content, str) else str(content)
            if fact.word in text:
                provenance = (result.metadata or {}).get(PROVENANCE_KEY, {})
                return Seen(text, provenance.get("source_framework"))
        return None

    def close(self) -> None:
        self.loop.run_until_complete(self.memory.close())
        self.loop.close()


class AgnoMemory(Participant):
    """Agno's database interface (``A2MDb``): a fact is a user memory, found again with
    ``get_user_memories(search_content=…)``, which reaches other frameworks' records."""

    name = "Agno"
    source_framework = "agno"

    def __init__(self, url: str) -> None:
        from a2m_agno import A2MDb

        self.client = A2MClient(url)
        self.db = A2MDb(self.client, namespace="interop/agno")

    def write(self, fact: Fact) -> None:
        from agno.db.schemas.memory import UserMemory

        self.db.upsert_user_memory(UserMemory(memory=fact.text, user_id="interop"))

    def read(self, fact: Fact) -> Seen | None:
        rows, _ = self.db.get_user_memories(search_content=fact.word, deserialize=False)
        for row in rows:
            # A row of this database's own memories is Agno's; others say who wrote them.
            return Seen(row["memory"], row.get("source_framework", self.source_framework))
        return None

    def close(self) -> None:
        self.client.close()


class AgnoKnowledge(Participant):
    """Agno's vector database interface (``A2MVectorDb``): a fact is a knowledge chunk
    with its vector, found again with ``search``, which reaches other frameworks'
    entries when ``include_foreign`` is on."""

    name = "Agno knowledge"
    source_framework = "agno"
    carries_embeddings = True

    def __init__(self, url: str) -> None:
        from a2m_agno import A2MVectorDb

        self.client = A2MClient(url)
        self.vectors = A2MVectorDb(
            self.client, namespace="interop/agno-knowledge", include_foreign=True
        )

    def write(self, fact: Fact) -> None:
        from agno.knowledge.document import Document

        chunk = Document(content=fact.text, name=fact.word, embedding=fact.embedding)
        self.vectors.insert(f"interop-{fact.word}", [chunk])

    def read(self, fact: Fact) -> Seen | None:
        for document in self.vectors.search(fact.word, limit=5):
            if fact.word in document.content:
                # A chunk of this knowledge base is Agno's; others say who wrote them.
                provenance = document.meta_data.get("source_framework", self.source_framework)
                return Seen(document.content, provenance, document.embedding)
        return None

    def close(self) -> None:
        self.client.close()


class A2EHost(Participant):
    """Seed 000's A2E memory capability (``A2EMemoryPlugin``): a fact is a ``semantic``
    entry (the tier every agent shares) stored by ``memory/store``, found again with
    ``memory/retrieve`` by query, whose ``source`` names who wrote a foreign record."""

    name = "A2E"
    source_framework = "a2e"

    def __init__(self, url: str) -> None:
        from a2m_a2e import A2EMemoryPlugin, new_message

        self.client = A2MClient(url)
        self.host = A2EMemoryPlugin(self.client, semantic_writers=("interop",))
        self.new_message = new_message
        opened = self.host.handle(
            new_message("memory/init/req", namespace="interop/a2e", scope={"agent": "interop"})
        )
        self.memory_id = opened["memory_id"]

    def write(self, fact: Fact) -> None:
        entry = {"key": {"fact": fact.word}, "content": fact.text, "tier": "semantic"}
        stored = self.host.handle(
            self.new_message("memory/store/req", memory_id=self.memory_id, entries=[entry])
        )
        assert not stored["errors"], stored["errors"]

    def read(self, fact: Fact) -> Seen | None:
        found = self.host.handle(
            self.new_message(
                "memory/retrieve/req", memory_id=self.memory_id, query=fact.word, limit=5
            )
        )
        for entry in found.get("entries", []):
            # content is the entry's JSON: a structured value (a LangGraph item) as it is
            content = entry["content"]
            text = content if isinstance(content, str) else json.dumps(content)
            if fact.word in text:
                writer = entry["source"].split("/")[0] or self.source_framework
                return Seen(text, writer)
        return None

    def close(self) -> None:
        self.host.close()
        self.client.close()

"""The interop matrix's participants: one per way into the store (a framework interface
through its adapter, the raw client, REST), each able to write a fact and to find a fact
that any other participant wrote.

A fact carries a word no other fact has, so a reader that finds it found exactly that
fact; readers that search by vector use the fact's embedding, which is a pure function of
that word."""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import httpx

from a2m import A2MClient, RecordInput

DIMS = 16


def embed(text: str) -> list[float]:
    """A deterministic unit vector for ``text``: the same text, the same vector."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [(byte - 127.5) / 127.5 for byte in digest[:DIMS]]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


@dataclass(frozen=True)
class Fact:
    """What one participant writes: readable text around a word only it uses."""

    writer: str
    word: str

    @property
    def text(self) -> str:
        return f"The {self.word} project review is scheduled for Thursday morning."

    @property
    def embedding(self) -> list[float]:
        return embed(self.word)


@dataclass(frozen=True)
class Seen:
    """What a reader got back for a fact: its text, who wrote it, and its vector if the
    reader's interface carries one."""

    content: str
    source_framework: str | None
    embedding: list[float] | None = None


class Participant(ABC):
    """One way into the store, as the matrix drives it."""

    name: str
    """The row and column label."""
    source_framework: str
    """What records it writes say in ``metadata.source_framework``."""
    carries_embeddings: bool = False
    """Whether what it writes includes the fact's vector, and what it reads returns one."""

    @abstractmethod
    def write(self, fact: Fact) -> None:
        """Store ``fact`` through this participant's interface."""

    @abstractmethod
    def read(self, fact: Fact) -> Seen | None:
        """Find ``fact`` through this participant's interface, whoever wrote it."""

    @abstractmethod
    def close(self) -> None:
        """Release what the participant opened."""


class RawClient(Participant):
    """The typed client, JSON-RPC over HTTP."""

    name = "raw client"
    source_framework = "a2m"
    carries_embeddings = True

    def __init__(self, url: str) -> None:
        self.client = A2MClient(url)

    def write(self, fact: Fact) -> None:
        self.client.remember(
            RecordInput(
                content=fact.text,
                key=f"interop/raw/{fact.word}",
                embedding=fact.embedding,
                metadata={"source_framework": self.source_framework},
            )
        )

    def read(self, fact: Fact) -> Seen | None:
        for record in self.client.recall(fact.word, limit=5, embeddings=True).records:
            if fact.word in record.content:
                provenance = (record.metadata or {}).get("source_framework")
                return Seen(record.content, provenance, record.embedding)
        return None

    def close(self) -> None:
        self.client.close()


class Rest(Participant):
    """Plain HTTP against the REST binding, as curl would: no A2M client involved."""

    name = "REST"
    source_framework = "rest"
    carries_embeddings = True

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url.rstrip("/") + "/a2m/v1", timeout=30.0)

    def write(self, fact: Fact) -> None:
        entry = {
            "key": fact.word,
            "type": "semantic",
            "value": fact.text,
            "embedding": fact.embedding,
            "meta": {"source_framework": self.source_framework},
        }
        self.http.post("/interop/rest/entries", json=entry).raise_for_status()

    def read(self, fact: Fact) -> Seen | None:
        answer = self.http.post("/interop/query", json={"query": fact.word, "recursive": True})
        answer.raise_for_status()
        for hit in answer.json():
            entry = hit["entry"]
            value = entry["value"]
            content = value if isinstance(value, str) else str(value)
            if fact.word in content:
                return Seen(content, entry["meta"].get("source_framework"), entry["embedding"])
        return None

    def close(self) -> None:
        self.http.close()

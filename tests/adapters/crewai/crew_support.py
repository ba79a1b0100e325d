"""What the CrewAI tests drive the real framework with: a scripted ``BaseLLM`` that writes
down every prompt it receives, and a deterministic bag-of-words embedder. Importable from
a subprocess too (it adds nothing to the environment)."""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Sequence
from typing import Any

from chromadb.api.types import EmbeddingFunction
from crewai import BaseLLM
from crewai.rag.embeddings.providers.custom.embedding_callable import CustomEmbeddingFunction
from pydantic import Field, model_validator

DIMENSIONS = 64
FINAL = "Thought: I now know the final answer\nFinal Answer: "


def embed_one(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """A unit vector of the text's words, hashed into ``dimensions`` buckets: texts that
    share words are close, unrelated ones nearly orthogonal."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def embed(texts: Sequence[str]) -> list[list[float]]:
    """The embedder a ``Memory`` is given: texts in, one vector each out."""
    return [embed_one(text) for text in texts]


class HashEmbedding(CustomEmbeddingFunction, EmbeddingFunction):  # type: ignore[type-arg]
    """:func:`embed` as the embedding class a crew's ``embedder`` spec names (CrewAI's
    validator wants chromadb's protocol among its bases)."""

    def __init__(self, **_config: Any) -> None:
        pass

    def __call__(self, input: Sequence[str]) -> Any:
        return embed(input)


class ScriptedLLM(BaseLLM):
    """Answers CrewAI's memory prompts with fixed JSON and every agent turn with
    ``answer``; ``prompts`` holds the text of every call, in order."""

    model: str = "scripted"
    answer: str = "done"
    facts: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=lambda: ["ops"])
    scope: str = "/"
    prompts: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        # BaseLLM insists on a model name in the input itself.
        if isinstance(data, dict):
            data.setdefault("model", "scripted")
        return data

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        if isinstance(messages, str):
            text = messages
        else:
            text = "\n".join(str(message.get("content", "")) for message in messages)
        self.prompts.append(text)
        if text.startswith("You extract discrete"):
            return json.dumps({"memories": self.facts})
        if text.startswith("You analyze content to be stored"):
            return json.dumps(
                {"suggested_scope": self.scope, "categories": self.categories, "importance": 0.8}
            )
        if text.startswith("You analyze a query"):
            query = text.split("Query:", 1)[-1].split("Available scopes:", 1)[0].strip()
            return json.dumps({"recall_queries": [query], "complexity": "simple"})
        if text.startswith("You are comparing new content"):
            return json.dumps({"actions": [], "insert_new": True})
        return FINAL + self.answer

    def supports_function_calling(self) -> bool:
        return False

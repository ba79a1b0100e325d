"""A deterministic offline Agno embedder: a bag of hashed words, normalised, so texts
sharing words are near each other and nothing leaves the process."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from hashlib import blake2b
from typing import Any

from agno.knowledge.embedder.base import Embedder

_WORD = re.compile(r"[a-z0-9]+")


def embed(text: str, dimensions: int = 16) -> list[float]:
    """The vector of ``text``: word counts hashed into ``dimensions`` buckets, unit length."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        vector[blake2b(word.encode(), digest_size=2).digest()[0] % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


@dataclass
class FakeEmbedder(Embedder):
    """Embeds with :func:`embed`; records nothing, calls nothing."""

    id: str = "fake-embedder"
    dimensions: int = 16

    def get_embedding(self, text: str) -> list[float]:
        return embed(text, self.dimensions)

    def get_embedding_and_usage(self, text: str) -> tuple[list[float], dict[str, Any] | None]:
        return embed(text, self.dimensions), None

    async def async_get_embedding(self, text: str) -> list[float]:
        return embed(text, self.dimensions)

    async def async_get_embedding_and_usage(
        self, text: str
    ) -> tuple[list[float], dict[str, Any] | None]:
        return embed(text, self.dimensions), None

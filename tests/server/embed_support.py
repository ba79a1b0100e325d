"""Embedders the embedder tests configure by name (``embed_support:topics``, or through an
entry point): deterministic vectors whose neighbours are known (one axis per topic, the
topic's words on it), every call recorded, failures switched on at will."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence

from a2m_server.embedders import EmbedderError

TOPICS = {
    "weather": ("weather", "rain", "storm", "forecast", "sunny", "umbrella"),
    "cooking": ("cooking", "pasta", "garlic", "recipe", "oven", "dinner"),
    "finance": ("finance", "budget", "invoice", "salary", "tax", "bank"),
    "travel": ("travel", "flight", "hotel", "airport", "train", "luggage"),
}
INSTANCES: list[TopicEmbedder] = []


class TopicEmbedder:
    """``dims``-wide vectors: the first four axes count each topic's words, the rest a
    small hash of the text, so no two texts are equal."""

    name = "topics"

    def __init__(self, model: str = "topics-8", dims: int = 8) -> None:
        self.model = model
        self._dims = dims
        self.calls: list[list[str]] = []
        self.fail: str | None = None
        """While set, every call raises an EmbedderError with this reason."""
        self.fail_after: int | None = None
        """Calls that succeed before every later one fails."""
        self.gate: threading.Event | None = None
        """While set and clear, calls wait on it (a slow embedder)."""
        self._lock = threading.Lock()
        INSTANCES.append(self)

    @property
    def dimensions(self) -> int:
        return self._dims

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.calls.append(list(texts))
            succeeded = len(self.calls) - 1
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail is not None:
            raise EmbedderError(self.name, self.fail)
        if self.fail_after is not None and succeeded >= self.fail_after:
            raise EmbedderError(self.name, "gave up")
        return [vector(text, self._dims) for text in texts]


def vector(text: str, dims: int = 8) -> list[float]:
    words = text.lower().split()
    out = [0.0] * dims
    for axis, vocabulary in enumerate(TOPICS.values()):
        out[axis] = float(sum(word.strip(".,?!") in vocabulary for word in words))
    digest = hashlib.sha256(text.encode()).digest()
    for i in range(4, dims):
        out[i] = digest[i] / 2550.0
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    return [x / norm for x in out]


def topics() -> TopicEmbedder:
    """The factory ``embedder = "embed_support:topics"`` names."""
    return TopicEmbedder()


def wide_topics() -> TopicEmbedder:
    """Another model, of another width."""
    return TopicEmbedder("topics-12", 12)


def latest() -> TopicEmbedder:
    """The embedder the last server made."""
    return INSTANCES[-1]

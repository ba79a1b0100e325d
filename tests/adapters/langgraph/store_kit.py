"""Helpers for the store tests: a deterministic embedder, a server that counts the calls
it is sent, and a view of items that two stores can be compared by."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import Item

from a2m_server.server import A2MServer

DIMS = 64


class WordHashEmbeddings(Embeddings):
    """Bag-of-words vectors: texts sharing words point the same way. Deterministic and
    offline, so two stores embedding the same texts get the same vectors."""

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        return vector if any(vector) else [1.0] + [0.0] * (DIMS - 1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


class CountingServer:
    """An :class:`A2MServer` wrapper for ``A2MClient.in_process`` that counts the methods
    each connection is sent."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server
        self.calls: Counter[str] = Counter()

    def connect(self, **options: Any) -> Any:
        connection = self.server.connect(**options)
        calls = self.calls

        class Counted:
            def handle(self, message: str) -> str | None:
                calls[json.loads(message).get("method", "?")] += 1
                return connection.handle(message)

            def close(self) -> None:
                connection.close()

        return Counted()

    def reset(self) -> None:
        self.calls.clear()


def view(items: Iterable[Item | None]) -> list[Any]:
    """What two stores must agree on: address and value, not their clocks."""
    return [None if i is None else (i.namespace, i.key, i.value) for i in items]


def scored(items: Iterable[Any]) -> list[tuple[Any, ...]]:
    """A semantic search's answer: each hit's address and value with its score rounded."""
    return [
        (i.namespace, i.key, json.dumps(i.value, sort_keys=True), round(i.score, 6)) for i in items
    ]


def same_ranking(left: list[Any], right: list[Any]) -> bool:
    """The same scores in the same order, and the same hits for each score; equal scores
    may come in either order, and where the page ends inside a tie either may be cut."""

    def groups(hits: list[Any]) -> list[tuple[float, frozenset[Any]]]:
        out: dict[float, set[Any]] = {}
        for hit in scored(hits):
            out.setdefault(hit[3], set()).add(hit[:3])
        return sorted(((s, frozenset(k)) for s, k in out.items()), key=lambda p: -p[0])

    if [round(i.score, 6) for i in left] != [round(i.score, 6) for i in right]:
        return False
    return groups(left)[:-1] == groups(right)[:-1]


def drop_empty_namespaces(store: Any) -> None:
    """InMemoryStore keeps a namespace once all its items are deleted (and makes one on a
    get); stores on a database list only namespaces holding items. Align the oracle."""
    for namespace in [ns for ns, items in store._data.items() if not items]:
        del store._data[namespace]


def is_close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


Check = Callable[[], None]


class BlendOnlyServer:
    """An :class:`A2MServer` wrapper for ``A2MClient.in_process`` whose describe offers no
    ``recall.rank``: a server that ranks by the blend alone, as one without the extension
    does, so the store re-scores candidates from their vectors."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server

    def connect(self, **options: Any) -> Any:
        connection = self.server.connect(**options)

        class Stripped:
            def handle(self, message: str) -> str | None:
                answer = connection.handle(message)
                if answer is None or json.loads(message).get("method") != "memory/describe":
                    return answer
                parsed = json.loads(answer)
                parsed.get("result", {}).pop("recall", None)
                return json.dumps(parsed)

            def close(self) -> None:
                connection.close()

        return Stripped()

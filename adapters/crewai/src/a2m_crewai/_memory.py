"""Wiring CrewAI's unified memory to A2M: a ``Memory`` that carries the query text down to
the storage, and the process-wide registration behind ``Crew(memory=True)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from crewai.memory.storage.factory import set_memory_storage_factory
from crewai.memory.types import MemoryMatch
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from a2m import A2MClient, AsyncA2MClient

from ._plan import QueryTexts, RecallContext, current_recall
from ._storage import A2MStorage

__all__ = ["A2MMemory", "a2m_memory", "use_a2m_storage"]

_DEFAULT_SPECS = frozenset({"lancedb", "a2m"})


class _TextCarryingEmbedder:
    """The user's embedder, noting which text each vector it returns came from."""

    def __init__(self, inner: Any, texts: QueryTexts) -> None:
        self._inner = inner
        self._texts = texts

    def __call__(self, input: Sequence[str]) -> Any:
        result = self._inner(input)
        for text, vector in zip(input, result, strict=False):
            values = vector.tolist() if hasattr(vector, "tolist") else vector
            if values is not None and len(values):
                self._texts.note(values, text)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class A2MMemory(Memory):
    """CrewAI's ``Memory`` on an :class:`A2MStorage` that also hands the storage the words
    of every recall: ``StorageBackend.search`` receives only a vector, and with the text
    beside it the server ranks lexically and by vector together, so a crew also finds
    what other frameworks wrote without a vector. The recalling ``source`` travels too,
    so private records of other sources take no place in a result."""

    _carrying: _TextCarryingEmbedder | None = PrivateAttr(default=None)

    @property
    def _embedder(self) -> Any:
        inner = super()._embedder
        storage = self._storage
        if not isinstance(storage, A2MStorage):
            return inner
        if self._carrying is None or self._carrying._inner is not inner:
            self._carrying = _TextCarryingEmbedder(inner, storage.query_texts)
        return self._carrying

    def _reachable(self) -> None:
        # CrewAI runs a save or recall through flows that catch a storage error, log it
        # with its traceback and go on (a search failure is "no similar record"); against
        # a server that is down that is pages of tracebacks before one error surfaces.
        # Asking the server first (its describe, one call, then cached) makes the
        # unreachable server one A2MConnectError, raised before CrewAI starts.
        storage = self._storage
        if isinstance(storage, A2MStorage):
            storage.check_reachable()

    def remember(self, content: str, *args: Any, **kwargs: Any) -> Any:
        """``Memory.remember``, after checking the server answers (raising its
        :class:`~a2m.A2MConnectError` at once, before CrewAI logs failures of its own)."""
        self._reachable()
        return super().remember(content, *args, **kwargs)

    def remember_many(self, contents: list[str], *args: Any, **kwargs: Any) -> Any:
        """``Memory.remember_many``, after checking the server answers."""
        self._reachable()
        return super().remember_many(contents, *args, **kwargs)

    def recall(
        self,
        query: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        limit: int = 10,
        depth: Literal["shallow", "deep"] = "deep",
        source: str | None = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """``Memory.recall``, with the query's words and the asking source carried down to
        every search it makes.

        A deep recall searches only the child scopes of its scope, so records that sit at
        the scope itself (a raw client's, with no key, sit at ``/``) would never be
        found; one shallow search over the whole scope joins it, and the best ``limit``
        of both are returned."""
        self._reachable()
        token = current_recall().set(RecallContext(query, source, include_private))
        try:
            options: dict[str, Any] = {
                "scope": scope,
                "categories": categories,
                "limit": limit,
                "source": source,
                "include_private": include_private,
            }
            found = super().recall(query, depth=depth, **options)
            if depth != "deep":
                return found
            whole = super().recall(query, depth="shallow", **options)
        finally:
            current_recall().reset(token)
        best: dict[str, MemoryMatch] = {match.record.id: match for match in whole}
        best.update((match.record.id, match) for match in found)
        return sorted(best.values(), key=lambda match: match.score, reverse=True)[:limit]


def _storage(
    client: A2MClient | A2MStorage | str | None,
    async_client: AsyncA2MClient | None,
    agent: str | None,
    session: str | None,
) -> A2MStorage:
    if isinstance(client, A2MStorage):
        return client
    return A2MStorage(client, async_client=async_client, agent=agent, session=session)


def a2m_memory(
    client: A2MClient | A2MStorage | str | None = None,
    *,
    llm: Any,
    embedder: Any,
    async_client: AsyncA2MClient | None = None,
    agent: str | None = None,
    session: str | None = None,
    **memory_options: Any,
) -> A2MMemory:
    """A CrewAI ``Memory`` whose storage is A2M: pass it as ``Crew(memory=...)`` or
    ``Agent(memory=...)``. ``client`` is an :class:`~a2m.A2MClient`, a URL, or an
    :class:`A2MStorage`; ``llm`` and ``embedder`` are CrewAI's (a ``BaseLLM`` or model
    name; a callable or provider spec); ``memory_options`` go to ``Memory`` as they are
    (``root_scope``, weights, ``read_only``...). Nothing is sent until the first use."""
    storage = _storage(client, async_client, agent, session)
    return A2MMemory(storage=storage, llm=llm, embedder=embedder, **memory_options)


def use_a2m_storage(
    client: A2MClient | A2MStorage | str | None = None,
    *,
    async_client: AsyncA2MClient | None = None,
    agent: str | None = None,
    session: str | None = None,
) -> Callable[[], None]:
    """Make A2M the storage of every ``Memory`` built from now on from the default spec
    (``"lancedb"``) or ``"a2m"``, as ``Crew(memory=True)`` builds one; other specs (a
    path, ``"qdrant-edge"``) keep CrewAI's choice. Returns a function that undoes it.

    Such a crew searches by vector only: CrewAI hands a backend no query text. For hybrid
    ranking, and to find records written without a vector, use :func:`a2m_memory`."""
    storage = _storage(client, async_client, agent, session)

    def factory(spec: str) -> A2MStorage | None:
        return storage if spec in _DEFAULT_SPECS else None

    set_memory_storage_factory(factory)

    def undo() -> None:
        set_memory_storage_factory(None)

    return undo

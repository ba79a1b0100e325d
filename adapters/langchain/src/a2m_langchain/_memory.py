"""``A2MMemory``: a langchain-classic ``BaseMemory`` that keeps a conversation in an A2M
store and, when asked, brings back what any framework remembered that is relevant."""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, get_buffer_string
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from a2m import A2MClient, AsyncA2MClient, Record
from a2m.adapter_support import Flow, drive, drive_async, transferred_observations
from a2m_types.observations import Observation

from ._chat_history import A2MChatMessageHistory
from ._clients import need_async, need_sync, sort_clients
from ._records import (
    DEFAULT_NAMESPACE,
    Layout,
    alayout_of,
    layout_of,
    retrieved_document,
    session_of,
    transferred_document,
)

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError:
    from ._compat import load_base_memory

    load_base_memory()  # raises an ImportError naming the extra and the supported versions
    raise

__all__ = ["A2MMemory"]


class A2MMemory(BaseMemory):
    """Drop-in for ``ConversationBufferMemory`` / ``ConversationBufferWindowMemory`` /
    ``VectorStoreRetrieverMemory``, kept in A2M.

    ``save_context`` writes the turn as two episodic records (the input with role
    ``user``, the output with role ``assistant``) in one ``group``, ``session`` =
    ``session_id``, in one ``memory/remember``. ``load_memory_variables`` returns the
    session's transcript under ``memory_key`` — all of it, or the last ``k`` turns —
    as a string (``human_prefix`` / ``ai_prefix``) or, with ``return_messages``, as
    messages: one ``memory/timeline``. With ``relevant_key`` set it also returns, under
    that key, up to ``relevant_k`` records (within the server's ``max_recall_limit``, which
    also caps the recall's candidates) most relevant to the input written by any
    framework in any namespace (or only ``relevant_namespaces``), other than this
    session's transcript: one more ``memory/recall`` (by words, and by vector too with
    ``embeddings``, which also stores every message with its vector), and where the
    server declares observation transfer grants, one ``memory/observations/recall`` for
    up to ``relevant_k`` observations granted from other projects, after the rest and
    marked ``[transferred from …]`` (documents: ``metadata["transferred"]``). ``clear``
    forgets this session's records in this ``namespace`` only: one ``memory/forget``.

    ``input_key`` / ``output_key`` are found as the classic memories find them when
    unset. ``client`` is an :class:`~a2m.A2MClient` or an :class:`~a2m.AsyncA2MClient`
    (the ``a``-prefixed methods); pass ``async_client=`` as well to use both."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: A2MClient | AsyncA2MClient | None = None
    """The sync client (or an async one, sorted into ``async_client``)."""
    async_client: AsyncA2MClient | None = None
    """The async client used by the ``a``-prefixed methods."""
    session_id: str
    """The conversation: the records' ``session``."""
    namespace: str = DEFAULT_NAMESPACE
    """Where this memory writes and what ``clear`` may delete."""
    agent: str | None = None
    """Written as ``source_agent`` and as the records' owner where the server keeps owners
    (leave it unset over an authenticated connection: the principal is the owner)."""
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    k: int | None = None
    """Turns of transcript to return (``None``: the whole conversation, as the buffer
    memory; an int: as the window memory, ``0`` returning none)."""
    relevant_key: str | None = None
    """Also return memories relevant to the input under this key (``None``: do not)."""
    relevant_k: int = Field(default=4, ge=1)
    relevant_namespaces: list[str] | None = None
    """Where relevant memories may come from (``None``: every namespace)."""
    relevant_min_score: float | None = None
    return_docs: bool = False
    """Return relevant memories as documents carrying provenance, not as one string."""
    embeddings: Embeddings | None = None
    """Store each message with its vector, and find relevant memories by vector as well
    as by words (as ``VectorStoreRetrieverMemory`` does with its vector store)."""

    _history: A2MChatMessageHistory = PrivateAttr()

    @model_validator(mode="after")
    def _build_history(self) -> A2MMemory:
        sync, asynchronous = sort_clients(self.client, self.async_client)
        self.client, self.async_client = sync, asynchronous
        self._history = A2MChatMessageHistory(
            self.session_id,
            sync,
            async_client=asynchronous,
            namespace=self.namespace,
            agent=self.agent,
            embeddings=self.embeddings,
        )
        return self

    @property
    def chat_memory(self) -> A2MChatMessageHistory:
        """The conversation as a chat message history (the classic memories' attribute)."""
        return self._history

    @property
    def memory_variables(self) -> list[str]:
        """``memory_key``, and ``relevant_key`` when set."""
        return [self.memory_key] + ([self.relevant_key] if self.relevant_key else [])

    # --- load ------------------------------------------------------------------------------

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The transcript (and relevant memories): one timeline (and one recall)."""
        limit = self._window()
        messages = [] if limit == 0 else self._history.recent_messages(limit)
        loaded: dict[str, Any] = {self.memory_key: self._buffer(messages)}
        if self.relevant_key:
            client = need_sync(self.client, self, "load_memory_variables")
            params = self._relevant_params(inputs, layout_of(client))
            if self.embeddings is not None:
                params["embedding"] = self.embeddings.embed_query(params["query"])
            result = client.recall(**params)
            granted = drive(self._transferred(client, params["query"]), client)
            loaded[self.relevant_key] = self._relevant(result.records, granted)
        return loaded

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The async twin of :meth:`load_memory_variables`."""
        limit = self._window()
        messages = [] if limit == 0 else await self._history.arecent_messages(limit)
        loaded: dict[str, Any] = {self.memory_key: self._buffer(messages)}
        if self.relevant_key:
            client = need_async(self.async_client, self, "aload_memory_variables")
            params = self._relevant_params(inputs, await alayout_of(client))
            if self.embeddings is not None:
                params["embedding"] = await self.embeddings.aembed_query(params["query"])
            result = await client.recall(**params)
            granted = await drive_async(self._transferred(client, params["query"]), client)
            loaded[self.relevant_key] = self._relevant(result.records, granted)
        return loaded

    def _window(self) -> int | None:
        if self.k is None:
            return None
        return self.k * 2 if self.k > 0 else 0

    def _buffer(self, messages: list[BaseMessage]) -> str | list[BaseMessage]:
        if self.return_messages:
            return messages
        return get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)

    def _relevant_params(self, inputs: dict[str, Any], layout: Layout) -> dict[str, Any]:
        query = str(inputs[self._input_key(inputs)])
        where: dict[str, Any] = {}
        if self.relevant_namespaces is not None:
            where["namespace"] = list(self.relevant_namespaces)
        params: dict[str, Any] = {
            "query": query,
            # this session's own transcript is dropped here, so ask for enough beyond it,
            # within what the server returns in one call
            "limit": min(self.relevant_k * 4, layout.max_recall_limit),
        }
        if where:
            params["where"] = where
        if self.relevant_min_score is not None:
            params["min_score"] = self.relevant_min_score
        return params

    def _transferred(
        self, client: A2MClient | AsyncA2MClient, query: str
    ) -> Flow[list[Observation]]:
        return transferred_observations(
            client.description, query, k=self.relevant_k, min_score=self.relevant_min_score
        )

    def _relevant(self, records: list[Record], granted: list[Observation]) -> str | list[Document]:
        mine = self._history.provenance.namespace
        kept = [
            record
            for record in records
            if not (
                session_of(record) == self.session_id
                and (record.metadata or {}).get("namespace") == mine
            )
        ][: self.relevant_k]
        documents = [retrieved_document(record) for record in kept]
        transferred = [transferred_document(observation) for observation in granted]
        if self.return_docs:
            return documents + transferred
        lines = [document.page_content for document in documents]
        lines += [
            f"[transferred from {d.metadata['source_project'] or 'another project'}] "
            + d.page_content
            for d in transferred
        ]
        return "\n".join(lines)

    # --- save ------------------------------------------------------------------------------

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Write the turn: two records, one group, one ``memory/remember``."""
        self._history.add_messages(self._turn(inputs, outputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """The async twin of :meth:`save_context`."""
        await self._history.aadd_messages(self._turn(inputs, outputs))

    def _turn(self, inputs: dict[str, Any], outputs: dict[str, str]) -> list[BaseMessage]:
        said = inputs[self._input_key(inputs)]
        answered = outputs[self._output_key(outputs)]
        return [HumanMessage(content=said), AIMessage(content=answered)]

    def _input_key(self, inputs: dict[str, Any]) -> str:
        if self.input_key is not None:
            return self.input_key
        # as the classic memories: the one input that is neither a memory variable nor stop
        candidates = list(set(inputs).difference([*self.memory_variables, "stop"]))
        if len(candidates) != 1:
            raise ValueError(f"One input key expected got {candidates}")
        return candidates[0]

    def _output_key(self, outputs: dict[str, str]) -> str:
        if self.output_key is not None:
            return self.output_key
        if len(outputs) == 1:
            return next(iter(outputs))
        if "output" in outputs:
            warnings.warn(
                f"'{type(self).__name__}' got multiple output keys: {outputs.keys()}. The "
                "default 'output' key is being used. If this is not desired, please "
                "manually set 'output_key'.",
                stacklevel=4,
            )
            return "output"
        raise ValueError(
            f"Got multiple output keys: {outputs.keys()}, cannot determine which to store in "
            "memory. Please set the 'output_key' explicitly."
        )

    # --- clear -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget this session's records written in this namespace (one forget)."""
        self._history.clear()

    async def aclear(self) -> None:
        """The async twin of :meth:`clear`."""
        await self._history.aclear()

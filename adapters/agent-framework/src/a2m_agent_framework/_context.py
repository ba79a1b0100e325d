"""``A2MContextProvider``: before each run, what the shared store holds that is relevant to
the input — written by any framework — goes into the model's context; after it, the turn
is written back for every other framework to find."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import AgentSession, ContextProvider, Message, SessionContext, tool

from a2m import AsyncA2MClient, Record
from a2m.adapter_support import (
    DEFAULT_TIMEOUT,
    ClientSource,
    ServerLayout,
    drive_async,
    memory_lines,
    transferred_lines,
    transferred_observations,
)

from ._messages import Provenance, checked_namespace

__all__ = ["DEFAULT_MEMORY_NAMESPACE", "DEFAULT_SCORE_THRESHOLD", "A2MContextProvider"]

DEFAULT_MEMORY_NAMESPACE = "agent-framework/memory"
"""Where turns and remembered facts are written when no namespace is given."""

DEFAULT_SCORE_THRESHOLD = 0.05
"""Recalled records scoring below this never reach the model: noise, not memory."""

_HEADER = "Memories from the shared store, relevant to this conversation:"


class A2MContextProvider(ContextProvider):
    """Long-term memory shared with every framework: ``Agent(..., context_providers=[
    A2MContextProvider(url="http://127.0.0.1:8765/", agent="planner")])``.

    ``before_run`` recalls, in one ``memory/recall``, the ``k`` records most relevant to the
    run's input messages, from every namespace (or only ``namespaces``), scoring at least
    ``score_threshold`` and matching ``where``, and adds them as one user message to
    ``context.context_messages[source_id]``, each line saying which framework and agent
    wrote it. Context messages, not instructions: they are attributed to this provider,
    so a history provider does not store them as part of the conversation, and the
    agent's own instructions stay as its author wrote them. Records of the running
    conversation itself are left out (the history provider replays those). Where the
    server declares observation transfer grants, one ``memory/observations/recall`` adds
    up to ``k`` observations granted from other projects, marked with their project.

    ``after_run`` writes the turn — the input and the answer — as one episodic record in
    ``namespace`` with provenance ``source_framework="agent-framework"``, in one
    ``memory/remember`` (``store_turns=False`` turns this off). With ``remember_tool=True``
    the agent also gets a ``remember_fact`` tool: each fact it marks is one semantic
    record, written when the tool runs.

    ``client`` stays the caller's; without one, a client is opened from ``url``
    (``A2M_URL``) on the first call and closed by :meth:`aclose`."""

    DEFAULT_SOURCE_ID = "a2m_memory"

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        namespace: str = DEFAULT_MEMORY_NAMESPACE,
        agent: str | None = None,
        source_id: str = DEFAULT_SOURCE_ID,
        k: int = 5,
        score_threshold: float = DEFAULT_SCORE_THRESHOLD,
        namespaces: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        store_turns: bool = True,
        remember_tool: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(source_id)
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if not 0.0 <= score_threshold <= 1.0:
            raise ValueError(f"score_threshold is a score in [0, 1], not {score_threshold}")
        self.provenance = Provenance(checked_namespace(namespace), agent)
        self.k = k
        self.score_threshold = score_threshold
        self.namespaces = [checked_namespace(n) for n in namespaces] if namespaces else None
        self.where = dict(where) if where else None
        self.store_turns = store_turns
        self.remember_tool = remember_tool
        self._source = ClientSource(client, url=url, token=token, timeout=timeout)

    async def _open(self) -> tuple[AsyncA2MClient, ServerLayout]:
        return await self._source.open()

    def _recall_where(self) -> dict[str, Any] | None:
        where = dict(self.where or {})
        if self.namespaces:
            where["namespace"] = list(self.namespaces)
        return where or None

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Add the memories relevant to the input to the context (and the tool)."""
        if self.remember_tool:
            context.extend_tools(self.source_id, [self._remember_fact_tool(agent)])
        query = "\n".join(m.text for m in context.input_messages if m.text).strip()
        if not query:
            return
        client, layout = await self._open()
        options: dict[str, Any] = {
            "limit": min(self.k * 2, layout.max_recall_limit),
            "min_score": self.score_threshold,
        }
        where = self._recall_where()
        if where is not None:
            options["where"] = where
        records = (await client.recall(query, **options)).records
        running = context.session_id or session.session_id
        relevant = [
            record
            for record in records
            if (record.score is None or record.score >= self.score_threshold)
            and not _of_conversation(record, running)
        ][: self.k]
        granted = await drive_async(
            transferred_observations(
                client.description, query, k=self.k, min_score=self.score_threshold
            ),
            client,
        )
        blocks = [memory_lines(relevant, _HEADER)] if relevant else []
        if granted:
            blocks.append(transferred_lines(granted))
        if blocks:
            context.extend_messages(self, [Message(role="user", contents=["\n\n".join(blocks)])])

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Write the turn — what was asked and what was answered — as one record."""
        if not self.store_turns:
            return
        asked = "\n".join(m.text for m in context.input_messages if m.text).strip()
        response = context.response
        answered = "\n".join(m.text for m in (response.messages if response else []) if m.text)
        if not asked and not answered:
            return
        client, layout = await self._open()
        name = getattr(agent, "name", None)
        record = self._record(
            layout,
            f"user: {asked}\nassistant: {answered.strip()}",
            "episodic",
            agent=self.provenance.agent or name,
            session=context.session_id or session.session_id,
        )
        await client.remember(record)

    def _record(
        self,
        layout: ServerLayout,
        content: str,
        memory_type: str,
        *,
        agent: str | None,
        session: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        metadata = self.provenance.metadata(memory_type, **extra)
        if agent is not None:
            metadata["source_agent"] = agent
        if session is not None:
            metadata["session"] = session
        record: dict[str, Any] = {"content": content, "role": "memory", "metadata": metadata}
        tier = layout.tier(memory_type)
        if tier is not None:
            record["tier"] = tier
        if layout.supports("keys"):
            record["key"] = f"{self.provenance.namespace}/{memory_type}/{uuid.uuid4()}"
        if self.provenance.agent is not None and layout.supports("scopes"):
            record["owner"] = self.provenance.agent
        if session is not None and layout.supports("sessions"):
            record["session"] = session
        return record

    def _remember_fact_tool(self, agent: Any) -> Any:
        name = self.provenance.agent or getattr(agent, "name", None)

        @tool(name="remember_fact")
        async def remember_fact(fact: str) -> str:
            """Save one fact worth keeping to the long-term memory every agent shares."""
            client, layout = await self._open()
            record = self._record(layout, fact, "semantic", agent=name)
            ids = (await client.remember(record)).ids
            return f"Remembered (id {ids[0]})."

        return remember_fact

    async def aclose(self) -> None:
        """Close the client this provider opened from a URL; a given client stays open."""
        await self._source.aclose()


def _of_conversation(record: Record, session: str | None) -> bool:
    if session is None:
        return False
    stated = record.metadata or {}
    return (record.session == session or stated.get("session") == session) and stated.get(
        "source_framework"
    ) == "agent-framework"

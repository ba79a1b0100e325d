"""Team memory for ``autogen-agentchat``: record what a team's (or an agent's) run says in
an A2M store, one episodic record per chat message with its role and speaker, and replay
a session's transcript in order after a restart.

``AssistantAgent`` never writes to its memories, so this is how what one agent says
becomes something every other agent, of AutoGen or any framework, can recall.
Needs ``pip install "a2m-autogen[agentchat]"`` (autogen-agentchat 0.7.5 up to 0.8)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

from a2m import AsyncA2MClient, RecordInput
from a2m.adapter import check_storable
from a2m.adapter_support import drive_async, remember_whole
from a2m_types.rest import record_key, validate_key, validate_namespace

from ._compat import SUPPORTED_AGENTCHAT, require
from ._connection import ConnectionConfig, Link, StoreLayout, every_record
from ._contents import SOURCE_FRAMEWORK, TEXT_MIME

require(
    "autogen-agentchat",
    SUPPORTED_AGENTCHAT,
    {
        "autogen_agentchat.base": ("TaskResult",),
        "autogen_agentchat.messages": ("BaseAgentEvent", "BaseChatMessage", "MessageFactory"),
    },
)

from autogen_agentchat.base import TaskResult  # noqa: E402
from autogen_agentchat.messages import (  # noqa: E402
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
)

__all__ = ["A2MTranscript"]

_IDS = uuid.UUID("5c1e3a52-58a4-4c0b-9d8e-a2a2a2a2a2a2")
"""The uuid5 namespace of transcript record ids."""

Item = TypeVar("Item")


class A2MTranscript:
    """A session's transcript in an A2M store.

    :meth:`record` stores a run's chat messages (a ``TaskResult`` or a list), and
    :meth:`stream` stores them while passing a ``run_stream()`` through unchanged; each
    message is one episodic record keyed by the message's id (recording it twice writes it
    once) with ``role`` (``user`` for what the user said, else ``assistant``), the agent
    as ``source_agent`` and ``session``. Events (tool calls, memory queries, streaming
    chunks) are not conversation and are skipped. :meth:`messages` replays the session
    in order, as agentchat messages a new team can be given (pass a team's
    ``custom_message_types`` as ``message_types`` so they replay too).

    Round trips: ``record`` 1 ``memory/remember`` per ``max_records_per_call`` messages,
    all or nothing (a record of several calls first reads which messages are stored, 1
    ``memory/timeline`` per ``max_recall_limit``, and where a later call is refused, 1
    ``memory/forget`` removes what the earlier ones created), ``stream`` 1 per message, ``messages`` 1 ``memory/timeline`` per ``max_recall_limit``
    messages where the server pages by cursor (else the newest ``max_recall_limit``).
    The client is the caller's when passed in; else it is
    opened from ``url`` (or ``A2M_URL``) and closed by :meth:`aclose`."""

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        session: str,
        namespace: str = "autogen/team",
        url: str | None = None,
        timeout: float | None = 30.0,
        message_types: Sequence[type[BaseChatMessage]] = (),
    ) -> None:
        if "/" in session:
            raise ValueError(f"a session is one key segment and cannot contain '/': {session!r}")
        validate_key(session)
        self.session = session
        self.namespace = validate_namespace(namespace)
        self._link = Link(client, ConnectionConfig(url=url, timeout=timeout), self.namespace)
        self._seq = 0
        self._factory = MessageFactory()
        for message_type in message_types:  # a team's custom_message_types
            if not self._factory.is_registered(message_type):
                self._factory.register(message_type)

    def _record(self, message: BaseChatMessage, layout: StoreLayout) -> RecordInput:
        self._seq += 1
        fields: dict[str, Any] = {
            "content": message.to_text(),
            "role": "user" if message.source == "user" else "assistant",
            # The same message recorded twice is one record: by key, or by id (§3.2).
            "id": str(uuid.uuid5(_IDS, f"{self.namespace}/{self.session}/{message.id}")),
            "metadata": {
                "namespace": self.namespace,
                "type": "episodic",
                "value": dict(message.dump()),
                "seq": self._seq,
                "sent_at": message.created_at.isoformat(),
                "session": self.session,
                "transcript": self.session,
                "mime_type": TEXT_MIME,
                "source_agent": message.source,
                "source_framework": SOURCE_FRAMEWORK,
            },
        }
        if layout.keys:
            fields["key"] = record_key(self.namespace, f"{self.session}/{message.id}")
        tier = layout.tier("episodic")
        if tier is not None:
            fields["tier"] = tier
        if "sessions" in layout.capabilities:
            fields["session"] = self.session
        check_storable(fields, "message")
        return RecordInput.model_validate(fields)

    async def record(self, run: TaskResult | Iterable[BaseAgentEvent | BaseChatMessage]) -> int:
        """Store the chat messages of ``run``; returns how many were stored."""
        items = run.messages if isinstance(run, TaskResult) else list(run)
        chat = [item for item in items if isinstance(item, BaseChatMessage)]
        if not chat:
            return 0
        layout = await self._link.layout()
        records = [self._record(message, layout) for message in chat]
        client = await self._link.client()
        flow = remember_whole(
            [record.to_wire() for record in records],
            per_call=layout.max_records_per_call,
            per_read=layout.max_recall_limit,
            capabilities=layout.capabilities,
        )
        await drive_async(flow, client, settle=True)
        return len(records)

    async def stream(self, run: AsyncIterator[Item]) -> AsyncIterator[Item]:
        """Pass ``run`` (a team's or agent's ``run_stream()``) through unchanged, storing
        each chat message before handing it on."""
        async for item in run:
            if isinstance(item, BaseChatMessage):
                await self.record([item])
            yield item

    async def messages(self) -> list[BaseChatMessage]:
        """The session's chat messages, in the order they were said."""
        layout = await self._link.layout()
        selector = layout.beneath(self.namespace, self.session)
        client = await self._link.client()
        found: list[tuple[datetime, int, BaseChatMessage]] = []
        for record in await every_record(client, layout, selector):
            metadata = record.metadata or {}
            value, seq, sent = metadata.get("value"), metadata.get("seq"), metadata.get("sent_at")
            if not (isinstance(value, dict) and isinstance(seq, int) and isinstance(sent, str)):
                continue
            try:
                message = self._factory.create(value)
            except (ValueError, TypeError):
                continue  # a message type this process does not know
            if isinstance(message, BaseChatMessage):
                found.append((_instant(sent), seq, message))
        found.sort(key=lambda item: (item[0], item[1]))
        return [message for _, _, message in found]

    async def aclose(self) -> None:
        """Close the client this transcript opened; a client passed in stays open."""
        await self._link.aclose()


def _instant(stamp: str) -> datetime:
    """An ISO timestamp as an aware datetime (naive ones are UTC), for sorting."""
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

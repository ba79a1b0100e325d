"""``A2MChatCompletionContext``: an agent's model context whose transcript lives in an A2M
store by session, so a restarted agent picks the conversation up where it stopped and
every other reader of the store sees what was said, by whom."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from autogen_core import Component, FunctionCall
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from pydantic import Field, SecretStr, TypeAdapter, ValidationError
from typing_extensions import Self

from a2m import AsyncA2MClient, Record, RecordInput
from a2m.adapter import check_storable
from a2m.adapter_support import remember_all
from a2m_types.rest import validate_key, validate_namespace

from ._connection import ConnectionConfig, Link, StoreLayout, every_record
from ._contents import SOURCE_FRAMEWORK, TEXT_MIME, transcript_key

__all__ = ["A2MChatCompletionContext", "A2MChatCompletionContextConfig"]

_MESSAGES: TypeAdapter[LLMMessage] = TypeAdapter(LLMMessage)

_IDS_PER_FORGET = 1000
"""Records one ``memory/forget`` names by id, which keeps a request's body small."""


class A2MChatCompletionContextConfig(ConnectionConfig):
    """An ``A2MChatCompletionContext`` as ``dump_component`` writes it (never a secret)."""

    session: str
    """The conversation: the transcript is this session's messages in ``namespace``."""
    namespace: str = "autogen/context"
    """Where the transcript's records live; give each agent its own."""
    buffer_size: int | None = Field(default=None, ge=1)
    """Show the model only the last this many messages (all when ``None``)."""
    initial_messages: list[LLMMessage] | None = None
    """Messages a new, empty session starts with."""


def _role(message: LLMMessage) -> str:
    if isinstance(message, UserMessage):
        return "user"
    if isinstance(message, AssistantMessage):
        return "assistant"
    if isinstance(message, FunctionExecutionResultMessage):
        return "tool"
    return "system"


def _text(message: LLMMessage) -> str:
    """The message as readable text, so recall across the store finds its words."""
    if isinstance(message, FunctionExecutionResultMessage):
        return "\n".join(result.content for result in message.content)
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, FunctionCall):
            parts.append(f"{part.name}({part.arguments})")
    return "\n".join(parts) if parts else json.dumps(_dump(message))


def _dump(message: LLMMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = _MESSAGES.dump_python(message, mode="json")
    return dumped


class A2MChatCompletionContext(ChatCompletionContext, Component[A2MChatCompletionContextConfig]):
    """A ``ChatCompletionContext`` kept in an A2M store: every message added is one
    episodic record of ``session`` (role, and the speaking agent as ``source_agent``), and
    a new context on the same session and namespace loads the transcript back in order.

    The store is read once, on the first call: the whole transcript, one
    ``memory/timeline`` per ``max_recall_limit`` messages where the server pages by cursor
    (one without a limit where it declares no ``max_recall_limit``; else the newest
    ``max_recall_limit``, warning with ``a2m.IncompleteListing`` when that cap is
    reached); after that ``get_messages`` is local and
    ``add_message`` is one ``memory/remember``. System messages added while running (a
    memory's recalled context, for one) are derived from the store and stay local; the
    initial messages are stored. ``clear`` (an agent's reset) deletes the session's
    transcript in this namespace (one ``memory/forget``). One context per
    (namespace, session) writes; give each agent of a team its own namespace."""

    component_type = "chat_completion_context"
    component_provider_override = "a2m_autogen.A2MChatCompletionContext"
    component_config_schema = A2MChatCompletionContextConfig

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        session: str,
        namespace: str = "autogen/context",
        buffer_size: int | None = None,
        initial_messages: Sequence[LLMMessage] | None = None,
        url: str | None = None,
        binding: str = "http",
        command: Sequence[str] | None = None,
        token: str | SecretStr | None = None,
        token_env: str | None = "A2M_TOKEN",
        timeout: float | None = 30.0,
    ) -> None:
        if "/" in session:
            raise ValueError(f"a session is one key segment and cannot contain '/': {session!r}")
        validate_key(session)
        initial = list(initial_messages) if initial_messages is not None else None
        super().__init__(initial)
        self._config = A2MChatCompletionContextConfig.model_validate(
            {
                "session": session,
                "namespace": validate_namespace(namespace),
                "buffer_size": buffer_size,
                "initial_messages": initial,
                "url": url,
                "binding": binding,
                "command": list(command) if command is not None else None,
                "token": token,
                "token_env": token_env,
                "timeout": timeout,
            }
        )
        self._link = Link(client, self._config, self._config.namespace)
        self._loaded = False
        self._loading = asyncio.Lock()
        self._next_seq = 0
        self._generation = 0

    @property
    def session(self) -> str:
        """The conversation this context's transcript belongs to."""
        return self._config.session

    def _record(self, message: LLMMessage, layout: StoreLayout) -> RecordInput:
        config = self._config
        metadata: dict[str, Any] = {
            "namespace": config.namespace,
            "type": "episodic",
            "value": _dump(message),
            "seq": self._next_seq,
            "generation": self._generation,
            "session": config.session,
            "transcript": config.session,
            "mime_type": TEXT_MIME,
            "source_framework": SOURCE_FRAMEWORK,
        }
        source = getattr(message, "source", None)
        if isinstance(source, str):
            metadata["source_agent"] = source
        self._next_seq += 1
        fields: dict[str, Any] = {
            "content": _text(message),
            "role": _role(message),
            "metadata": metadata,
        }
        if layout.keys:
            fields["key"] = transcript_key(config.namespace, config.session)
        tier = layout.tier("episodic")
        if tier is not None:
            fields["tier"] = tier
        if "sessions" in layout.capabilities:
            fields["session"] = config.session
        check_storable(fields, "message")
        return RecordInput.model_validate(fields)

    async def _write(self, messages: Sequence[LLMMessage]) -> None:
        """One ``memory/remember`` per ``max_records_per_call`` messages, all or nothing:
        where a later call is refused, one ``memory/forget`` removes the earlier ones'
        (each message is a new record, at a fresh key)."""
        layout = await self._link.layout()
        records = [self._record(m, layout).to_wire() for m in messages]
        client = await self._link.client()
        await remember_all(client, layout, records)

    async def _load(self) -> None:
        if self._loaded:
            return
        async with self._loading:  # concurrent first calls load (and seed) once
            if not self._loaded:
                await self._load_now()

    async def _load_now(self) -> None:
        layout = await self._link.layout()
        client = await self._link.client()
        selector = layout.beneath(self._config.namespace, self._config.session)
        generation, stored = _transcript(await every_record(client, layout, selector))
        self._loaded = True
        if stored:
            self._messages = [message for _, message in stored]
            self._next_seq = stored[-1][0] + 1
            self._generation = generation
        elif self._messages:
            await self._write(self._messages)

    async def add_message(self, message: LLMMessage) -> None:
        """Add ``message`` to the context and, unless it is a run-time system message, to
        the store (one ``memory/remember``)."""
        await self._load()
        self._messages.append(message)
        if not isinstance(message, SystemMessage):
            await self._write([message])

    async def get_messages(self) -> list[LLMMessage]:
        """The transcript, oldest first: all of it, as ``UnboundedChatCompletionContext``
        gives it; with ``buffer_size``, its last messages, never starting with a function
        result (its call cut off), as ``BufferedChatCompletionContext`` gives them."""
        await self._load()
        size = self._config.buffer_size
        if size is None:
            return list(self._messages)
        messages = self._messages[-size:]
        if messages and isinstance(messages[0], FunctionExecutionResultMessage):
            messages = messages[1:]
        return messages

    async def clear(self) -> None:
        """Empty the context and delete its session's transcript in this namespace."""
        layout = await self._link.layout()
        selector = layout.beneath(self._config.namespace, self._config.session)
        await (await self._link.client()).forget(**selector)
        self._messages = []
        self._next_seq = 0
        self._generation = 0
        self._loaded = True

    async def save_state(self) -> Mapping[str, Any]:
        """The transcript as AutoGen saves a context's state (loaded from the store first)."""
        await self._load()
        return await super().save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace the transcript, here and in the store, with the saved one: the saved
        messages are written first (all or nothing) as the transcript's next generation,
        then the records it held before are removed by id. A refused write leaves the old
        transcript whole, here and in the store; once the write is in, a context loading
        the session reads the new transcript alone, even where removing the old records
        then fails (they are left for the next ``load_state`` or ``clear``). Calls: the
        listing (as the first load), the writes, then one ``memory/forget`` per 1000
        earlier records."""
        layout = await self._link.layout()
        client = await self._link.client()
        selector = layout.beneath(self._config.namespace, self._config.session)
        earlier = await every_record(client, layout, selector)
        kept = (self._messages, self._next_seq, self._loaded, self._generation)
        await super().load_state(state)
        newest = max((_generation(record) for record in earlier), default=0)
        self._next_seq, self._loaded = 0, True
        self._generation = max(newest, self._generation) + 1
        try:
            if self._messages:
                await self._write(self._messages)
        except BaseException:
            self._messages, self._next_seq, self._loaded, self._generation = kept
            raise
        ids = [record.id for record in earlier]
        for start in range(0, len(ids), _IDS_PER_FORGET):
            await client.forget(ids=ids[start : start + _IDS_PER_FORGET])

    async def close(self) -> None:
        """Close the client this context opened; a client passed in stays open."""
        await self._link.aclose()

    def _to_config(self) -> A2MChatCompletionContextConfig:
        if not self._link.describable:
            raise ValueError(
                "this A2MChatCompletionContext uses a client passed in, and nothing says where "
                "it points: pass url= (or binding='stdio', command=[...]) as well to dump it"
            )
        return self._config.model_copy()

    @classmethod
    def _from_config(cls, config: A2MChatCompletionContextConfig) -> Self:
        fields = config.model_dump(exclude={"token", "initial_messages"})
        return cls(token=config.token, initial_messages=config.initial_messages, **fields)


def _generation(record: Record) -> int:
    """Which writing of the transcript ``record`` belongs to: ``load_state`` writes the
    next one; records from before generations were written are the first, 0."""
    generation = (record.metadata or {}).get("generation", 0)
    return generation if type(generation) is int else 0


def _transcript(records: Sequence[Record]) -> tuple[int, list[tuple[int, LLMMessage]]]:
    """The newest generation among the stored messages, and its messages in the order
    they were added (an older generation's records are what a ``load_state`` that could
    not finish removing them left behind)."""
    found: list[tuple[int, int, str, LLMMessage]] = []
    for record in records:
        metadata = record.metadata or {}
        seq = metadata.get("seq")
        if not isinstance(seq, int):
            continue
        try:
            message = _MESSAGES.validate_python(metadata.get("value"))
        except ValidationError:
            continue  # not a message this context wrote
        found.append((_generation(record), seq, record.created_at.isoformat(), message))
    newest = max((generation for generation, *_ in found), default=0)
    current = [item for item in found if item[0] == newest]
    current.sort(key=lambda item: (item[1], item[2]))
    return newest, [(seq, message) for _, seq, _, message in current]

"""How LangChain objects become A2M records and back: messages, documents, provenance.

One mapping, shared by every class of this package, following the record conventions of
:mod:`a2m.adapter` so that CrewAI, AutoGen and Agno adapters read what LangChain wrote."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from a2m import A2MClient, AsyncA2MClient, Record
from a2m.adapter import check_storable
from a2m.adapter_support import ServerLayout
from a2m.errors import CapabilityNotSupported, InvalidParams
from a2m_types.observations import Observation
from a2m_types.rest import InvalidNamespace, validate_namespace

SOURCE_FRAMEWORK = "langchain"
"""``metadata.source_framework`` of every record this package writes."""

DEFAULT_NAMESPACE = "langchain"
"""Where records land when no namespace is given."""

MESSAGE_FIELD = "message"
"""The metadata key holding a message exactly as LangChain serializes it."""

DOCUMENT_METADATA_FIELD = "document_metadata"
"""The metadata key holding a vector store document's own metadata, verbatim."""

_ROLE_OF_TYPE = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "developer": "system",
}


def new_id() -> str:
    """A fresh identifier for a group or a document."""
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Layout(ServerLayout):
    """What this package needs to know of a server, read once from ``memory/describe``
    (:class:`a2m.adapter_support.ServerLayout`), and its refusal of what the server lacks."""

    def require(self, capability: str, why: str) -> None:
        """Refuse, before anything is sent, what this server cannot do."""
        if capability not in self.capabilities:
            raise CapabilityNotSupported(
                f"{why} needs the A2M capability {capability!r}, which this server does not "
                "declare",
                data={"capability": capability},
            )


def layout_of(client: A2MClient) -> Layout:
    """The layout of the server behind a sync client (one describe, cached by the client)."""
    return Layout.of(client.description or client.describe())


async def alayout_of(client: AsyncA2MClient) -> Layout:
    """The layout of the server behind an async client."""
    return Layout.of(client.description or await client.describe())


@dataclass(frozen=True)
class Provenance:
    """Who writes: the namespace scoping writes and deletes, the agent, the framework."""

    namespace: str
    agent: str | None = None

    def metadata(self, memory_type: str, **extra: Any) -> dict[str, Any]:
        """The metadata every record of this writer carries."""
        stated: dict[str, Any] = {
            "namespace": self.namespace,
            "type": memory_type,
            "source_framework": SOURCE_FRAMEWORK,
        }
        if self.agent is not None:
            stated["source_agent"] = self.agent
        stated.update(extra)
        return stated

    def placed(
        self,
        record: dict[str, Any],
        layout: Layout,
        memory_type: str,
        *,
        session: str | None = None,
    ) -> dict[str, Any]:
        """``record`` with tier, owner and session set where the server keeps them."""
        tier = layout.tier_for_kind.get(memory_type)
        if tier is not None:
            record["tier"] = tier
        if self.agent is not None and layout.supports("scopes"):
            record["owner"] = self.agent
        if session is not None and layout.supports("sessions"):
            record["session"] = session
        return record

    def own(self) -> dict[str, Any]:
        """The ``where`` selecting only records this writer's namespace holds."""
        return {"namespace": self.namespace, "source_framework": SOURCE_FRAMEWORK}


def checked_namespace(namespace: str) -> str:
    """``namespace`` if it is a valid A2M namespace (``[a-z0-9_-]`` segments)."""
    try:
        return validate_namespace(namespace)
    except InvalidNamespace as exc:
        raise InvalidParams(f"{exc} (nothing was sent)") from None


# --- messages -----------------------------------------------------------------------------


def role_of(message: BaseMessage) -> str:
    """The A2M ``role`` of a message: user, assistant, system, tool, function, or its own."""
    role = getattr(message, "role", None)  # ChatMessage and its chunk carry one
    if message.type in ("chat", "ChatMessageChunk") and isinstance(role, str):
        return role
    base = message.type.removesuffix("MessageChunk").lower()
    return _ROLE_OF_TYPE.get(base, _ROLE_OF_TYPE.get(message.type, message.type))


def checked_messages(messages: Sequence[Any]) -> list[BaseMessage]:
    """``messages``, refused before anything is sent if one is not a LangChain message."""
    for message in messages:
        if not isinstance(message, BaseMessage):
            raise InvalidParams(
                f"a chat history holds LangChain messages, not {type(message).__name__} "
                "(nothing was written)"
            )
    return list(messages)


def embeddable(messages: Sequence[BaseMessage]) -> list[str]:
    """The texts to embed: those of the messages that have one (a bare tool call has none)."""
    return [message.text for message in messages if message.text]


def message_vectors(
    messages: Sequence[BaseMessage], found: Sequence[Sequence[float]]
) -> list[Sequence[float] | None]:
    """Each message's vector, given the vectors of :func:`embeddable`'s texts in order."""
    vectors = iter(found)
    return [next(vectors) if message.text else None for message in messages]


_OPENS_A_TURN = frozenset({"human", "HumanMessageChunk", "system", "SystemMessageChunk"})


def message_records(
    messages: Sequence[BaseMessage],
    provenance: Provenance,
    layout: Layout,
    *,
    session: str,
    vectors: Sequence[Sequence[float] | None] | None = None,
) -> list[dict[str, Any]]:
    """One episodic record per message, at a fresh key beneath ``{namespace}/messages/``
    (with its vector from ``vectors``, in order, when given):
    readable text as ``content``, the message exactly as LangChain serializes it in
    ``metadata.message``. Each turn is one ``group``: a user (or system) message opens one,
    and the answers, tool calls and tool results after it join it, so they are kept or
    evicted together (§3.4)."""
    records: list[dict[str, Any]] = []
    group: str | None = None
    for message in checked_messages(messages):
        if group is None or message.type in _OPENS_A_TURN:
            group = new_id()
        stored = message_to_dict(message)
        position = len(records)
        check_storable(stored, f"messages[{position}]")
        check_storable(message.text, f"messages[{position}].text")
        stated = provenance.metadata("episodic", session=session, **{MESSAGE_FIELD: stored})
        if not layout.supports("sessions"):
            stated[SESSION_ID_FIELD] = session  # what a transcript is read by there
        record: dict[str, Any] = {
            "content": message.text,
            "role": role_of(message),
            "group": group,
            "metadata": stated,
        }
        vector = vectors[len(records)] if vectors is not None else None
        if vector is not None:
            record["embedding"] = [float(x) for x in vector]
        if layout.supports("keys"):
            # a key makes the message an entry, so adapters that read entries find it too
            record["key"] = f"{provenance.namespace}/messages/{new_id()}"
        records.append(provenance.placed(record, layout, "episodic", session=session))
    return records


def record_message(record: Record) -> BaseMessage:
    """The message a record holds; a record written elsewhere reads as its role says."""
    stored = (record.metadata or {}).get(MESSAGE_FIELD)
    if isinstance(stored, Mapping) and "type" in stored and "data" in stored:
        return messages_from_dict([dict(stored)])[0]
    from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage

    role = record.role or "user"
    if role == "user":
        return HumanMessage(content=record.content, id=record.id)
    if role == "assistant":
        return AIMessage(content=record.content, id=record.id)
    if role == "system":
        return SystemMessage(content=record.content, id=record.id)
    return ChatMessage(role=role, content=record.content, id=record.id)


SESSION_ID_FIELD = "session_id"
"""The metadata key naming a message's conversation on a server without ``sessions``: a
``where`` on ``session`` means the record field there (§5.2), which such a server drops."""


def transcript_where(provenance: Provenance, session: str, layout: Layout) -> dict[str, Any]:
    """The ``where`` that selects one conversation's messages written here: by the
    ``session`` field, or where the server keeps none, by ``metadata.session_id``."""
    field = "session" if layout.supports("sessions") else SESSION_ID_FIELD
    return {**provenance.own(), field: session, "type": "episodic"}


def session_of(record: Record) -> str | None:
    """The conversation a record belongs to: its ``session``, else its metadata's."""
    stated = (record.metadata or {}).get("session")
    return record.session or (stated if isinstance(stated, str) else None)


# --- documents ----------------------------------------------------------------------------


def provenance_of(record: Record) -> dict[str, Any]:
    """A record's id, key, score and provenance, as a retrieved document's metadata."""
    stated = record.metadata or {}
    found: dict[str, Any] = {
        "id": record.id,
        "key": record.key,
        "score": record.score,
        "role": record.role,
        "session": record.session,
        "owner": record.owner,
        "group": record.group,
        "tier": record.tier,
        "created_at": record.created_at.isoformat().replace("+00:00", "Z"),
        "namespace": stated.get("namespace"),
        "type": stated.get("type"),
        "source_framework": stated.get("source_framework"),
        "source_agent": stated.get("source_agent"),
        "metadata": stated,
    }
    return found


def retrieved_document(record: Record) -> Document:
    """A recalled record as a LangChain document: its text, and where it came from."""
    return Document(page_content=record.content, metadata=provenance_of(record), id=record.id)


def transferred_document(observation: Observation) -> Document:
    """An observation another project granted, as a document: its text, the project it
    was transferred from, the agent that wrote it and its score (``transferred`` true)."""
    metadata: dict[str, Any] = {
        "id": observation.id,
        "score": observation.score,
        "transferred": True,
        "source_project": observation.source_project,
        "source_agent": observation.agent,
        "created_at": observation.created_at.isoformat().replace("+00:00", "Z"),
    }
    return Document(page_content=observation.content, metadata=metadata, id=observation.id)

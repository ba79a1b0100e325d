"""``A2MMemory``: an ``autogen_core`` Memory kept in an A2M store, async end to end, that
several agents (of AutoGen or any other framework) read together, and that serializes
with ``dump_component`` like any AutoGen component."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autogen_core import CancellationToken, Component
from autogen_core.memory import Memory, MemoryContent, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from pydantic import Field, SecretStr
from typing_extensions import Self

from a2m import NOT_GIVEN, A2MError, AsyncA2MClient, PromptOptions, Record, filters
from a2m.adapter import AsyncA2MAdapter
from a2m.adapter_support import (
    continued,
    drive_async,
    transferred_lines,
    transferred_observations,
)
from a2m_types import new_id
from a2m_types.rest import validate_namespace

from ._connection import ConnectionConfig, Link, cancellable
from ._contents import (
    Provenance,
    content_record,
    observation_content,
    query_text,
    record_content,
)

__all__ = ["A2MMemory", "A2MMemoryConfig"]

log = logging.getLogger("a2m_autogen")

MEMORY_HEADER = "\nRelevant memory content (most relevant first):\n"
"""What the system message ``update_context`` adds starts with."""


class A2MMemoryConfig(ConnectionConfig):
    """An ``A2MMemory`` as ``dump_component`` writes it: where the store is, where this
    memory writes, and how it recalls. Never a secret: see ``token_env``."""

    name: str | None = None
    """An identifier for this memory."""
    namespace: str = "autogen/memory"
    """Where ``add`` writes and what ``clear`` empties; reads are not fenced in."""
    k: int = Field(default=5, ge=1, le=1000)
    """How many memories a query returns at most."""
    score_threshold: float | None = None
    """Leave out memories the server scores below this (scores rank within one call).
    Unset, ``query`` returns every match, and ``update_context`` still leaves out what
    scores 0 or less: a memory that matched nothing never reaches the model."""
    query_namespace: str | None = None
    """Recall only from this namespace (and those beneath it); ``None`` reads the store."""
    key_prefix: str | None = None
    """Recall only records whose A2M key is at or beneath this (whole segments)."""
    where: dict[str, Any] | None = None
    """Recall only records passing this filter (§5.2 equality, ``a2m.filters`` operators)."""
    memory_type: str = "semantic"
    """The memory type ``add`` gives its records: working, episodic, semantic, procedural."""
    source_agent: str | None = None
    """The agent written into each record's provenance."""
    session: str | None = None
    """The conversation added records belong to, where the server keeps sessions."""
    role: str | None = "user"
    """The role of added records: the application adds what the user said or knows."""
    use_server_prompt: bool = True
    """Have the server render recalled memories when it declares ``prompt``."""
    prompt_budget: int | None = Field(default=None, ge=1)
    """At most this many characters of rendered memories (whole memories are dropped)."""


@dataclass(frozen=True)
class _Plan:
    """One recall: its params, and a ``where`` the server cannot run, applied here."""

    params: dict[str, Any]
    local: dict[str, Any] | None
    k: int
    beneath: str | None = None
    """A namespace the records must be in or beneath, checked here: a server without
    ``keys`` holds the namespace in metadata, where equality cannot select children."""

    @property
    def filtered(self) -> bool:
        """Whether candidates are filtered here after the recall."""
        return self.local is not None or self.beneath is not None

    def keeps(self, record: Record) -> bool:
        """Whether ``record`` passes what is checked here."""
        if self.local is not None and not filters.matches(
            self.local, record.model_dump(mode="json")
        ):
            return False
        if self.beneath is None:
            return True
        namespace = (record.metadata or {}).get("namespace")
        return isinstance(namespace, str) and (
            namespace == self.beneath or namespace.startswith(self.beneath + "/")
        )


class A2MMemory(Memory, Component[A2MMemoryConfig]):
    """An AutoGen memory in a shared A2M store.

    ``add`` writes a record in this memory's ``namespace``; ``query`` and
    ``update_context`` recall across the whole store (shared memory is the point), or
    from ``query_namespace`` / ``key_prefix``; ``clear`` empties this namespace only.
    Pass ``client=`` to share a client (never closed here), or ``url=`` (else
    ``A2M_URL``) to have the memory open its own on first use and close it in
    :meth:`close`. Nothing touches the network until the first call.

    Round trips: ``add`` 1 (``memory/remember``), ``add_many`` 1 per
    ``max_records_per_call`` contents, ``query`` 1 and ``update_context`` 1
    (``memory/recall``; 2 where the server declares observation transfer grants, see
    :meth:`update_context`), ``clear`` 2 or more (``forget``, then ``timeline`` pages);
    the very first call also describes the server once."""

    component_type = "memory"
    component_provider_override = "a2m_autogen.A2MMemory"
    component_config_schema = A2MMemoryConfig

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        namespace: str = "autogen/memory",
        url: str | None = None,
        binding: str = "http",
        command: Sequence[str] | None = None,
        token: str | SecretStr | None = None,
        token_env: str | None = "A2M_TOKEN",
        timeout: float | None = 30.0,
        name: str | None = None,
        k: int = 5,
        score_threshold: float | None = None,
        query_namespace: str | None = None,
        key_prefix: str | None = None,
        where: Mapping[str, Any] | None = None,
        memory_type: str = "semantic",
        source_agent: str | None = None,
        session: str | None = None,
        role: str | None = "user",
        use_server_prompt: bool = True,
        prompt_budget: int | None = None,
    ) -> None:
        self._config = A2MMemoryConfig.model_validate(
            {
                "url": url,
                "binding": binding,
                "command": list(command) if command is not None else None,
                "token": token,
                "token_env": token_env,
                "timeout": timeout,
                "name": name,
                "namespace": validate_namespace(namespace),
                "k": k,
                "score_threshold": score_threshold,
                "query_namespace": (
                    validate_namespace(query_namespace) if query_namespace else None
                ),
                "key_prefix": key_prefix,
                "where": dict(where) if where is not None else None,
                "memory_type": memory_type,
                "source_agent": source_agent,
                "session": session,
                "role": role,
                "use_server_prompt": use_server_prompt,
                "prompt_budget": prompt_budget,
            }
        )
        if memory_type not in ("working", "episodic", "semantic", "procedural"):
            raise ValueError(
                f"memory_type must be working, episodic, semantic or procedural, not "
                f"{memory_type!r}"
            )
        self._link = Link(client, self._config, self._config.namespace)

    @property
    def name(self) -> str:
        """This memory's identifier (its namespace unless named)."""
        return self._config.name or self._config.namespace

    @property
    def namespace(self) -> str:
        """Where this memory writes."""
        return self._config.namespace

    # --- writing -------------------------------------------------------------------------

    def _provenance(self) -> Provenance:
        config = self._config
        return Provenance(config.namespace, config.source_agent, config.session, config.role)

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Store ``content`` as one record (one ``memory/remember``). Text and markdown are
        its text, JSON its structure; image or binary content needs a URI
        (``metadata["uri"]``) and becomes an external record. Bad content raises
        :class:`~a2m_autogen.ContentNotStorable` and nothing is written."""
        await self.add_many([content], cancellation_token)

    async def add_many(
        self,
        contents: Sequence[MemoryContent],
        cancellation_token: CancellationToken | None = None,
    ) -> None:
        """Store several contents, one ``memory/remember`` per ``max_records_per_call`` of
        them, all or nothing. Every content is checked before anything is sent, so a bad
        one writes nothing; each call is atomic on the server (§4.2), and where a later one
        fails, one ``memory/forget`` takes back what the earlier ones wrote (each content
        is a new record, under a new id) before the error is raised. Cancelled through
        ``cancellation_token``, it takes back the call in flight too, which the server
        may have stored before the cancel reached it (one it stores after is kept)."""
        if not contents:
            return
        layout = await self._link.layout()
        provenance = self._provenance()
        kind = self._config.memory_type
        records = [
            content_record(c, provenance, layout, kind).model_copy(update={"id": new_id()})
            for c in contents
        ]
        client = await self._link.client()
        step = layout.max_records_per_call
        answered: list[str] = []
        in_flight: list[str] = []
        try:
            for start in range(0, len(records), step):
                batch = records[start : start + step]
                in_flight = [str(record.id) for record in batch]
                await cancellable(client.remember(batch), cancellation_token)
                answered += in_flight
        except A2MError:
            await _take_back(client, answered)
            raise
        except asyncio.CancelledError:
            await _take_back(client, answered + in_flight)
            raise

    # --- reading -------------------------------------------------------------------------

    async def _plan(
        self,
        k: int | None,
        score_threshold: float | None,
        namespace: str | None,
        key_prefix: str | None,
        where: Mapping[str, Any] | None,
    ) -> _Plan:
        config = self._config
        limit = config.k if k is None else k
        if not 1 <= limit <= 1000:
            raise ValueError(f"k must be between 1 and 1000, not {limit}")
        space = namespace if namespace is not None else config.query_namespace
        prefix = key_prefix if key_prefix is not None else config.key_prefix
        tests = dict(config.where or {}) | dict(where or {})
        filters.validate(tests)
        layout = await self._link.layout()
        local: dict[str, Any] | None = None
        if (
            filters.uses_operators(tests)
            and not await (await self._link.client()).filter_operators()
        ):
            # A §5.2 server would read {"$gt": 3} as "equals this object": filter here,
            # on as many candidates as one recall may return.
            local, tests, limit = tests, {}, layout.max_recall_limit
        beneath = None
        if space is not None:
            validate_namespace(space)
            if layout.keys:
                prefix = f"{space}/" + (prefix or "")
            else:
                # Without keys a namespace is what records say in metadata, and equality
                # cannot select its children: check it here, on one recall's candidates.
                beneath, limit = space, layout.max_recall_limit
        # A k past the server's max_recall_limit asks for what it allows (an upper bound):
        # asking for more is refused outright.
        limit = min(limit, layout.max_recall_limit)
        threshold = score_threshold if score_threshold is not None else config.score_threshold
        params = {
            "limit": limit,
            "min_score": NOT_GIVEN if threshold is None else threshold,
            "key_prefix": NOT_GIVEN if prefix is None else prefix,
            "where": tests or NOT_GIVEN,
        }
        return _Plan(params, local, config.k if k is None else k, beneath)

    async def _recall(
        self,
        text: str,
        plan: _Plan,
        prompt: PromptOptions | None,
        cancellation_token: CancellationToken | None,
    ) -> tuple[list[Record], str | None]:
        """The recalled records (only what the rendering kept, when there is one) and the
        server's rendering of them."""
        client = await self._link.client()
        if plan.filtered:
            prompt = None  # the server would render candidates the filter drops
        call = client.recall(
            text if text.strip() else NOT_GIVEN,
            prompt=NOT_GIVEN if prompt is None else prompt,
            **plan.params,
        )
        result = await cancellable(call, cancellation_token)
        records = result.records
        if plan.filtered:
            return [r for r in records if plan.keeps(r)][: plan.k], None
        if prompt is not None and result.prompt_ids is not None:
            shown = set(result.prompt_ids)  # what survived the budget is what the model sees
            records = [r for r in records if r.id in shown]
        return records, result.prompt if prompt is not None else None

    async def query(
        self,
        query: str | MemoryContent = "",
        cancellation_token: CancellationToken | None = None,
        *,
        k: int | None = None,
        score_threshold: float | None = None,
        namespace: str | None = None,
        key_prefix: str | None = None,
        where: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The memories most relevant to ``query``, best first, from every namespace (or
        ``namespace`` and beneath it, or keys at or beneath ``key_prefix``). ``where``
        tests record fields and metadata (§5.2 equality, and the ``a2m.filters``
        operators: run by the server where it declares them, else here on one recall's
        worth of candidates). An empty query returns the most recent. Each result's
        ``metadata["score"]`` is its score (as in AutoGen's ChromaDB and Redis memories),
        and ``metadata["a2m"]`` holds the score, record id and provenance. A ``k`` above
        the server's ``max_recall_limit`` returns at most that many. One
        ``memory/recall``."""
        if kwargs:
            raise TypeError(f"unexpected query argument(s): {', '.join(sorted(kwargs))}")
        plan = await self._plan(k, score_threshold, namespace, key_prefix, where)
        records, _ = await self._recall(query_text(query), plan, None, cancellation_token)
        return MemoryQueryResult(results=[record_content(r) for r in records])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recall on the latest user message (the newest memories when there is none) and
        add one ``SystemMessage`` with what was found, rendered by the server where it
        declares ``prompt`` (else numbered, best first); nothing is added when nothing is
        found. Only memories scoring at least ``score_threshold`` reach the model (unset:
        above 0, so a memory that matched nothing never does). One ``memory/recall``; where
        the server declares observation transfer grants, one ``memory/observations/recall``
        more adds up to ``k`` observations granted from other projects, listed apart and
        marked with their project (``metadata["a2m"]["transferred"]``)."""
        messages = await model_context.get_messages()
        text = _latest_user_text(messages)
        plan = await self._plan(None, None, None, None, None)
        layout = await self._link.layout()
        prompt = None
        if self._config.use_server_prompt and "prompt" in layout.capabilities:
            prompt = PromptOptions(style="facts", budget=self._config.prompt_budget)
        records, rendered = await self._recall(text, plan, prompt, None)
        relevant = [r for r in records if not _below(r, self._config.score_threshold)]
        if len(relevant) < len(records):
            records, rendered = relevant, None  # the server's rendering held what went
        client = await self._link.client()
        granted = await drive_async(
            transferred_observations(
                client.description,
                text,
                k=self._config.k,
                min_score=self._config.score_threshold,
            ),
            client,
        )
        granted = [o for o in granted if o.score is None or o.score > 0.0]
        if not records and not granted:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        contents = [record_content(r) for r in records]
        body = rendered or "\n".join(
            continued(f"{i}. {_plain(c)}", "   ") for i, c in enumerate(contents, 1)
        )
        if granted:
            body = (body + "\n\n" if body else "") + transferred_lines(granted)
        await model_context.add_message(SystemMessage(content=MEMORY_HEADER + body + "\n"))
        contents += [observation_content(o) for o in granted]
        return UpdateContextResult(memories=MemoryQueryResult(results=contents))

    # --- lifecycle -----------------------------------------------------------------------

    async def clear(self) -> None:
        """Delete this memory's records (its namespace only; the rest of the store stays).
        One ``memory/forget``, then ``memory/timeline`` pages for records only their key
        places here (none without keys)."""
        layout = await self._link.layout()
        client = await self._link.client()
        if layout.keys:
            await AsyncA2MAdapter(client, self._config.namespace).clear()
        else:  # records say their namespace in metadata; one forget selects them all
            await client.forget(where={"namespace": self._config.namespace})

    async def close(self) -> None:
        """Close the client this memory opened; a client passed in stays open."""
        await self._link.aclose()

    def _to_config(self) -> A2MMemoryConfig:
        if not self._link.describable:
            raise ValueError(
                "this A2MMemory uses a client passed in, and nothing says where that client "
                "points: pass url= (or binding='stdio', command=[...]) as well to dump it"
            )
        return self._config.model_copy()

    @classmethod
    def _from_config(cls, config: A2MMemoryConfig) -> Self:
        fields = config.model_dump(exclude={"token"})
        return cls(token=config.token, **fields)


def _below(record: Record, threshold: float | None) -> bool:
    """Whether ``record`` scores under what reaches the model context."""
    if record.score is None:
        return False
    return record.score < threshold if threshold is not None else record.score <= 0.0


def _latest_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                return message.content
            return " ".join(part for part in message.content if isinstance(part, str))
    return ""


def _plain(content: MemoryContent) -> str:
    return content.content if isinstance(content.content, str) else query_text(content)


async def _take_back(client: AsyncA2MClient, ids: list[str]) -> None:
    """Remove the records ``ids`` of a write that did not complete (one ``memory/forget``,
    shielded so a second cancel cannot cut it short); a failure is logged."""
    if not ids:
        return
    try:
        await asyncio.shield(client.forget(ids=ids))
    except A2MError:
        log.exception("could not take back %d records of a failed write", len(ids))

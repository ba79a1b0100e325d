"""The seam between what the store and the saver decide and the I/O that carries it out.

Each operation is written once, as a generator that yields :class:`Call` (a method of the
A2M client), :class:`Embed` (texts for the configured embedder) or :data:`DESCRIBE`, and is
sent back the result. :func:`drive` runs one over a synchronous client and :func:`adrive`
over an :class:`~a2m.AsyncA2MClient`, so the sync and async surfaces cannot drift apart."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from langchain_core.embeddings import Embeddings

from a2m import (
    A2MClient,
    A2MError,
    AsyncA2MClient,
    CapabilityNotSupported,
    DescribeResult,
    IncompleteListing,
    Record,
)
from a2m.adapter_support import Flow, remember_whole

__all__ = [
    "DESCRIBE",
    "Call",
    "Embed",
    "Layout",
    "Plan",
    "adrive",
    "drive",
    "of_flow",
    "remember_all",
    "scan",
]

log = logging.getLogger("a2m_langchain.langgraph")

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One A2M call: the client method's name and its keyword arguments."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Embed:
    """Texts to embed with the store's embedder: as documents, or as one search query."""

    texts: list[str]
    query: bool = False


class _Describe:
    """Ask for the server's description (cached by the client after the first time)."""


DESCRIBE: Final = _Describe()

Effect = Call | Embed | _Describe
Plan = Generator[Effect, Any, T]


@dataclass(frozen=True)
class Layout:
    """What a plan needs to know of the server, read once from ``memory/describe``."""

    capabilities: frozenset[str]
    tier_for_kind: dict[str, str]
    max_recall_limit: int
    max_records_per_call: int
    max_content_length: int
    cursor: bool = False
    """Whether ``memory/timeline`` pages by keyset cursor (describe ``timeline.cursor``)."""
    operators: frozenset[str] = frozenset()
    """The ``where`` operators the server runs (describe ``where.operators``)."""
    ranks: frozenset[str] = frozenset()
    """The orders ``memory/recall`` takes as ``rank`` (describe ``recall.rank``)."""
    metric: str | None = None
    """How the server compares vectors (describe ``embeddings.metric``)."""
    recall_declared: bool = True
    """Whether the server declares ``max_recall_limit``; one that does not returns a whole
    timeline asked for with no ``limit`` (§4.4)."""

    @property
    def keys_per_call(self) -> int:
        """How many keys (or ids) one ``where`` names: at most ``max_recall_limit``, and at
        most 500, since a server may compile each into an SQL alternative and SQLite
        refuses an expression a thousand deep."""
        return min(self.max_recall_limit, 500)

    @classmethod
    def of(cls, description: DescribeResult) -> Layout:
        tiers: dict[str, str] = {}
        for tier in description.tiers or []:
            if tier.kind is not None:
                tiers.setdefault(tier.kind, tier.name)
        limits = description.limits
        capabilities = frozenset(description.capabilities)
        if "keys" not in capabilities:
            raise CapabilityNotSupported(
                "LangGraph items and checkpoints are addressed by key, and this server does "
                "not declare the 'keys' capability; use a server that does",
                data={"capability": "keys"},
            )
        return cls(
            cursor=_declared(description, "timeline", "cursor") is True,
            operators=frozenset(_declared(description, "where", "operators") or ()),
            ranks=frozenset(_declared(description, "recall", "rank") or ()),
            metric=_declared(description, "embeddings", "metric"),
            capabilities=capabilities,
            tier_for_kind=tiers if "tiers" in capabilities else {},
            max_recall_limit=(limits.max_recall_limit if limits else None) or 1000,
            recall_declared=bool(limits and limits.max_recall_limit),
            max_records_per_call=(limits.max_records_per_call if limits else None) or 1000,
            max_content_length=(limits.max_content_length if limits else None) or 100_000,
        )


def _declared(description: DescribeResult, section: str, name: str) -> Any:
    """An extension field of describe (a typed field on newer clients, an unknown one on
    older ones, which keep it in ``model_extra``)."""
    value = getattr(description, section, None)
    if value is None:
        value = (description.model_extra or {}).get(section)
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


_POSITIONAL = {"remember": "records", "forget": "ids", "fetch": "key", "recall": "query"}
"""The keyword of each client method's first positional parameter, for :func:`of_flow`."""


def of_flow(flow: Flow[T]) -> Plan[T]:
    """A client flow (:mod:`a2m.adapter_support`: ``remember_whole`` …) as a plan: each
    step becomes a :class:`Call`, and a refused call is raised inside the flow, as a
    plan's is."""
    result: Any = None
    failure: A2MError | None = None
    while True:
        try:
            step = flow.send(result) if failure is None else flow.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        params = dict(step.kwargs)
        if step.args:
            params[_POSITIONAL[step.method]] = step.args[0]
        result, failure = None, None
        try:
            result = yield Call(step.method, params)
        except A2MError as refused:
            failure = refused


def remember_all(
    records: list[dict[str, Any]], layout: Layout, *, fresh: bool = False
) -> Plan[list[str]]:
    """``records`` written in one ``memory/remember`` per ``max_records_per_call``, all or
    nothing (:func:`a2m.adapter_support.remember_whole`: where several calls are needed,
    what their ids and keys hold is read first, vectors too, and a refused later call has
    the earlier ones undone, put back or removed); the ids the server gave."""
    flow = remember_whole(
        records,
        per_call=layout.max_records_per_call,
        per_read=layout.keys_per_call,
        capabilities=layout.capabilities,
        fresh=fresh,
    )
    return (yield from of_flow(flow))


def drive(plan: Plan[T], client: A2MClient, embeddings: Embeddings | None) -> T:
    """Run ``plan`` to its end over a synchronous client. A call that fails with an
    :class:`~a2m.A2MError` is raised inside the plan, which may fall back to calls the
    server can carry (:class:`~a2m.CapabilityNotSupported`) or take back what it wrote."""
    try:
        effect = next(plan)
        while True:
            try:
                if isinstance(effect, Call):
                    result: Any = getattr(client, effect.method)(**effect.params)
                elif isinstance(effect, Embed):
                    result = _embed(embeddings, effect)
                else:
                    result = client.description or client.describe()
            except A2MError as refused:
                effect = plan.throw(refused)
                continue
            effect = plan.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(plan: Plan[T], client: AsyncA2MClient, embeddings: Embeddings | None) -> T:
    """Run ``plan`` to its end over an asynchronous client, never blocking the loop."""
    try:
        effect = next(plan)
        while True:
            try:
                if isinstance(effect, Call):
                    result: Any = await getattr(client, effect.method)(**effect.params)
                elif isinstance(effect, Embed):
                    result = await _aembed(embeddings, effect)
                else:
                    result = client.description or await client.describe()
            except A2MError as refused:
                effect = plan.throw(refused)
                continue
            effect = plan.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def scan(
    prefix: str | None,
    layout: Layout,
    *,
    where: dict[str, Any] | None = None,
    enough: Callable[[list[Record]], bool] = lambda _: False,
    page: int | None = None,
    next_page: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Plan[list[Record]]:
    """Records at or beneath A2M key prefix ``prefix`` (``None``: anywhere) matching
    ``where``, oldest first, until ``enough`` says so: page by page with the server's
    keyset cursor where it has one (complete, however many; ``page`` records first, then
    ``next_page`` at a time); one timeline without a ``limit`` where the server declares no
    ``max_recall_limit`` (§4.4: all of them); else one timeline, which reaches back as far
    as ``max_recall_limit`` newest records, with an :class:`~a2m.IncompleteListing`
    warning when that cap is reached. ``extra`` is passed on each call (``embeddings``)."""
    params: dict[str, Any] = {"limit": layout.max_recall_limit, **(extra or {})}
    if prefix is not None:
        params["key_prefix"] = prefix
    if where:
        params["where"] = where
    if not layout.cursor:
        if not layout.recall_declared:
            del params["limit"]
            return list((yield Call("timeline", params)).records)
        result = yield Call("timeline", params)
        if len(result.records) >= layout.max_recall_limit:
            message = (
                f"{prefix or where!r} may hold more than the server's max_recall_limit "
                f"({layout.max_recall_limit}) records, and the server has no timeline "
                f"cursor: this listing sees the newest {layout.max_recall_limit}"
            )
            log.warning("%s", message)
            warnings.warn(message, IncompleteListing, stacklevel=2)
        return list(result.records)
    records: list[Record] = []
    cursor = ""
    size = page or layout.max_recall_limit
    while True:
        result = yield Call("timeline", {**params, "limit": size, "cursor": cursor})
        records += result.records
        following = getattr(result, "next_cursor", None)
        if not following or following == cursor or enough(records):
            return records
        cursor = following
        size = next_page or size


def _embed(embeddings: Embeddings | None, effect: Embed) -> list[list[float]]:
    if embeddings is None:
        raise RuntimeError("no embedder is configured")
    if effect.query:
        return [embeddings.embed_query(text) for text in effect.texts]
    return embeddings.embed_documents(effect.texts)


async def _aembed(embeddings: Embeddings | None, effect: Embed) -> list[list[float]]:
    if embeddings is None:
        raise RuntimeError("no embedder is configured")
    if effect.query:
        return [await embeddings.aembed_query(text) for text in effect.texts]
    return await embeddings.aembed_documents(effect.texts)

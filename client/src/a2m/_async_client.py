"""The async client: the same methods as :class:`~a2m.A2MClient`, awaited. Nothing blocks
the event loop, and one client is safe to share between tasks. It runs on asyncio, and
under trio (through anyio) over HTTP, REST and in process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from os import PathLike
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from typing_extensions import Self

from a2m_types import (
    PROTOCOL_VERSION,
    ConsolidateResult,
    DescribeResult,
    EventsResult,
    FetchResult,
    ForgetResult,
    PromoteResult,
    PromptOptions,
    RecallResult,
    ReinforceResult,
    RememberResult,
    SessionCloseResult,
    SessionListResult,
    SummarizeResult,
    TimelineResult,
    UnsubscribeResult,
    WireModel,
)

from . import _core as core
from ._base_client import BaseClient, ClientState, check_push
from ._config import DEFAULT_MAX_RETRIES, resolve_token, resolve_url
from ._events import AsyncSubscription, AsyncWatcher, EventCallback
from ._loops import PerLoop
from ._types import NOT_GIVEN, NotGiven, Records
from .errors import A2MError
from .transports import (
    AsyncHTTPTransport,
    AsyncInProcessTransport,
    AsyncRESTTransport,
    AsyncStdioTransport,
    AsyncTransport,
)
from .transports._base import require_asyncio
from .transports._http1 import MAX_CONNECTIONS
from .transports.in_process import ConnectableServer

if TYPE_CHECKING:  # only the transports import httpx at run time
    import httpx

__all__ = ["AsyncA2MClient"]

R = TypeVar("R", bound=WireModel)


class AsyncA2MClient(BaseClient[AsyncTransport, AsyncSubscription, PerLoop[anyio.Lock]]):
    """An async A2M client, the twin of :class:`~a2m.A2MClient`.

    ``AsyncA2MClient("http://127.0.0.1:8765/")`` speaks JSON-RPC over HTTP (``A2M_URL`` when no
    URL is given); :meth:`stdio` spawns a server process; :meth:`in_process` calls a server
    object in this process; :meth:`rest` speaks the REST binding. Nothing touches the
    network until the first call, which runs ``memory/describe`` once first. Every call has
    a timeout (30 s unless told otherwise) and is retried up to ``max_retries`` times where
    that cannot duplicate a write. Over HTTP at most ``max_connections`` (100) are open at
    once; a call finding them all busy waits for one within its timeout."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        timeout: float | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        transport: AsyncTransport | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        if transport is None:
            transport = AsyncHTTPTransport(
                resolve_url(url),
                token=resolve_token(token),
                headers=headers,
                http_client=http_client,
                max_connections=max_connections,
            )
        elif (
            url is not None
            or http_client is not None
            or token is not None
            or headers
            or max_connections != MAX_CONNECTIONS
        ):
            raise TypeError("pass either transport= or a URL (with its HTTP options), not both")
        # One negotiation lock per event loop: a lock belongs to the loop it was made on,
        # and the client may be awaited from several (two loops negotiating at once both
        # describe, which is harmless).
        state = ClientState[AsyncTransport, AsyncSubscription, PerLoop[anyio.Lock]](
            transport, PerLoop(anyio.Lock)
        )
        super().__init__(state, timeout=timeout, max_retries=max_retries)
        self._sleep: Callable[[float], Awaitable[object]] = anyio.sleep
        transport.set_notification_handler(self._state.on_notification)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None,
        timeout: float | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> Self:
        """A client of a server subprocess spoken to over stdin/stdout (§8.2), e.g.
        ``AsyncA2MClient.stdio(["a2m-server", "stdio", "--db", "memory.db"])``; it starts on the
        first call. ``env`` is added to the current environment. It runs on asyncio only
        (its pipes are asyncio's)."""
        transport = AsyncStdioTransport(command, env=env, cwd=cwd)
        return cls(transport=transport, timeout=timeout, max_retries=max_retries)

    @classmethod
    def in_process(
        cls,
        server: ConnectableServer,
        *,
        timeout: float | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> Self:
        """A client of a server object in this process (§8.1), such as
        ``a2m_server.server.A2MServer()``; messages still round-trip through JSON, and the
        server runs on a worker thread."""
        return cls(
            transport=AsyncInProcessTransport(server), timeout=timeout, max_retries=max_retries
        )

    @classmethod
    def rest(
        cls,
        base_url: str,
        *,
        namespace: str,
        token: str | None = None,
        timeout: float | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Self:
        """A client of a server's REST binding (``{base_url}/a2m/v1``), e.g.
        ``AsyncA2MClient.rest("http://127.0.0.1:8765/", namespace="app/wf-42")``: the same
        methods, results and errors as over JSON-RPC.

        A server offering every A2M method over REST is used as it is. Against one offering
        only the REST draft's routes, describe declares what they can carry (``core``,
        ``keys``, ``embeddings``: remember, recall by embedding or by recency, timeline,
        fetch, forget) and anything else raises ``CapabilityNotSupported`` unsent; records
        are entries in ``namespace`` (a valid namespace: ``[a-z0-9_-]`` segments) unless
        their key names another. Push is not available over REST; :meth:`watch` polls.
        ``token`` (else ``A2M_TOKEN``) is sent as a bearer token. Nothing touches the
        network until the first call."""
        transport = AsyncRESTTransport(
            base_url,
            namespace=namespace,
            token=resolve_token(token),
            headers=headers,
            http_client=http_client,
        )
        return cls(transport=transport, timeout=timeout, max_retries=max_retries)

    # --- the send loop ---------------------------------------------------------------------

    async def _send(self, call: core.Call[R], timeout: float | NotGiven | None) -> R:
        if self._state.closed:
            raise RuntimeError("this AsyncA2MClient is closed")
        seconds = self._timeout(timeout)
        attempt = 0
        while True:
            request_id = next(self._state.ids)
            request = core.build_request(call, request_id)
            try:
                response = await self._state.transport.handle_async_request(
                    request, timeout=seconds
                )
            except A2MError as error:
                if not core.should_retry(call, error, attempt, self.max_retries):
                    raise
                delay = core.retry_delay(attempt, error)
                core.log_retry(call, error, attempt, self.max_retries, delay)
                await self._sleep(delay)
                attempt += 1
                continue
            return core.parse_response(call, request_id, response)

    async def _negotiate(self, timeout: float | NotGiven | None) -> None:
        if self._state.description is not None:
            return
        async with self._state.lock.get():
            if self._state.description is None:
                call = core.prepare(core.DESCRIBE, {"protocol": PROTOCOL_VERSION})
                self._state.negotiated(core.check_version(await self._send(call, timeout)))

    async def _call(self, call: core.Call[R], timeout: float | NotGiven | None) -> R:
        await self._negotiate(timeout)
        core.gate(call, self._state.capabilities, self._state.extensions)
        return await self._send(call, timeout)

    # --- negotiation -----------------------------------------------------------------------

    async def describe(
        self,
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> DescribeResult:
        """Ask the server what it is (§4.1) and refresh the cached negotiation."""
        call = core.prepare(core.DESCRIBE, {"protocol": PROTOCOL_VERSION, "owner": owner})
        if "owner" in call.params:
            await self._negotiate(timeout)
            core.gate(call, self._state.capabilities, self._state.extensions)
        return self._state.negotiated(core.check_version(await self._send(call, timeout)))

    @property
    def capabilities(self) -> frozenset[str]:
        """The capabilities the server declares. A property cannot await, so this needs a
        call first (``await client.describe()``, or any method) and raises until then."""
        if self._state.description is None:
            raise RuntimeError(
                "capabilities are not negotiated yet: await client.describe() (or any call) first"
            )
        return self._state.capabilities

    def supports(self, capability: str) -> bool:
        """Whether the server declares ``capability``, e.g. ``client.supports("keys")``;
        like :attr:`capabilities`, it needs a call first."""
        return capability in self.capabilities

    async def filter_operators(self) -> frozenset[str]:
        """The ``where`` operators the server declares (empty: §5.2 equality only),
        negotiating first if need be."""
        await self._negotiate(NOT_GIVEN)
        return self._state.extensions.operators

    async def pages_by_cursor(self) -> bool:
        """Whether ``timeline`` pages by keyset cursor on this server."""
        await self._negotiate(NOT_GIVEN)
        return self._state.extensions.cursor

    # --- core ------------------------------------------------------------------------------

    async def remember(
        self,
        records: Records,
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        session: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> RememberResult:
        """Write records (§4.2): a string, a ``RecordInput``, a dict, or a list of them.
        Records without an id get one first, so a retry never writes twice."""
        return await self._call(core.prepare_remember(records, owner, session), timeout)

    async def recall(
        self,
        query: str | NotGiven | None = NOT_GIVEN,
        *,
        tier: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        where: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        min_score: float | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        embedding: Iterable[float] | NotGiven | None = NOT_GIVEN,
        key_prefix: str | NotGiven | None = NOT_GIVEN,
        embeddings: bool | NotGiven | None = NOT_GIVEN,
        prompt: bool | PromptOptions | Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        rank: Literal["blend", "similarity"] | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> RecallResult:
        """Records ranked by relevance to ``query`` and/or ``embedding`` (§4.3); ``prompt``
        also renders them as text (needs the ``prompt`` capability); ``rank="similarity"``
        orders by ``embedding`` alone (where describe ``recall.rank`` offers it)."""
        values = {
            "query": query,
            "tier": tier,
            "limit": limit,
            "where": where,
            "min_score": min_score,
            "owner": owner,
            "embedding": embedding,
            "key_prefix": key_prefix,
            "embeddings": embeddings,
            "prompt": prompt,
            "rank": rank,
        }
        return await self._call(core.prepare(core.RECALL, values), timeout)

    async def timeline(
        self,
        *,
        tier: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        where: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        key_prefix: str | NotGiven | None = NOT_GIVEN,
        embeddings: bool | NotGiven | None = NOT_GIVEN,
        prompt: bool | PromptOptions | Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> TimelineResult:
        """Records oldest first (§4.4); ``limit`` keeps the most recent ones. With ``cursor``
        the oldest ``limit`` records after it: :meth:`A2MClient.timeline`'s twin."""
        values = {
            "tier": tier,
            "limit": limit,
            "owner": owner,
            "where": where,
            "key_prefix": key_prefix,
            "embeddings": embeddings,
            "prompt": prompt,
            "cursor": cursor,
        }
        return await self._call(core.prepare(core.TIMELINE, values), timeout)

    async def forget(
        self,
        ids: Iterable[str] | NotGiven | None = NOT_GIVEN,
        *,
        query: str | NotGiven | None = NOT_GIVEN,
        tier: str | NotGiven | None = NOT_GIVEN,
        where: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        key_prefix: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> ForgetResult:
        """Delete records (§4.5); at least one selector is required."""
        values = {
            "ids": ids,
            "query": query,
            "tier": tier,
            "where": where,
            "owner": owner,
            "key_prefix": key_prefix,
        }
        return await self._call(core.prepare(core.FORGET, values), timeout)

    # --- tiers, salience, keys, sessions ---------------------------------------------------

    async def promote(
        self,
        ids: Iterable[str],
        tier: str,
        *,
        salience: float | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> PromoteResult:
        """Move records to ``tier`` because they earned it (§4.6)."""
        values = {"ids": ids, "tier": tier, "salience": salience, "owner": owner}
        return await self._call(core.prepare(core.PROMOTE, values), timeout)

    async def consolidate(
        self, *, timeout: float | NotGiven | None = NOT_GIVEN
    ) -> ConsolidateResult:
        """Let the store reorganise itself (§4.7); it may delete records."""
        return await self._call(core.prepare(core.CONSOLIDATE, {}), timeout)

    async def reinforce(
        self,
        ids: Iterable[str],
        *,
        amount: float | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> ReinforceResult:
        """Raise the salience of records that proved useful (§4.8)."""
        values = {"ids": ids, "amount": amount, "owner": owner}
        return await self._call(core.prepare(core.REINFORCE, values), timeout)

    async def fetch(
        self,
        key: str,
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        embeddings: bool | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> FetchResult:
        """The record at ``key`` (§4.9); ``result.record`` is ``None`` when the key is unused."""
        values = {"key": key, "owner": owner, "embeddings": embeddings}
        return await self._call(core.prepare(core.FETCH, values), timeout)

    async def sessions(
        self,
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> SessionListResult:
        """The conversations the store holds (§4.10)."""
        return await self._call(core.prepare(core.SESSION_LIST, {"owner": owner}), timeout)

    async def close_session(
        self,
        session: str,
        *,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> SessionCloseResult:
        """End a conversation and let its records settle (§4.11); closing twice is a no-op."""
        values = {"session": session, "owner": owner}
        return await self._call(core.prepare(core.SESSION_CLOSE, values), timeout)

    async def summarize(
        self,
        ids: Iterable[str] | NotGiven | None = NOT_GIVEN,
        *,
        query: str | NotGiven | None = NOT_GIVEN,
        tier: str | NotGiven | None = NOT_GIVEN,
        where: Mapping[str, Any] | NotGiven | None = NOT_GIVEN,
        key_prefix: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        into: str | NotGiven | None = NOT_GIVEN,
        key: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> SummarizeResult:
        """Distil the selected records into stored summary records (§4.15); the sources stay."""
        values = {
            "ids": ids,
            "query": query,
            "tier": tier,
            "where": where,
            "key_prefix": key_prefix,
            "limit": limit,
            "owner": owner,
            "into": into,
            "key": key,
        }
        return await self._call(core.prepare(core.SUMMARIZE, values), timeout)

    # --- events ----------------------------------------------------------------------------

    async def events(
        self,
        cursor: str | NotGiven | None = NOT_GIVEN,
        *,
        limit: int | NotGiven | None = NOT_GIVEN,
        kinds: Iterable[str] | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> EventsResult:
        """One poll of the event log (§4.12); no cursor means "now" (no events, the head)."""
        values = {"cursor": cursor, "limit": limit, "kinds": kinds, "owner": owner}
        return await self._call(core.prepare(core.EVENTS, values), timeout)

    def watch(
        self,
        *,
        cursor: str | None = None,
        kinds: Iterable[str] | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven | None = NOT_GIVEN,
        poll_interval: float = 1.0,
        on_reset: Callable[[], object] | None = None,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> AsyncWatcher:
        """Follow the event log by polling, from ``cursor`` or from now; works on every
        transport: ``async for event in client.watch()``. A lost cursor calls ``on_reset``
        (which may be a coroutine function; see :class:`~a2m.Watcher`)."""
        if isinstance(kinds, Iterable) and not isinstance(kinds, str):
            kinds = list(kinds)  # a generator would be used up by the first poll

        async def poll(position: str | None) -> EventsResult:
            at = NOT_GIVEN if position is None else position
            return await self.events(at, limit=limit, kinds=kinds, owner=owner, timeout=timeout)

        return AsyncWatcher(
            poll, self._sleep, cursor=cursor, poll_interval=poll_interval, on_reset=on_reset
        )

    async def subscribe(
        self,
        callback: EventCallback | None = None,
        *,
        kinds: Iterable[str] | NotGiven | None = NOT_GIVEN,
        owner: str | NotGiven | None = NOT_GIVEN,
        timeout: float | NotGiven | None = NOT_GIVEN,
    ) -> AsyncSubscription:
        """Have events pushed as they happen (§4.13), to ``callback`` (a function or a
        coroutine function, run on this event loop) or to the returned subscription's async
        iterator. Only stdio and in-process carry push; over HTTP this raises
        ``CapabilityNotSupported`` — use :meth:`watch`, which also serves another async
        library than asyncio, where push is refused. A new subscription replaces the old."""
        call = core.prepare(core.SUBSCRIBE, {"kinds": kinds, "owner": owner})
        await self._negotiate(timeout)
        core.gate(call, self._state.capabilities, self._state.extensions)
        check_push(self._state, self._state.transport.supports_push)
        require_asyncio("push delivery to an AsyncA2MClient", method="memory/events/subscribe")
        loop = asyncio.get_running_loop()
        subscription = AsyncSubscription(loop, self._close_subscription, callback)
        # Registered before the request leaves, so no event pushed meanwhile is lost.
        self._state.replace_subscription(subscription)
        try:
            await self._send(call, timeout)
        except BaseException:
            self._state.replace_subscription(None, only=subscription)
            raise
        return subscription

    async def unsubscribe(
        self, *, timeout: float | NotGiven | None = NOT_GIVEN
    ) -> UnsubscribeResult:
        """Stop push on this connection (§4.14) and end the live subscription's iteration."""
        result = await self._call(core.prepare(core.UNSUBSCRIBE, {}), timeout)
        self._state.replace_subscription(None)
        return result

    async def _close_subscription(self, subscription: AsyncSubscription) -> None:
        if self._state.subscription is subscription and not self._state.closed:
            await self.unsubscribe()

    # --- lifecycle -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """End any subscription and release the transport (an injected httpx client stays
        open). Copies made by :meth:`with_options` share it and close with it."""
        if self._state.closed:
            return
        self._state.closed = True
        self._state.replace_subscription(None)
        await self._state.transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

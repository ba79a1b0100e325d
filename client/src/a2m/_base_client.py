"""What the two clients share without doing I/O: their configuration, and the state a client
and the copies :meth:`with_options` makes of it share — the transport, the negotiated
describe result, the request-id counter and the live subscription."""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar

from typing_extensions import Self

from a2m_types import DescribeResult, Event

from . import _core as core
from ._config import resolve_timeout
from ._types import NOT_GIVEN, NotGiven
from .errors import CapabilityNotSupported

__all__ = ["BaseClient", "ClientState", "check_push"]


class _Subscription(Protocol):
    def _deliver(self, event: Event) -> None: ...

    def _end(self) -> None: ...


TransportT = TypeVar("TransportT")
SubscriptionT = TypeVar("SubscriptionT", bound=_Subscription)
LockT = TypeVar("LockT")


class ClientState(Generic[TransportT, SubscriptionT, LockT]):
    """Mutable state shared by a client and its ``with_options`` copies."""

    def __init__(self, transport: TransportT, lock: LockT) -> None:
        self.transport = transport
        self.lock = lock
        """Serialises negotiation so concurrent first calls describe once."""
        self.description: DescribeResult | None = None
        self.capabilities: frozenset[str] = frozenset()
        self.extensions = core.Extensions()
        self.ids = itertools.count(1)
        self.subscription: SubscriptionT | None = None
        self._subscription_lock = threading.Lock()
        self.closed = False

    def negotiated(self, result: DescribeResult) -> DescribeResult:
        """Cache a (version-checked) describe result. ``core`` is mandatory (§2), so it
        counts as declared even if a server forgets to list it."""
        self.capabilities = frozenset(result.capabilities) | {"core"}
        self.extensions = core.Extensions.of(result)
        self.description = result
        return result

    def replace_subscription(
        self, new: SubscriptionT | None, *, only: SubscriptionT | None = None
    ) -> None:
        """Make ``new`` the live subscription (``only``: if ``only`` is still the live one),
        ending the one it replaces so its iterators stop."""
        with self._subscription_lock:
            old = self.subscription
            if only is not None and old is not only:
                return
            self.subscription = new
        if old is not None and old is not new:
            old._end()

    def on_notification(self, message: Mapping[str, Any]) -> None:
        """The transports' notification handler: a typed event to the live subscription."""
        event = core.parse_event(message)
        subscription = self.subscription
        if event is not None and subscription is not None:
            subscription._deliver(event)


def check_push(state: ClientState[Any, Any, Any], supports_push: bool) -> None:
    """Refuse ``subscribe`` where push cannot arrive: an HTTP-like transport, or a server
    that reports ``events.push: false`` on this connection (§4.13)."""
    if not supports_push:
        raise CapabilityNotSupported(
            "this transport cannot carry push notifications (HTTP has no server-to-client "
            "channel); use watch() to poll memory/events instead (nothing was sent)",
            method="memory/events/subscribe",
            data={"capability": "events", "push": False},
        )
    events = state.description.events if state.description is not None else None
    if events is not None and not events.push:
        raise CapabilityNotSupported(
            "the server does not push events on this connection (describe reports "
            "events.push = false); use watch() to poll memory/events instead (nothing was sent)",
            method="memory/events/subscribe",
            data={"capability": "events", "push": False},
        )


class BaseClient(Generic[TransportT, SubscriptionT, LockT]):
    """Configuration both clients share: the timeout, the retry budget, and the state."""

    def __init__(
        self,
        state: ClientState[TransportT, SubscriptionT, LockT],
        *,
        timeout: float | NotGiven | None,
        max_retries: int,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self._state = state
        self.timeout = resolve_timeout(timeout)
        """Seconds each call may take; ``None`` waits for ever."""
        self.max_retries = max_retries
        """Retries after the first attempt, where a retry is safe."""

    def with_options(
        self, *, timeout: float | NotGiven | None = NOT_GIVEN, max_retries: int | None = None
    ) -> Self:
        """A copy with other defaults, sharing this client's connection and negotiation:
        ``client.with_options(timeout=5).recall("…")``."""
        clone = copy.copy(self)
        if not isinstance(timeout, NotGiven):
            clone.timeout = resolve_timeout(timeout)
        if max_retries is not None:
            if max_retries < 0:
                raise ValueError("max_retries must be 0 or more")
            clone.max_retries = max_retries
        return clone

    @property
    def description(self) -> DescribeResult | None:
        """The cached describe result; ``None`` before the first call."""
        return self._state.description

    def _timeout(self, override: float | NotGiven | None) -> float | None:
        """The per-call ``timeout`` when given, else the client's."""
        return self.timeout if isinstance(override, NotGiven) else resolve_timeout(override)

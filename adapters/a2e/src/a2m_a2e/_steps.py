"""Host flows written once for both clients: a flow is a generator that yields the A2M
client call it needs and receives its result, so :func:`drive` runs it on an
:class:`~a2m.A2MClient` and :func:`drive_async` on an :class:`~a2m.AsyncA2MClient`. A call
that raises is thrown back into the flow."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from a2m import A2MClient, AsyncA2MClient

__all__ = ["Flow", "Step", "call", "drive", "drive_async"]

T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """One client call: ``client.<method>(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Flow = Generator[Step, Any, T]


def call(method: str, *args: Any, **kwargs: Any) -> Step:
    """The step calling ``client.<method>``."""
    return Step(method, args, kwargs)


def drive(flow: Flow[T], client: A2MClient) -> T:
    """Run ``flow`` against a synchronous client."""
    result: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = flow.send(result) if failure is None else flow.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, failure = None, None
        try:
            result = getattr(client, step.method)(*step.args, **step.kwargs)
        except Exception as exc:
            failure = exc


async def drive_async(flow: Flow[T], client: AsyncA2MClient) -> T:
    """Run ``flow`` against an async client: every call is awaited."""
    result: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = flow.send(result) if failure is None else flow.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, failure = None, None
        try:
            result = await getattr(client, step.method)(*step.args, **step.kwargs)
        except Exception as exc:
            failure = exc

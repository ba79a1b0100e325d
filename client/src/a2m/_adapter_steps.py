"""Adapter flows written once for both clients: a flow is a generator that yields the client
call it needs (:class:`Step`) and receives its result, so :func:`drive` runs it on an
:class:`~a2m.A2MClient` and :func:`drive_async` on an :class:`~a2m.AsyncA2MClient`. A call
that raises is thrown back into the flow, which may fall back (a binding that cannot
filter by key) or let it propagate."""

from __future__ import annotations

import inspect
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Flow", "Step", "call", "drive", "drive_async"]

T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """One client call: ``client.<method>(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Flow = Generator[Step, Any, T]
"""A flow: yields steps, receives their results, returns its answer."""


def call(method: str, *args: Any, **kwargs: Any) -> Step:
    """The step calling ``client.<method>``."""
    return Step(method, args, kwargs)


def drive(flow: Flow[T], client: Any) -> T:
    """Run ``flow`` against a synchronous client."""
    result: Any = None
    failure: BaseException | None = None
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


async def drive_async(flow: Flow[T], client: Any) -> T:
    """Run ``flow`` against an async client: every call is awaited."""
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = flow.send(result) if failure is None else flow.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, failure = None, None
        try:
            pending = getattr(client, step.method)(*step.args, **step.kwargs)
            result = await pending if inspect.isawaitable(pending) else pending
        except Exception as exc:
            failure = exc

"""Adapter flows written once for both clients: a flow is a generator that yields the client
call it needs (:class:`Step`) and receives its result, so :func:`drive` runs it on an
:class:`~a2m.A2MClient` and :func:`drive_async` on an :class:`~a2m.AsyncA2MClient`. A call
that raises is thrown back into the flow, which may fall back (a binding that cannot
filter by key) or let it propagate."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import sniffio

__all__ = ["Flow", "Step", "call", "drive", "drive_async", "settled"]

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


async def drive_async(flow: Flow[T], client: Any, *, settle: bool = False) -> T:
    """Run ``flow`` against an async client: every call is awaited. With ``settle`` (a
    write of several calls), the flow runs to its end even when the caller is cancelled
    meanwhile, which is then raised (:func:`settled`)."""
    if settle:
        return await settled(_drive_async(flow, client))
    return await _drive_async(flow, client)


async def settled(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if the caller is cancelled meanwhile, then raise the
    cancellation: a write of several calls stopped between two would be half-written,
    and the frameworks' own backends finish a write they began (OpenAI Agents'
    ``SQLiteSession``, for one). Its outcome, when the caller was not cancelled."""
    if sniffio.current_async_library() != "asyncio":
        with anyio.CancelScope(shield=True):
            outcome = await work
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancel scope's, held till now
        return outcome
    task = asyncio.ensure_future(work)
    cancellation: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:  # the caller's: the write goes on
            cancellation = cancellation or exc
    if cancellation is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller sees
        raise cancellation
    return task.result()


async def _drive_async(flow: Flow[T], client: Any) -> T:
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

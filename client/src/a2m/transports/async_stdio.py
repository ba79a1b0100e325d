"""The stdio binding (§8.2) on asyncio: the server subprocess is driven by asyncio streams,
so nothing blocks the event loop. Same framing, crash reporting and shutdown as the
synchronous :class:`~a2m.transports.stdio.StdioTransport`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from a2m._loops import close_at_end
from a2m.errors import (
    A2MConnectionError,
    A2MError,
    A2MEventLoopError,
    A2MTimeoutError,
    A2MTransportError,
)

from ._base import AsyncTransport, encode_message, require_asyncio
from .stdio import (
    CLOSE_GRACE,
    StderrTail,
    child_env,
    crash_error,
    is_notification,
    is_response,
    parse_line,
    unattributed_error,
)

__all__ = ["AsyncStdioTransport"]

log = logging.getLogger("a2m")

_LINE_LIMIT = 64 * 1024 * 1024
"""Longest line read from the server: one JSON-RPC message, embeddings included."""


class AsyncStdioTransport(AsyncTransport):
    """Asynchronous JSON-RPC over a subprocess's stdin and stdout; task-safe.

    The process starts on the first call. ``env`` is added to this process's environment
    for the child. Closing stdin tells the server to stop; a laggard is terminated, then
    killed."""

    supports_push = True

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(command, str) or not command:
            raise ValueError(
                "command must be a non-empty list of arguments, e.g. ['a2m-server', 'stdio']"
            )
        self.command = list(command)
        self._env = child_env(env)
        self._cwd = cwd
        self._process: asyncio.subprocess.Process | None = None
        self._start_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._stdout_task: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._failure: A2MTransportError | None = None
        self._closed = False
        self._tail = StderrTail()
        # The loop the process's pipes and reader tasks belong to, claimed by the first
        # call; a call from another loop is carried over to it while it runs.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()
        self._closer: AsyncGenerator[None, None] | None = None

    def _check(self, method: str | None) -> None:
        if isinstance(self._failure, A2MEventLoopError):
            raise A2MEventLoopError(self._failure.message, method=method)
        if self._closed:
            raise A2MConnectionError(
                "this stdio transport is closed", method=method, retryable=False
            )
        if self._failure is not None:
            raise A2MConnectionError(
                self._failure.message, method=method, retryable=False, data=self._failure.data
            )

    async def _start(self, method: str | None) -> asyncio.subprocess.Process:
        if self._process is None:  # its pipes and reader tasks are asyncio's
            require_asyncio("AsyncA2MClient.stdio", method=method)
        async with self._start_lock:
            self._check(method)
            if self._process is not None:
                return self._process
            try:
                process = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=self._env,
                    cwd=self._cwd,
                    limit=_LINE_LIMIT,
                )
            except OSError as exc:
                self._failure = A2MConnectionError(
                    f"could not start the stdio server {self.command[0]!r}: {exc}",
                    retryable=False,
                )
                raise A2MConnectionError(
                    self._failure.message, method=method, retryable=False
                ) from exc
            self._process = process
            self._stderr_task = asyncio.create_task(self._read_stderr(process))
            self._stdout_task = asyncio.create_task(self._read_stdout(process))
            # Closed on this loop as it ends (asyncio.run finalises the generator), since
            # its pipes cannot be closed once it has: nothing is left open, and calls from
            # other loops are refused from then on.
            closer = close_at_end(self._close_as_loop_ends)
            await closer.asend(None)
            self._closer = closer
            return process

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        while True:
            try:
                line = await process.stderr.readline()
            except ValueError:  # a line longer than the limit: keep going, keep the tail
                continue
            if not line:
                return
            self._tail.add(line)

    async def _read_stdout(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        try:
            while True:
                line = await process.stdout.readline()
                if not line:
                    break
                message = parse_line(line)
                if message is None:
                    continue
                if is_response(message):
                    future = self._pending.pop(message.get("id"), None)
                    if future is None and unattributed_error(message) and len(self._pending) == 1:
                        # The server could not read the request's id: with one request
                        # waiting, the error is that one's.
                        future = self._pending.pop(next(iter(self._pending)))
                    if future is not None and not future.done():
                        future.set_result(message)
                elif is_notification(message):
                    try:
                        self._notify(message)
                    except Exception:
                        log.exception("the notification handler failed")
        except ValueError:
            log.error("the stdio server wrote a line longer than %d bytes", _LINE_LIMIT)
        except asyncio.CancelledError:
            # Its loop is ending (asyncio.run cancels every task first): fail what waits,
            # at once; the closer registered at start then stops the process.
            self._fail_pending(
                A2MEventLoopError(
                    "the event loop running this stdio server ended, so the call may or may "
                    "not have been carried out"
                )
            )
            raise
        await self._on_exit(process)

    async def _close_as_loop_ends(self) -> None:
        if not self._closed:
            self._failure = self._failure or A2MEventLoopError(
                "this stdio server was stopped as the event loop it was started on ended "
                "(its pipes belong to that loop); nothing was sent. Make one "
                "AsyncA2MClient.stdio per loop, or use A2MClient.stdio from any thread"
            )
        await self.aclose()

    def _fail_pending(self, error: A2MTransportError) -> None:
        self._failure = self._failure or error
        pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            if not future.done():
                future.set_exception(error)

    async def _on_exit(self, process: asyncio.subprocess.Process) -> None:
        returncode: int | None
        try:
            returncode = await asyncio.wait_for(process.wait(), CLOSE_GRACE)
        except asyncio.TimeoutError:
            returncode = None
        if self._stderr_task is not None:
            await asyncio.wait([self._stderr_task], timeout=1.0)
        error = crash_error(self.command, returncode, self._tail.text())
        if self._closed:
            error = A2MConnectionError("this stdio transport was closed", retryable=False)
        self._fail_pending(error)

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Write ``request`` as one line and await the response with the same id. Called
        from an event loop other than the one the server was started on, the call is
        carried over to that loop while it runs; once it has ended, refused typed."""
        method = request.get("method")
        line = encode_message(request) + b"\n"
        require_asyncio("AsyncA2MClient.stdio", method=method)
        loop = asyncio.get_running_loop()
        with self._loop_lock:
            if self._loop is None:
                self._loop = loop
            home = self._loop
        if home is not loop:
            return await self._on_home_loop(home, request, timeout)
        process = await self._start(method)
        self._check(method)
        request_id = request.get("id")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future

        async def exchange() -> dict[str, Any]:
            # Writing is within the timeout too: a server that stops reading fills the
            # pipe, and drain() would wait for ever.
            try:
                async with self._write_lock:
                    assert process.stdin is not None
                    process.stdin.write(line)
                    await process.stdin.drain()
            except (OSError, RuntimeError):
                pass  # the process is gone; the stdout reader says why once stdout ends
            return await future

        try:
            return await asyncio.wait_for(exchange(), timeout)
        except asyncio.TimeoutError:
            raise A2MTimeoutError(
                f"the stdio server did not answer within {timeout}s", method=method
            ) from None
        except A2MEventLoopError as exc:
            raise A2MEventLoopError(exc.message, method=method) from None
        except A2MConnectionError as exc:
            raise A2MConnectionError(
                exc.message, method=method, retryable=False, data=exc.data
            ) from None
        finally:
            self._pending.pop(request_id, None)

    async def _on_home_loop(
        self, home: asyncio.AbstractEventLoop, request: dict[str, Any], timeout: float | None
    ) -> dict[str, Any]:
        method = request.get("method")
        if home.is_closed() or not home.is_running():
            raise A2MEventLoopError(
                "this stdio server was started on an event loop that is no longer running, "
                "and its pipes belong to that loop (nothing was sent); make one "
                "AsyncA2MClient.stdio per loop, or use A2MClient.stdio from any thread",
                method=method,
            )
        try:
            carried = asyncio.run_coroutine_threadsafe(self._outcome(request, timeout), home)
        except RuntimeError as exc:  # it closed just now
            raise A2MEventLoopError(
                f"the event loop running this stdio server ended ({exc}); nothing was sent",
                method=method,
            ) from None
        try:
            response, error = await asyncio.wrap_future(carried)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            cancelling = getattr(task, "cancelling", None)  # Python 3.11+
            if cancelling is None or cancelling():
                raise  # this call itself was cancelled (or, before 3.11, cannot tell)
            # The server's loop cancelled the call as it ended.
            raise A2MEventLoopError(
                "the event loop running this stdio server ended during the call, which may "
                "or may not have been carried out",
                method=method,
            ) from None
        if error is not None:
            raise error
        assert response is not None
        return response

    async def _outcome(
        self, request: dict[str, Any], timeout: float | None
    ) -> tuple[dict[str, Any] | None, A2MError | None]:
        # Run on the server's loop for a call from another: its error goes back as a value,
        # so a loop ending under it does not also report it as unhandled.
        try:
            return await self.handle_async_request(request, timeout=timeout), None
        except A2MError as exc:
            return None, exc

    async def aclose(self) -> None:
        """Close stdin and wait for the server to exit; terminate, then kill, a laggard.
        From a loop other than the server's, the closing is carried over to it."""
        home = self._loop
        if home is not None and home is not asyncio.get_running_loop():
            if home.is_running():
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.aclose(), home))
                return
            if self._closed:
                return
            self._closed = True
            # Its pipes cannot be closed without their loop; stop the process itself.
            if self._process is not None and self._process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
            return
        if self._closed:
            return
        self._closed = True
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), CLOSE_GRACE)
        except asyncio.TimeoutError:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), CLOSE_GRACE)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()
        tasks = [task for task in (self._stdout_task, self._stderr_task) if task is not None]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=CLOSE_GRACE)
            for task in late:
                task.cancel()

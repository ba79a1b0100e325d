"""The stdio binding (§8.2) on asyncio: the server subprocess is driven by asyncio streams,
so nothing blocks the event loop. Same framing, crash reporting and shutdown as the
synchronous :class:`~a2m.transports.stdio.StdioTransport`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from a2m.errors import A2MConnectionError, A2MTimeoutError

from ._base import AsyncTransport, encode_message, require_asyncio
from .stdio import (
    CLOSE_GRACE,
    StderrTail,
    child_env,
    crash_error,
    is_notification,
    is_response,
    parse_line,
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
        self._failure: A2MConnectionError | None = None
        self._closed = False
        self._tail = StderrTail()

    def _check(self, method: str | None) -> None:
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
                    if future is not None and not future.done():
                        future.set_result(message)
                elif is_notification(message):
                    try:
                        self._notify(message)
                    except Exception:
                        log.exception("the notification handler failed")
        except ValueError:
            log.error("the stdio server wrote a line longer than %d bytes", _LINE_LIMIT)
        finally:
            await self._on_exit(process)

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
        self._failure = self._failure or error
        pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            if not future.done():
                future.set_exception(error)

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Write ``request`` as one line and await the response with the same id."""
        method = request.get("method")
        line = encode_message(request) + b"\n"
        process = await self._start(method)
        self._check(method)
        request_id = request.get("id")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            try:
                async with self._write_lock:
                    assert process.stdin is not None
                    process.stdin.write(line)
                    await process.stdin.drain()
            except (OSError, RuntimeError):
                pass  # the process is gone; the stdout reader says why once stdout ends
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise A2MTimeoutError(
                f"the stdio server did not answer within {timeout}s", method=method
            ) from None
        except A2MConnectionError as exc:
            raise A2MConnectionError(
                exc.message, method=method, retryable=False, data=exc.data
            ) from None
        finally:
            self._pending.pop(request_id, None)

    async def aclose(self) -> None:
        """Close stdin and wait for the server to exit; terminate, then kill, a laggard."""
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

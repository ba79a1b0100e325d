"""The stdio binding (§8.2), synchronous: a server subprocess spoken to one JSON line at a
time. The process starts on first use; a reader thread matches responses by id and routes
notifications, another keeps the tail of stderr so a crash can say why it happened."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import subprocess
import threading
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import IO, Any

from a2m.errors import A2MConnectionError, A2MTimeoutError

from ._base import Transport, decode_message, encode_message

__all__ = [
    "StderrTail",
    "StdioTransport",
    "child_env",
    "crash_error",
    "is_notification",
    "is_response",
    "parse_line",
]

log = logging.getLogger("a2m")

CLOSE_GRACE = 5.0
"""Seconds a server gets to exit after stdin closes, and again after SIGTERM."""


class StderrTail:
    """The last lines a process wrote to stderr, bounded in lines and line length."""

    def __init__(self, lines: int = 40, width: int = 1000) -> None:
        self._lines: collections.deque[str] = collections.deque(maxlen=lines)
        self._width = width
        self._lock = threading.Lock()

    def add(self, raw: bytes) -> None:
        """Keep one line (truncated to the width)."""
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        with self._lock:
            self._lines.append(text[: self._width])

    def text(self) -> str:
        """The kept lines, oldest first."""
        with self._lock:
            return "\n".join(self._lines)


def child_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The child's environment: ours, with ``env`` added on top."""
    return None if env is None else {**os.environ, **env}


def crash_error(command: Sequence[str], returncode: int | None, tail: str) -> A2MConnectionError:
    """The error every pending and later call gets once the server process is gone."""
    name = os.path.basename(command[0]) if command else "server"
    status = "is gone" if returncode is None else f"exited with code {returncode}"
    message = f"the stdio server process ({name}) {status}"
    message += f"; the end of its stderr:\n{tail}\n" if tail else " without writing to stderr"
    return A2MConnectionError(
        message, retryable=False, data={"returncode": returncode, "stderr": tail}
    )


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """One stdout line as a message object; ``None`` (logged) for a blank or non-JSON line,
    which a conformant server never writes but must not kill the connection."""
    if not raw.strip():
        return None
    try:
        message = decode_message(raw)
    except Exception:
        log.warning("ignoring a line from the stdio server that is not JSON: %r", raw[:200])
        return None
    return message if isinstance(message, dict) else None


def is_response(message: dict[str, Any]) -> bool:
    """A response carries ``result`` or ``error``; anything else with a method and no id is a
    notification (§8)."""
    return "result" in message or "error" in message


def is_notification(message: dict[str, Any]) -> bool:
    """A message with a method and no id."""
    return "method" in message and "id" not in message


def unattributed_error(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is an error response with ``"id": null`` (JSON-RPC: the server
    could not tell which request it answers)."""
    return message.get("id") is None and "error" in message


class _Pending:
    __slots__ = ("abandoned", "done", "error", "response")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.response: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.abandoned = False
        """Its caller gave up (timed out): a line not written yet is not sent."""


class StdioTransport(Transport):
    """Synchronous JSON-RPC over a subprocess's stdin and stdout; thread-safe.

    ``env`` is added to this process's environment for the child. Closing stdin is how the
    server is told to stop (§8.2); one that lingers is terminated, then killed."""

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
        self._process: subprocess.Popen[bytes] | None = None
        self._threads: list[threading.Thread] = []
        self._pending: dict[Any, _Pending] = {}
        self._lock = threading.Lock()
        # Lines go out through one writer thread, so a server that stops reading stalls
        # that thread, never a caller past its timeout, and lines are never interleaved.
        self._outbox: queue.SimpleQueue[tuple[bytes, _Pending] | None] = queue.SimpleQueue()
        self._failure: A2MConnectionError | None = None
        self._closed = False
        self._tail = StderrTail()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def _start(self, method: str | None) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._closed:
                raise A2MConnectionError(
                    "this stdio transport is closed", method=method, retryable=False
                )
            if self._failure is not None:
                raise self._with_method(self._failure, method)
            if self._process is not None:
                return self._process
            try:
                process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=self._env,
                    cwd=self._cwd,
                )
            except OSError as exc:
                self._failure = A2MConnectionError(
                    f"could not start the stdio server {self.command[0]!r}: {exc}", retryable=False
                )
                raise self._with_method(self._failure, method) from exc
            self._process = process
            assert process.stdout is not None
            assert process.stderr is not None
            assert process.stdin is not None
            # The threads hold the transport only weakly, so one dropped without close()
            # is collected, and its finaliser stops the server.
            self._threads = [
                threading.Thread(
                    target=_read_stdout,
                    args=(weakref.ref(self), process),
                    daemon=True,
                    name=f"a2m-stdio-out-{process.pid}",
                ),
                threading.Thread(
                    target=_read_stderr,
                    args=(process.stderr, self._tail),
                    daemon=True,
                    name=f"a2m-stdio-err-{process.pid}",
                ),
                threading.Thread(
                    target=_write_stdin,
                    args=(process.stdin, self._outbox),
                    daemon=True,
                    name=f"a2m-stdio-in-{process.pid}",
                ),
            ]
            for thread in self._threads:
                thread.start()
            self._finalizer = weakref.finalize(self, _dropped, self._outbox, process, self._threads)
            # At exit the pipes close with this process, which stops the server as before.
            self._finalizer.atexit = False
            return process

    @staticmethod
    def _with_method(error: A2MConnectionError, method: str | None) -> A2MConnectionError:
        return A2MConnectionError(error.message, method=method, retryable=False, data=error.data)

    def _on_line(self, line: bytes) -> None:
        """One line of stdout: a response to the request waiting for it, or a
        notification for the handler."""
        message = parse_line(line)
        if message is None:
            return
        if is_response(message):
            with self._lock:
                pending = self._pending.pop(message.get("id"), None)
                if pending is None and unattributed_error(message) and len(self._pending) == 1:
                    # The server could not read the request's id (an over-long line, say):
                    # with one request waiting, the error is that one's.
                    pending = self._pending.pop(next(iter(self._pending)))
            if pending is None:
                log.debug("dropping a response nobody waits for (id %r)", message.get("id"))
                return
            pending.response = message
            pending.done.set()
        elif is_notification(message):
            try:
                self._notify(message)
            except Exception:
                log.exception("the notification handler failed")

    def _on_exit(self, process: subprocess.Popen[bytes]) -> None:
        try:
            returncode: int | None = process.wait(timeout=CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            returncode = None
        # The stderr reader finishes at the same EOF; wait briefly so the tail is complete.
        for thread in self._threads[1:]:
            if thread is not threading.current_thread():
                thread.join(timeout=1.0)
        error = crash_error(self.command, returncode, self._tail.text())
        with self._lock:
            if self._closed:
                error = A2MConnectionError("this stdio transport was closed", retryable=False)
            self._failure = self._failure or error
            pending, self._pending = list(self._pending.values()), {}
        for waiter in pending:
            waiter.error = error
            waiter.done.set()

    # --- calls -----------------------------------------------------------------------------

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        """Write ``request`` as one line and wait for the response with the same id."""
        method = request.get("method")
        line = encode_message(request) + b"\n"
        self._start(method)  # its writer thread sends the line
        request_id = request.get("id")
        waiter = _Pending()
        with self._lock:
            if self._failure is not None:
                raise self._with_method(self._failure, method)
            self._pending[request_id] = waiter
        self._outbox.put((line, waiter))
        if not waiter.done.wait(timeout):
            waiter.abandoned = True
            with self._lock:
                self._pending.pop(request_id, None)
            raise A2MTimeoutError(
                f"the stdio server did not answer within {timeout}s", method=method
            )
        if waiter.error is not None:
            if isinstance(waiter.error, A2MConnectionError):
                raise self._with_method(waiter.error, method)
            raise waiter.error
        assert waiter.response is not None
        return waiter.response

    def close(self) -> None:
        """Close stdin and wait for the server to exit; terminate, then kill, a laggard."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            process = self._process
        if process is None:
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        self._outbox.put(None)  # the writer closes stdin after the lines before it
        _reap(process, self._threads)


def _write_stdin(
    stdin: IO[bytes], outbox: queue.SimpleQueue[tuple[bytes, _Pending] | None]
) -> None:
    """Write each queued line whose caller still waits, in order; at the end of the queue
    (``close``), close stdin: how the server is told to stop (§8.2)."""
    while True:
        item = outbox.get()
        if item is None:
            break
        line, waiter = item
        if waiter.abandoned:
            continue
        try:
            stdin.write(line)
            stdin.flush()
        except (OSError, ValueError):
            pass  # the process is gone; the stdout reader says why once stdout ends
    with contextlib.suppress(OSError, ValueError):
        stdin.close()


def _read_stderr(stream: IO[bytes], tail: StderrTail) -> None:
    for line in iter(stream.readline, b""):
        tail.add(line)


def _read_stdout(
    transport_ref: weakref.ReferenceType[StdioTransport], process: subprocess.Popen[bytes]
) -> None:
    """Hand each stdout line to the transport while it lives (holding it only for that
    line), then tell it the process has exited."""
    assert process.stdout is not None
    for line in iter(process.stdout.readline, b""):
        transport = transport_ref()
        if transport is not None:  # once dropped, the lines are read until the exit
            transport._on_line(line)
        del transport
    transport = transport_ref()
    if transport is not None:
        transport._on_exit(process)


def _reap(process: subprocess.Popen[bytes], threads: list[threading.Thread]) -> None:
    """Wait for a server whose stdin is closing to exit (terminate, then kill, a laggard),
    let its threads finish, and close its pipes."""
    try:
        process.wait(timeout=CLOSE_GRACE)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(timeout=CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join(timeout=CLOSE_GRACE)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _dropped(
    outbox: queue.SimpleQueue[tuple[bytes, _Pending] | None],
    process: subprocess.Popen[bytes],
    threads: list[threading.Thread],
) -> None:
    """A transport collected without ``close()``: close the server's stdin, as ``close``
    would, and see it exit on a thread of its own (a finaliser must not block)."""
    outbox.put(None)
    reaper = threading.Thread(
        target=_reap, args=(process, threads), daemon=True, name="a2m-stdio-reap"
    )
    reaper.start()
    warnings.warn(
        f"an A2M stdio transport was dropped without close(); its server (pid "
        f"{process.pid}) is told to stop",
        ResourceWarning,
        stacklevel=2,
    )

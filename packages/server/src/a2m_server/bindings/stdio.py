"""The stdio binding (§8.2): JSON-RPC over a byte stream, one UTF-8 JSON message per
``\\n``-terminated line, responses and pushed notifications written to the same stream.

Nothing but JSON-RPC is ever written to ``stdout``; logs belong on stderr."""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, BinaryIO

from a2m_server._web import utf8
from a2m_server.dispatch import encode, error_response
from a2m_server.server import A2MServer
from a2m_types import ErrorCode

__all__ = ["DEFAULT_MAX_LINE_BYTES", "run_stdio"]

log = logging.getLogger("a2m_server.stdio")

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest message accepted on one line; a longer one is skipped and refused."""


def run_stdio(
    server: A2MServer,
    *,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> None:
    """Serve one peer over a pair of byte streams until end of input.

    Defaults to the process's ``stdin`` and ``stdout``. Returns when input ends, the
    output is closed by the peer, or on ``KeyboardInterrupt``; the connection (and its
    event subscription) is closed on the way out, the server is left open."""
    if max_line_bytes < 1:
        raise ValueError("max_line_bytes must be at least 1")
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = _LineWriter(stdout if stdout is not None else sys.stdout.buffer)
    connection = server.connect(transport="stdio", notify=writer.notify)
    try:
        while writer.open:
            line = reader.readline(max_line_bytes + 1)
            if not line:
                break
            if len(line) > max_line_bytes and not line.endswith(b"\n"):
                _discard_rest_of_line(reader, max_line_bytes)
                writer.write_message(
                    error_response(
                        None,
                        ErrorCode.INVALID_REQUEST,
                        f"message longer than {max_line_bytes} bytes",
                    )
                )
                continue
            if not line.strip():
                continue
            answer = connection.handle(line)
            if answer is not None:
                writer.write_line(answer)
    except KeyboardInterrupt:
        log.info("interrupted; closing the stdio connection")
    finally:
        connection.close()
        writer.close()


def _discard_rest_of_line(reader: BinaryIO, chunk: int) -> None:
    while True:
        piece = reader.readline(chunk)
        if not piece or piece.endswith(b"\n"):
            return


class _LineWriter:
    """Writes whole lines under one lock, so a notification pushed from another thread
    never lands in the middle of a response."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.open = True

    def write_line(self, text: str) -> None:
        # ``encode`` escapes newlines inside strings, so one message is one line.
        data = utf8(text) + b"\n"
        with self._lock:
            if not self.open:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                # The peer closed its end (or the stream was closed): nobody is listening.
                self.open = False
                log.info("output closed by the peer; stopping")

    def write_message(self, message: dict[str, Any]) -> None:
        self.write_line(encode(message))

    def notify(self, notification: dict[str, Any]) -> None:
        self.write_message(notification)

    def close(self) -> None:
        with self._lock:
            self.open = False

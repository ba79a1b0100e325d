"""Real A2M servers for tests: an HTTP server on an ephemeral loopback port, and the
command line that starts a stdio server in a subprocess.

Both run the bundled server exactly as users run it, so a test exercises the real bindings."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from a2m_server.server import A2MServer

__all__ = ["serve_http", "stdio_command"]

_STARTUP_TIMEOUT = 30.0
_SHUTDOWN_TIMEOUT = 30.0


@contextmanager
def serve_http(
    app_or_server: A2MServer | ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    **app_options: Any,
) -> Iterator[str]:
    """Serve an A2M server (or any ASGI app) over real HTTP for the duration of a block.

    An :class:`~a2m_server.server.A2MServer` is wrapped with
    :func:`a2m_server.bindings.http.create_app`, passing ``app_options`` through
    (``tokens=``, ``allowed_origins=``, ``max_body_bytes=``); an ASGI app is served as is.
    uvicorn runs in a daemon thread on ``host``; ``port=0`` picks a free ephemeral port.
    Yields the base URL, e.g. ``"http://127.0.0.1:54321/"``. On leaving the block the
    server is stopped and its thread joined, even when the block raised. The server
    object itself is left open: closing it is the caller's business.

    ```python
    with A2MServer() as server, serve_http(server) as url:
        httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "memory/describe"})
    ```
    """
    app = _as_app(app_or_server, app_options)
    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_config=None,  # leave the test process's logging configuration alone
        log_level="warning",
        access_log=False,
        ws="none",
        lifespan="auto",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # SystemExit on a failed startup included
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"a2m-http-{bound_port}", daemon=True)
    thread.start()
    try:
        _wait_started(server, thread, failure)
        url_host = f"[{host}]" if ":" in host else host
        yield f"http://{url_host}:{bound_port}/"
    finally:
        server.should_exit = True
        thread.join(_SHUTDOWN_TIMEOUT)
        sock.close()
        if thread.is_alive():
            # Only a wedged request handler can cause this; say so rather than hang the suite.
            raise RuntimeError(f"the HTTP server on port {bound_port} did not stop")


def stdio_command(db: str, *extra_args: str) -> list[str]:
    """The argv that starts a stdio A2M server on the database file ``db``.

    Runs the bundled server with the current interpreter (``python -m a2m_server stdio``),
    so it sees the same installed packages as the test; pass it to :mod:`subprocess` with
    ``stdin=PIPE, stdout=PIPE``. ``extra_args`` are appended, e.g. ``"--read-only"`` or
    ``"--capabilities", "core,keys"``."""
    return [sys.executable, "-m", "a2m_server", "stdio", "--db", db, *extra_args]


def _as_app(app_or_server: Any, app_options: dict[str, Any]) -> Any:
    # Imported here so stdio_command stays usable without the HTTP stack.
    from a2m_server.server import A2MServer

    if isinstance(app_or_server, A2MServer):
        from a2m_server.bindings.http import create_app

        return create_app(app_or_server, **app_options)
    if app_options:
        raise TypeError(
            f"options {sorted(app_options)} apply only when serving an A2MServer, not an app"
        )
    return app_or_server


def _bind(host: str, port: int) -> socket.socket:
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    # IPPROTO_TCP, not 0: asyncio only disables Nagle on accepted TCP sockets, and Nagle
    # plus delayed ACKs would add ~40 ms to every response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def _wait_started(
    server: uvicorn.Server, thread: threading.Thread, failure: list[BaseException]
) -> None:
    deadline = time.monotonic() + _STARTUP_TIMEOUT
    while not server.started:
        if not thread.is_alive():
            cause = failure[0] if failure else None
            raise RuntimeError("the HTTP server failed to start") from cause
        if time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP server did not start within {_STARTUP_TIMEOUT:.0f}s")
        time.sleep(0.005)

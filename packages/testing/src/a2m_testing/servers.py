"""Real A2M servers for tests: an HTTP server on an ephemeral loopback port, the command
line that starts a stdio server in a subprocess, and :class:`Servers`, which makes fresh
ones of every kind for one test and shuts them all down together.

All run the bundled server exactly as users run it, so a test exercises the real bindings."""

from __future__ import annotations

import itertools
import json
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import uvicorn

from ._config import config_toml, server_config

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from a2m_server.config import ServerConfig
    from a2m_server.server import A2MServer

__all__ = [
    "Intercepted",
    "MethodLog",
    "Servers",
    "refusal",
    "serve_http",
    "stdio_command",
]

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
    from a2m_server.bindings.http import uvicorn_http_options

    app = _as_app(app_or_server, app_options)
    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_config=None,  # leave the test process's logging configuration alone
        log_level="warning",
        access_log=False,
        ws="auto",
        lifespan="auto",
        timeout_graceful_shutdown=5,
        **uvicorn_http_options(),  # as a2m-server serve runs it
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


class Servers:
    """Fresh A2M servers for one test, all shut down by :meth:`close`.

    Each method makes a new server with its own empty store: :meth:`server` in this
    process, :meth:`http_url` behind uvicorn on a loopback port, :meth:`stdio_command`
    as the argv of a subprocess on a database file in a private temporary directory.
    Server options are a :class:`~a2m_server.config.ServerConfig` and/or the shorthands
    ``capabilities=`` and ``read_only=``. Closing stops the HTTP servers, closes the
    servers and removes the temporary directory, in that order; this is what the
    plugin's fixtures use, and it works as a context manager outside pytest too.

    ```python
    with Servers() as servers:
        client = A2MClient(servers.http_url(capabilities=["core", "keys"]))
    ```
    """

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._names = itertools.count(1)
        self._closed = False

    def server(
        self,
        config: ServerConfig | None = None,
        *,
        db: str | Path = ":memory:",
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
    ) -> A2MServer:
        """A new in-process server: in memory, or on the SQLite file ``db``."""
        from a2m_server.server import A2MServer

        self._check_open()
        resolved = server_config(config, capabilities=capabilities, read_only=read_only)
        return self._stack.enter_context(A2MServer(resolved, db=db))

    def http_url(
        self,
        server: A2MServer | None = None,
        *,
        config: ServerConfig | None = None,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
        **app_options: Any,
    ) -> str:
        """The base URL (``http://127.0.0.1:PORT/``) of ``server``, or of a new one built
        from the options, served until :meth:`close`. ``app_options`` go to
        :func:`a2m_server.bindings.http.create_app`: ``tokens=``, ``allowed_origins=``,
        ``max_body_bytes=``, ``routes=``."""
        if server is None:
            server = self.server(config, capabilities=capabilities, read_only=read_only)
        elif config is not None or capabilities is not None or read_only is not None:
            raise TypeError("pass either a server or the options to build one, not both")
        self._check_open()
        return self._stack.enter_context(serve_http(server, **app_options))

    def stdio_command(
        self,
        config: ServerConfig | None = None,
        *,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
    ) -> list[str]:
        """The argv of a stdio server on a new database file; a configuration other than
        the default is written to a TOML file beside it and passed as ``--config``. The
        database is removed by :meth:`close`, so close the clients that spawned the
        process first."""
        from a2m_server.config import ServerConfig

        resolved = server_config(config, capabilities=capabilities, read_only=read_only)
        name = f"stdio-{next(self._names)}"
        extra: list[str] = []
        if resolved != ServerConfig():
            config_file = self._path(f"{name}.toml")
            config_file.write_text(config_toml(resolved), encoding="utf-8")
            extra = ["--config", str(config_file)]
        return stdio_command(str(self._path(f"{name}.db")), *extra)

    def close(self) -> None:
        """Stop and close everything made here; safe to call twice."""
        self._closed = True
        try:
            self._stack.close()
        finally:
            # Last, after every server that may still hold a file in it.
            if self._workdir is not None:
                self._workdir.cleanup()

    def __enter__(self) -> Servers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _path(self, name: str) -> Path:
        self._check_open()
        if self._workdir is None:
            self._workdir = tempfile.TemporaryDirectory(
                prefix="a2m-test-", ignore_cleanup_errors=True
            )
        return Path(self._workdir.name) / name

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("these test servers are closed")


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


class Intercepted:
    """An in-process server whose connections pass every message through ``hook``, for a
    test injecting a fault: ``hook(request, answer)`` gets the parsed JSON-RPC message and
    a function that has the server answer it, and returns the answer text to send (the
    server's, after a delay, say) or its own (an error in the server's place). Pass it to
    ``A2MClient.in_process`` in place of the server."""

    def __init__(
        self, server: A2MServer, hook: Callable[[dict[str, Any], Callable[[], str | None]], Any]
    ) -> None:
        self.server = server
        self.hook = hook

    def connect(self, **options: Any) -> Any:
        return _InterceptedConnection(self.hook, self.server.connect(**options))


class _InterceptedConnection:
    def __init__(self, hook: Callable[..., Any], connection: Any) -> None:
        self._hook = hook
        self._connection = connection

    def handle(self, message: str) -> str | None:
        request = json.loads(message)
        return self._hook(request, lambda: self._connection.handle(message))  # type: ignore[no-any-return]

    def close(self) -> None:
        self._connection.close()


def refusal(request: Mapping[str, Any], code: int, message: str) -> str:
    """The JSON-RPC error answer to ``request`` a hook of :class:`Intercepted` sends in
    the server's place."""
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error})


class MethodLog:
    """An in-process server that writes down the JSON-RPC method and params of every
    message its connections are sent, for a test that counts an adapter's calls or checks
    what they asked: pass it to ``A2MClient.in_process`` in place of the server."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server
        self.methods: list[str] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        """Each message's method and params, in order."""
        self._lock = threading.Lock()

    def connect(self, **options: Any) -> Any:
        return _LoggedConnection(self, self.server.connect(**options))

    def count(self, method: str) -> int:
        """How many messages called ``method`` so far."""
        with self._lock:
            return self.methods.count(method)

    def _note(self, message: str) -> None:
        try:
            request = json.loads(message)
            method, params = request.get("method"), request.get("params")
        except (ValueError, AttributeError):
            method = params = None
        called = method if isinstance(method, str) else "?"
        with self._lock:
            self.methods.append(called)
            self.calls.append((called, params if isinstance(params, dict) else {}))


class _LoggedConnection:
    def __init__(self, log: MethodLog, connection: Any) -> None:
        self._log = log
        self._connection = connection

    def handle(self, message: str) -> str | None:
        self._log._note(message)
        return self._connection.handle(message)  # type: ignore[no-any-return]

    def close(self) -> None:
        self._connection.close()

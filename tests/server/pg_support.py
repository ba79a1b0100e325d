"""Real ``a2m-server serve`` processes on one PostgreSQL database, for the tests that
check several processes behave as one logical server. Only 127.0.0.1 is bound, and
every process is killed when its block ends."""

from __future__ import annotations

import contextlib
import itertools
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

__all__ = ["ServeProcess", "rpc", "serve_processes"]

_ids = itertools.count(1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServeProcess:
    """One ``a2m-server serve`` subprocess and an HTTP client for it."""

    def __init__(self, url: str, log: Path, extra: Sequence[str] = ()) -> None:
        self.port = _free_port()
        self._log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "a2m_server",
                "serve",
                "--db",
                url,
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                *extra,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30.0)
        self._wait_ready(log)

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {log.read_text(errors='replace')}")
            with contextlib.suppress(httpx.TransportError):
                self.call("memory/describe")
                return
            time.sleep(0.05)
        raise RuntimeError("server did not start within 30 s")

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The result, or raises AssertionError carrying the JSON-RPC error."""
        return rpc(self.client, method, params)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, no rollback but the database's own."""
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


def rpc(client: httpx.Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    answer = client.post("/", json=body).json()
    if "error" in answer:
        raise AssertionError(f"{method} failed: {answer['error']}")
    result: dict[str, Any] = answer["result"]
    return result


@contextlib.contextmanager
def serve_processes(
    url: str, directory: Path, count: int = 2, extra: Sequence[str] = ()
) -> Iterator[list[ServeProcess]]:
    """``count`` serve processes on the database at ``url``."""
    started: list[ServeProcess] = []
    try:
        for index in range(count):
            started.append(ServeProcess(url, directory / f"serve-{index}.log", extra))
        yield started
    finally:
        for process in started:
            process.stop()

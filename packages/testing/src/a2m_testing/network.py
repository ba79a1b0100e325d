"""Keep a test's traffic on this machine: while the guard is on, a socket connection or a
name lookup that would leave loopback is refused and written down, so a test can prove
that a framework run (telemetry included) never reached the network.

In this process use :func:`loopback_only`; for a subprocess (an example, a second agent)
pass :func:`guarded_environment` as its environment, then read :func:`refused_in`."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "NetworkRefused",
    "guarded_environment",
    "install",
    "is_loopback",
    "loopback_only",
    "refused_in",
]

_LOG_VARIABLE = "A2M_NETWORK_LOG"
_SITE = "import a2m_testing.network as _guard\n_guard.install()\n"


class NetworkRefused(ConnectionRefusedError):
    """A connection or lookup that would have left loopback."""


def is_loopback(host: object) -> bool:
    """Whether ``host`` (an address or a name) stays on this machine."""
    if not isinstance(host, str):
        return False
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _local_address(family: int, address: Any) -> bool:
    if family == getattr(socket, "AF_UNIX", None):
        return True
    if isinstance(address, tuple) and address:
        return is_loopback(address[0])
    return False


class _Guard:
    def __init__(self, log: Path | None) -> None:
        self.log = log
        self.refused: list[str] = []
        self._originals: dict[str, Any] = {}

    def refuse(self, what: str) -> NetworkRefused:
        self.refused.append(what)
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(what) + "\n")
        return NetworkRefused(f"refused by the loopback guard: {what}")

    def install(self) -> None:
        guard = self
        connect = socket.socket.connect
        connect_ex = socket.socket.connect_ex
        lookup = socket.getaddrinfo

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            if not _local_address(sock.family, address):
                raise guard.refuse(f"connect {address!r}")
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            if not _local_address(sock.family, address):
                raise guard.refuse(f"connect {address!r}")
            return connect_ex(sock, address)

        def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else host
            if name is not None and not is_loopback(name):
                raise guard.refuse(f"lookup {name!r}")
            return lookup(host, *args, **kwargs)

        self._originals = {"connect": connect, "connect_ex": connect_ex, "lookup": lookup}
        socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = guarded_lookup

    def remove(self) -> None:
        if self._originals:
            socket.socket.connect = self._originals["connect"]  # type: ignore[method-assign]
            socket.socket.connect_ex = self._originals["connect_ex"]  # type: ignore[method-assign]
            socket.getaddrinfo = self._originals["lookup"]
            self._originals = {}


def install() -> None:
    """Turn the guard on for the rest of this process, logging to ``$A2M_NETWORK_LOG``
    (what the subprocess environment of :func:`guarded_environment` does at start-up)."""
    log = os.environ.get(_LOG_VARIABLE)
    _Guard(Path(log) if log else None).install()


@contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Refuse every connection and name lookup off loopback inside the block; yields the
    list of what was refused (empty when nothing tried to leave)."""
    guard = _Guard(None)
    guard.install()
    try:
        yield guard.refused
    finally:
        guard.remove()


def guarded_environment(folder: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for a Python subprocess that starts with the guard on, logging what
    it refuses into ``folder``; read that back with :func:`refused_in`."""
    folder.mkdir(parents=True, exist_ok=True)
    site = folder / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITE, encoding="utf-8")
    env = dict(os.environ if base is None else base)
    paths = [str(site), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(path for path in paths if path)
    env[_LOG_VARIABLE] = str(folder / "refused.jsonl")
    return env


def refused_in(folder: Path) -> list[str]:
    """What the subprocesses started with ``guarded_environment(folder)`` tried to reach."""
    log = folder / "refused.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]

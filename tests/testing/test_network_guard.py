"""The loopback guard refuses what would leave this machine and lets loopback through, in
this process and in a subprocess started with its environment."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from a2m_testing.network import (
    NetworkRefused,
    guarded_environment,
    is_loopback,
    loopback_only,
    refused_in,
)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "::1", "localhost", "a.localhost"])
def test_loopback_hosts_are_local(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["192.0.2.1", "10.0.0.1", "example.com", "2001:db8::1", None])
def test_other_hosts_are_not(host: object) -> None:
    assert not is_loopback(host)


def test_a_connection_off_loopback_is_refused_and_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reached: list[object] = []
    # Stand in for the real connect, so a faulty guard still sends nothing anywhere.
    monkeypatch.setattr(socket.socket, "connect", lambda _sock, address: reached.append(address))
    with loopback_only() as refused, socket.socket() as sock:
        with pytest.raises(NetworkRefused):
            sock.connect(("192.0.2.1", 80))
        sock.connect(("127.0.0.1", 9))
    assert refused == ["connect ('192.0.2.1', 80)"]
    assert reached == [("127.0.0.1", 9)]


def test_loopback_connections_still_work() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with loopback_only() as refused, socket.create_connection(server.getsockname()):
            pass
    assert refused == []


def test_the_guard_is_removed_after_the_block() -> None:
    before = socket.getaddrinfo
    with loopback_only():
        assert socket.getaddrinfo is not before
    assert socket.getaddrinfo is before


_CHILD = """
import socket
assert socket.getaddrinfo.__name__ == "guarded_lookup", "the guard is not on"
try:
    socket.getaddrinfo("example.com", 443)
except ConnectionRefusedError:
    print("refused")
"""


def test_a_subprocess_runs_guarded_and_reports(tmp_path: Path) -> None:
    env = guarded_environment(tmp_path / "net")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
    assert refused_in(tmp_path / "net") == ["lookup 'example.com'"]

"""``a2m-server serve`` with no address flags, as the repository README runs it: HTTP on
127.0.0.1:8765 (loopback only), JSON-RPC at ``/`` and REST at ``/a2m/v1``."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

TIMEOUT = 30.0
PORT = 8765


def _port_is_free() -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", PORT))
        except OSError:
            return False
        return True


def _listening_on(port: int) -> set[str]:
    """The local IPv4 addresses listening on ``port``, from the kernel's socket table."""
    addresses = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:  # LISTEN
            addresses.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return addresses


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net/tcp")
def test_serve_listens_on_loopback_port_8765_by_default(tmp_path: Path) -> None:
    if not _port_is_free():
        pytest.skip(f"port {PORT} is in use on this machine")
    process = subprocess.Popen(
        [sys.executable, "-m", "a2m_server", "serve", "--db", str(tmp_path / "default.db")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{PORT}/"
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert process.poll() is None, process.communicate()[1].decode()
            try:
                described = httpx.post(
                    url, json={"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}, timeout=5
                )
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "nothing answered on the default port"
                time.sleep(0.05)
        assert described.json()["result"]["protocol"] == "a2m/0.1"
        assert _listening_on(PORT) == {"127.0.0.1"}  # loopback only, not 0.0.0.0
        rest = httpx.get(url + "a2m/v1/memory:describe", timeout=5)
        assert rest.status_code == 200
        assert rest.json()["protocol"] == "a2m/0.1"
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, stderr.decode()

"""A stdio client dropped without ``close()`` stops its server: the transport's threads
hold it only weakly, so it is collected, and its finaliser closes the server's stdin (as
``close`` does, §8.2) and warns, as an unclosed asyncio transport does."""

from __future__ import annotations

import gc
import subprocess
import sys
import time

import pytest

from a2m import A2MClient


def _server_process(client: A2MClient) -> subprocess.Popen[bytes]:
    process = client._state.transport._process  # type: ignore[attr-defined]
    assert process is not None
    return process  # type: ignore[no-any-return]


def _dropped_after_a_call() -> subprocess.Popen[bytes]:
    """Start a stdio client's server with one call, drop the client, collect it; its
    server's process."""
    client = A2MClient.stdio([sys.executable, "-m", "a2m_server", "stdio"])
    assert client.describe().protocol == "a2m/0.1"
    process = _server_process(client)
    del client
    gc.collect()
    return process


def test_a_dropped_stdio_client_stops_its_server_and_warns() -> None:
    with pytest.warns(ResourceWarning, match="dropped without close"):
        process = _dropped_after_a_call()
    assert process.wait(timeout=20) == 0  # it read the end of stdin and exited cleanly
    for _ in range(200):  # the reaper closes the pipes once the readers have finished
        if process.stdout is not None and process.stdout.closed:
            break
        time.sleep(0.05)
    assert process.stdout is not None
    assert process.stdout.closed


def test_a_closed_stdio_client_neither_warns_nor_leaves_its_server() -> None:
    client = A2MClient.stdio([sys.executable, "-m", "a2m_server", "stdio"])
    client.describe()
    process = _server_process(client)
    client.close()
    assert process.poll() == 0
    del client
    gc.collect()  # no ResourceWarning: the suite turns every warning into an error

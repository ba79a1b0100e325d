"""What the server README promises of a SQLite store's writes: the answer to a
``memory/remember`` comes after the commit, so a write that was answered survives the
``a2m-server`` process being killed outright; and the file runs in WAL mode with
``synchronous = NORMAL``, the trade-off the README states."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2m_server import A2MServer

TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _call(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=TIMEOUT
    )
    body: dict[str, Any] = response.json()
    assert "result" in body, body
    result: dict[str, Any] = body["result"]
    return result


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_answered_write_survives_the_server_being_killed(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    process = subprocess.Popen(
        [sys.executable, "-m", "a2m_server", "serve", "--db", str(db), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert process.poll() is None, process.communicate()[1].decode()
            try:
                _call(url, "memory/describe", {})
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server never answered"
                time.sleep(0.05)
        batch = [{"content": f"batch record {i}", "embedding": [float(i), 1.0]} for i in range(50)]
        ids = _call(url, "memory/remember", {"records": batch})["ids"]
        keyed = {"content": "the deploy key rotates every 90 days", "key": "ops/deploy-key"}
        _call(url, "memory/remember", {"records": [keyed]})
        replaced = {"content": "the deploy key rotates every 30 days", "key": "ops/deploy-key"}
        _call(url, "memory/remember", {"records": [replaced]})
        # No shutdown, no flush, no checkpoint: only what was committed is on disk.
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=TIMEOUT)
        assert process.returncode == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=TIMEOUT)

    with A2MServer(db=db) as server:
        connection = server.connect()
        timeline = connection.call("memory/timeline", {"limit": 1000})
        stored = {record["id"]: record for record in timeline["records"]}
        assert set(ids) <= set(stored)
        assert [stored[i]["content"] for i in ids] == [r["content"] for r in batch]
        fetched = connection.call("memory/fetch", {"key": "ops/deploy-key"})["record"]
        assert fetched["content"] == replaced["content"]
        assert fetched["revision"] == 1  # rewritten once
        assert len(stored) == len(batch) + 1
        vectors = connection.call("memory/timeline", {"limit": 1000, "embeddings": True})
        by_id = {record["id"]: record.get("embedding") for record in vectors["records"]}
        assert [by_id[i] for i in ids] == [r["embedding"] for r in batch]


def test_a_file_store_runs_in_wal_mode_with_synchronous_normal(tmp_path: Path) -> None:
    db = tmp_path / "modes.db"
    with A2MServer(db=db) as server:
        server.connect().call("memory/remember", {"records": [{"content": "one"}]})
        store: Any = server.store
        writer = store._writer
        assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert writer.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        reader = store._reader_connection()
        assert reader.execute("PRAGMA synchronous").fetchone()[0] == 1
    # WAL mode is recorded in the file itself, so every later connection finds it.
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

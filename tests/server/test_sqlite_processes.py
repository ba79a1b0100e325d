"""Two ``a2m-server serve`` processes writing one SQLite file at once lose nothing: every
write acknowledged is in the file, on every reader. (A descriptor of the file's ``-shm``
index opened and closed by the server itself once dropped the process's SQLite locks on
it, so another process could write the log at the same time and committed transactions
vanished — dozens of 80, intermittently.)"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import httpx
from pg_support import serve_processes

WRITERS = 4
ROUNDS = 25


def test_concurrent_writers_through_two_processes_lose_no_write(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    acknowledged: list[str] = []
    errors: list[BaseException] = []
    with serve_processes(str(db), tmp_path) as processes:

        def write(index: int) -> None:
            process = processes[index % 2]
            try:
                with httpx.Client(
                    base_url=f"http://127.0.0.1:{process.port}", timeout=60
                ) as client:
                    for n in range(ROUNDS):
                        body = {
                            "jsonrpc": "2.0",
                            "id": n,
                            "method": "memory/remember",
                            "params": {"records": [{"content": f"writer {index} note {n}"}]},
                        }
                        answer = client.post("/", json=body).json()
                        acknowledged.extend(answer["result"]["ids"])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        # While both still run: a fresh connection, and each server, sees every write.
        with sqlite3.connect(db) as conn:
            stored = {row[0] for row in conn.execute("SELECT id FROM records")}
        assert set(acknowledged) <= stored
        for process in processes:
            listed = process.call("memory/timeline", {"limit": 1000})["records"]
            assert {r["id"] for r in listed} >= set(acknowledged)
    assert len(acknowledged) == WRITERS * ROUNDS

"""Observation dedup holds across real ``a2m-server serve`` processes writing one store at
once, on SQLite and on PostgreSQL: one record per fact, its weight the exact sum of every
write's weight, and one audit entry per write (issue 25)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from pg_support import serve_processes

WRITERS = 4
ROUNDS = 10


def _remember(client: httpx.Client, params: dict[str, Any]) -> dict[str, Any]:
    """One remember, retried as a client would when the server says it changed nothing and
    may be retried (a write that waited past SQLite's busy timeout on a loaded machine)."""
    for _ in range(5):
        body = {"jsonrpc": "2.0", "id": 1, "method": "memory/observations/remember"}
        answer = client.post("/", json={**body, "params": params}).json()
        error = answer.get("error")
        if error is None:
            result: dict[str, Any] = answer["result"]
            return result
        if not (error.get("data") or {}).get("retryable"):
            break
    raise AssertionError(f"remember failed: {error}")


def _weight(writer: int, n: int) -> float:
    # Halves add exactly in binary floating point, so the sum has one right answer.
    return 0.5 + (writer * ROUNDS + n) % 3


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_concurrent_duplicates_through_two_processes_sum_their_weights_into_one_record(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "postgres":
        url = request.getfixturevalue("postgres_server").fresh_url()
    else:
        url = str(tmp_path / "shared.db")
    with serve_processes(url, tmp_path) as processes:
        errors: list[BaseException] = []
        ids: set[str] = set()

        def write(index: int) -> None:
            process = processes[index % 2]
            with httpx.Client(base_url=f"http://127.0.0.1:{process.port}", timeout=60) as client:
                try:
                    for n in range(ROUNDS):
                        landed = _remember(
                            client, {"content": "Shared  FACT", "weight": _weight(index, n)}
                        )
                        ids.add(landed["id"])
                        _remember(client, {"content": f"own fact {index}-{n}"})
                except BaseException as exc:
                    errors.append(exc)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        assert not errors, errors
        listed = processes[1].call("memory/observations/list", {"limit": 1000})["observations"]
        shared = [o for o in listed if " ".join(o["content"].lower().split()) == "shared fact"]
        audit = processes[0].call(
            "memory/observations/audit", {"observation_id": shared[0]["id"], "limit": 1000}
        )["entries"]
    assert len(shared) == 1  # no duplicate
    assert ids == {shared[0]["id"]}  # every writer was handed the one record
    expected = sum(_weight(i, n) for i in range(WRITERS) for n in range(ROUNDS))
    assert shared[0]["weight"] == expected  # no lost increment
    assert len(listed) == 1 + WRITERS * ROUNDS
    actions = sorted(entry["action"] for entry in audit)
    assert actions == ["created"] + ["merged"] * (WRITERS * ROUNDS - 1)

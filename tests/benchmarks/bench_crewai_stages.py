"""Where a CrewAI ``save`` over HTTP spends its time: microseconds per record of each stage
of one batch (``--batch`` records of ``--dims``-d embeddings), client side and server
side. Prints figures; it is not a pass/fail test. ``bench_crewai.py`` gives the end-to-end
rates.

    uv run python tests/benchmarks/bench_crewai_stages.py [--records 1000] [--rounds 5]
                                                          [--dims 384]

1. Client stages, timed one after another on the same batches: the adapter's mapping
   (``record_input``), the client's params (``remember_values``, validation,
   ``_remember_wire``) and the request encoding (the plain-JSON walk, orjson).
2. Server stages: an in-process ``A2MServer`` handling exactly the JSON the client sends,
   with its stages wrapped in timers and every SQL statement of the writer timed.
3. The whole path: ``A2MStorage.save`` against ``python -m a2m_server serve`` in its own
   process. The client's CPU less its stages above is its HTTP transport; the server
   process's CPU less an untimed in-process server's on the same JSON is its HTTP layer
   (uvicorn, the ASGI gate, the worker-thread hop). Both server figures include the
   checkpoint thread, which runs beside the writes.

Stage timers are wall clock in one thread: on a loaded machine they include waiting. The
median over ``--rounds`` rounds is printed, each round on a fresh store."""

from __future__ import annotations

import argparse
import collections
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).parent))
with warnings.catch_warnings():
    # Importing it switches CrewAI's telemetry off and points HOME at a temporary folder
    # (_HOME), before anything here imports CrewAI.
    warnings.simplefilter("ignore")
    from bench_crewai import _HOME, make_records

from bench_client import ServerProcess, process_cpu
from bench_support import load_average

from a2m import _core as core
from a2m._types import NOT_GIVEN
from a2m.transports import _base as transport_base
from a2m_crewai import A2MStorage
from a2m_crewai import _mapping as mapping
from a2m_crewai._plan import layout_of
from a2m_server import (
    A2MServer,
    _json,
    dispatch,
)
from a2m_server import server as server_module
from a2m_server.protocol import core as protocol_core
from a2m_server.protocol import writes
from a2m_server.store import _sqlite_write
from a2m_server.store import sqlite as sqlite_store
from a2m_types import DescribeResult, RememberParams
from a2m_types.plain_json import orjson_matches_stdlib

Spent = collections.Counter[str]


def _timed(spent: Spent, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    return timed


class _TimedConnection:
    """The store's writer connection, timing each statement by its first words."""

    def __init__(self, conn: Any, spent: Spent) -> None:
        self._conn = conn
        self._spent = spent

    def _run(self, kind: str, sql: str, *args: Any) -> Any:
        words = sql.split()
        name = " ".join(words[:3]) if words[0] in ("INSERT", "SELECT", "PRAGMA") else words[0]
        started = time.perf_counter()
        try:
            return getattr(self._conn, kind)(sql, *args)
        finally:
            self._spent[f"  sql {name[:36]}"] += time.perf_counter() - started

    def execute(self, sql: str, *args: Any) -> Any:
        return self._run("execute", sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._run("executemany", sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _instrument(spent: Spent) -> None:
    """Wrap the server's stages in timers (this process only)."""
    _json._holds_big_number = _timed(spent, "decode: big-number scan", _json._holds_big_number)
    if _json._orjson is not None:
        loads = _timed(spent, "decode: orjson.loads", _json._orjson.loads)
        _json._orjson = type(  # type: ignore[assignment]
            "TimedOrjson",
            (),
            {
                "JSONDecodeError": orjson.JSONDecodeError,
                "loads": loads,
            },
        )
    server_module.encode = _timed(spent, "encode the response", dispatch.encode)  # type: ignore[assignment]
    RememberParams.model_validate = _timed(  # type: ignore[method-assign]
        spent, "params validation", RememberParams.model_validate
    )
    if hasattr(writes, "prepare_writes"):  # the whole batch in one call
        writes.prepare_writes = _timed(spent, "prepare_write", writes.prepare_writes)
    else:
        writes.prepare_write = _timed(spent, "prepare_write", writes.prepare_write)  # type: ignore[assignment]
    writes.write_records = _timed(spent, "write_records (all of it)", writes.write_records)  # type: ignore[assignment]
    _sqlite_write.pack_vector = _timed(spent, "  pack vectors", _sqlite_write.pack_vector)  # type: ignore[assignment]
    protocol_core.Protocol.invoke = _timed(  # type: ignore[method-assign]
        spent, "protocol.invoke (all of it)", protocol_core.Protocol.invoke
    )


_PLAIN_REQUEST = getattr(transport_base, "PlainRequest", None)


def _walk(message: dict[str, Any]) -> bool:
    """What ``encode_message`` checks before orjson: nothing for a request proven plain."""
    return type(message) is _PLAIN_REQUEST or orjson_matches_stdlib(message)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dims", type=int, default=384, help="the vectors' width")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="a2m-bench-stages-data-"))
    try:
        _run(options, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(options: argparse.Namespace, work: Path) -> None:
    count, size = options.records, options.batch
    client_rounds: dict[str, list[float]] = collections.defaultdict(list)
    server_rounds: dict[str, list[float]] = collections.defaultdict(list)
    path_rounds: dict[str, list[float]] = collections.defaultdict(list)

    probe = A2MServer(db=str(work / "probe.db"))
    described = probe.connect(transport="http").call("memory/describe")
    layout = layout_of(DescribeResult.model_validate(described))
    probe.close()

    def bodies_of(records: list[Any]) -> list[bytes]:
        out = []
        for offset in range(0, len(records), size):
            batch = [mapping.record_input(r, layout) for r in records[offset : offset + size]]
            call = core.prepare_remember(batch, NOT_GIVEN, NOT_GIVEN)
            out.append(transport_base.encode_message(core.build_request(call, offset + 1)))
        return out

    # 3 first, and the in-process server untimed, before any timer is installed here.
    for round_number in range(options.rounds):
        records = make_records(count, seed=round_number, dimensions=options.dims)
        process = ServerProcess(work / f"path-{round_number}.db")
        try:
            process.wait_ready()
            storage = A2MStorage(process.url)
            storage.count()
            served, cpu = process_cpu(process.pid), time.process_time()
            for offset in range(0, count, size):
                storage.save(records[offset : offset + size])
            path_rounds["client"].append((time.process_time() - cpu) * 1e6 / count)
            time.sleep(0.3)  # the checkpoint thread's share lands too
            path_rounds["server"].append((process_cpu(process.pid) - served) * 1e6 / count)
            storage.close()
        finally:
            process.stop()
        bodies = bodies_of(records)
        server = A2MServer(db=str(work / f"untimed-{round_number}.db"))
        connection = server.connect(transport="http")
        connection.call("memory/describe")
        cpu = time.process_time()
        for body in bodies:
            connection.handle(body)
        path_rounds["in process"].append((time.process_time() - cpu) * 1e6 / count)
        server.close()

    spent: Spent = collections.Counter()
    _instrument(spent)

    def stage(name: str, func: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        started = time.perf_counter()
        out = [func(item) for item in items]
        client_rounds[name].append((time.perf_counter() - started) * 1e6 / count)
        return out

    def validated(values: dict[str, Any]) -> RememberParams:
        return RememberParams.model_validate({"records": values["records"]})

    for round_number in range(options.rounds):
        records = make_records(count, seed=round_number, dimensions=options.dims)
        batches = [records[offset : offset + size] for offset in range(0, count, size)]
        inputs = stage(
            "adapter: record_input",
            lambda batch: [mapping.record_input(r, layout) for r in batch],
            batches,
        )
        values = stage(
            "client: remember_values",
            lambda batch: core.remember_values(batch, NOT_GIVEN, NOT_GIVEN, convert=False),
            inputs,
        )
        models = stage("client: params validation", validated, values)
        stage("client: _remember_wire", core._remember_wire, models)
        calls = [core.prepare_remember(batch, NOT_GIVEN, NOT_GIVEN) for batch in inputs]
        messages = [core.build_request(call, n + 1) for n, call in enumerate(calls)]
        stage("encode: plain-JSON walk", _walk, messages)
        stage("encode: orjson.dumps", orjson.dumps, [dict(m) for m in messages])
        bodies = [transport_base.encode_message(m) for m in messages]

        server = A2MServer(db=str(work / f"stages-{round_number}.db"))
        connection = server.connect(transport="http")
        connection.call("memory/describe")
        store = server.store
        assert isinstance(store, sqlite_store.SQLiteStore)
        store._writer = _TimedConnection(store._writer, spent)  # type: ignore[assignment]
        spent.clear()
        started, cpu = time.perf_counter(), time.process_time()
        for body in bodies:
            connection.handle(body)
        server_rounds["handle (all of it, wall)"].append(
            (time.perf_counter() - started) * 1e6 / count
        )
        server_rounds["handle (all of it, CPU)"].append((time.process_time() - cpu) * 1e6 / count)
        for name, seconds in spent.items():
            server_rounds[name].append(seconds * 1e6 / count)
        server.close()

    median = {
        name: statistics.median(values)
        for rounds in (client_rounds, server_rounds, path_rounds)
        for name, values in rounds.items()
    }
    print(
        f"CrewAI save stages: {count} records x {options.dims}-d in batches of {size}, median of "
        f"{options.rounds} rounds, us per record; {load_average()}"
    )
    print("client (CrewAI process):")
    for name in client_rounds:
        print(f"  {median[name]:6.1f}  {name}")
    stages = sum(median[name] for name in client_rounds)
    print(f"  {median['client'] - stages:6.1f}  HTTP transport (the save's CPU less the above)")
    print(f"  {median['client']:6.1f}  = A2MStorage.save, CPU")
    print("server (in process, the same JSON):")
    for name in sorted(server_rounds, key=lambda n: (n.startswith("  "), -median[n])):
        print(f"  {median[name]:6.1f}  {name}")
    print(f"  {median['in process']:6.1f}  handle, CPU, without the timers")
    http = median["server"] - median["in process"]
    print(f"  {http:6.1f}  HTTP layer (the server process's CPU less that)")
    print(f"  {median['server']:6.1f}  = the server process, CPU (with its checkpoint thread)")
    tick = 1e6 / (os.sysconf("SC_CLK_TCK") * count)
    print(f"  (another process's CPU is read in clock ticks: +-{tick:.0f} us per record here)")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(_HOME, ignore_errors=True)

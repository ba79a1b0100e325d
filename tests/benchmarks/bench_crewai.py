"""CrewAI storage benchmark: ``A2MStorage`` over HTTP beside CrewAI's default LanceDB
storage, on the same records in the same run. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_crewai.py [--records 1000] [--batch 50]
                                                   [--searches 200] [--rounds 3]

1. ``save``: ``--records`` records with 384-dimensional unit embeddings, in batches of
   ``--batch``, into a fresh store each round (A2M: a server database file, LanceDB: a
   folder); records/s, the median over ``--rounds`` rounds, the two backends alternating,
   with the CPU seconds per 1,000 records of this process and of the A2M server process
   (on a shared machine wall time waits on other work; CPU says what each side costs).
2. ``search``: ``--searches`` queries (``limit=10``) on the filled stores, A2M and LanceDB
   interleaved query by query so both see the same load; p50 and p99 latency. A2M is
   searched twice: by vector alone (what ``StorageBackend.search`` is handed) and by
   vector plus the query's words (what :class:`~a2m_crewai.A2MMemory` sends).

The A2M server runs as ``python -m a2m_server serve`` in its own process, on loopback, so
its CPU never shares this process's GIL; LanceDB runs in this process, as CrewAI runs it.
Vectors and texts are seeded. CrewAI's telemetry is off and HOME is a temporary folder."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

_HOME = Path(tempfile.mkdtemp(prefix="a2m-bench-crewai-"))
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "HOME": str(_HOME),
        "CREWAI_STORAGE_DIR": str(_HOME / "crewai"),
    }
)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_client import ServerProcess, process_cpu  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from crewai.memory.storage.lancedb_storage import LanceDBStorage
    from crewai.memory.types import MemoryRecord

from a2m_crewai import A2MStorage  # noqa: E402

DIMENSIONS = 384
LIMIT = 10
WORDS = [
    "deploy",
    "key",
    "rotation",
    "vault",
    "staging",
    "database",
    "backup",
    "customer",
    "plan",
    "revenue",
    "quarter",
    "pipeline",
    "merge",
    "release",
    "incident",
    "pager",
    "latency",
    "cache",
    "region",
    "cluster",
    "budget",
    "hiring",
    "roadmap",
    "launch",
    "audit",
    "policy",
    "contract",
    "invoice",
    "support",
    "ticket",
    "onboarding",
]
SCOPES = ["/crew/research", "/crew/ops", "/crew/sales", "/finance", "/crew/research/agent/a"]


def unit(rng: np.random.Generator) -> list[float]:
    vector = rng.standard_normal(DIMENSIONS)
    return [float(x) for x in vector / np.linalg.norm(vector)]


def sentence(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(8))


def make_records(count: int, seed: int) -> list[MemoryRecord]:
    rng, rnd = np.random.default_rng(seed), random.Random(seed)
    return [
        MemoryRecord(
            content=sentence(rnd),
            scope=SCOPES[index % len(SCOPES)],
            categories=[rnd.choice(WORDS)],
            metadata={"n": index},
            embedding=unit(rng),
        )
        for index in range(count)
    ]


def save_rate(storage: Any, records: list[MemoryRecord], batch: int) -> tuple[float, float]:
    """Records per second saving ``records`` in batches of ``batch``, and this process's
    CPU seconds per 1,000 records while doing it."""
    started, cpu = time.perf_counter(), time.process_time()
    for offset in range(0, len(records), batch):
        storage.save(records[offset : offset + batch])
    elapsed, used = time.perf_counter() - started, time.process_time() - cpu
    return len(records) / elapsed, used * 1000 / len(records)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="a2m-bench-crewai-data-"))
    servers: list[ServerProcess] = []
    try:
        rates: dict[str, list[float]] = {"a2m": [], "lancedb": []}
        cpus: dict[str, list[float]] = {"a2m": [], "lancedb": []}
        server_cpus: list[float] = []
        stores: dict[str, Any] = {}
        for round_number in range(options.rounds):
            records = make_records(options.records, seed=round_number)
            server = ServerProcess(work / f"a2m-{round_number}.db")
            servers.append(server)
            server.wait_ready()
            a2m = A2MStorage(server.url)
            a2m.count()  # negotiate (one describe) before timing
            lance = LanceDBStorage(path=work / f"lance-{round_number}", compact_every=0)
            order = [("a2m", a2m), ("lancedb", lance)]
            for name, storage in order if round_number % 2 == 0 else order[::-1]:
                before = process_cpu(server.pid)
                rate, cpu = save_rate(storage, records, options.batch)
                rates[name].append(rate)
                cpus[name].append(cpu)
                if name == "a2m":
                    served = process_cpu(server.pid) - before
                    server_cpus.append(served * 1000 / len(records))
            if stores:
                stores["a2m"].close()
            stores = {"a2m": a2m, "lancedb": lance}

        rng, rnd = np.random.default_rng(1000), random.Random(1000)
        queries = [(unit(rng), sentence(rnd)) for _ in range(options.searches)]
        latencies: dict[str, list[float]] = {"a2m": [], "a2m+text": [], "lancedb": []}
        a2m, lance = stores["a2m"], stores["lancedb"]
        for vector, _text in queries[:5]:  # warm both up
            a2m.search(vector, limit=LIMIT)
            lance.search(vector, limit=LIMIT)
        for index, (vector, text) in enumerate(queries):
            runs = [
                ("a2m", lambda v=vector: a2m.search(v, limit=LIMIT)),
                ("lancedb", lambda v=vector: lance.search(v, limit=LIMIT)),
                ("a2m+text", lambda v=vector, t=text: _hybrid(a2m, v, t)),
            ]
            for name, run in runs[index % 3 :] + runs[: index % 3]:
                started = time.perf_counter()
                found = run()
                latencies[name].append(time.perf_counter() - started)
                assert len(found) == LIMIT, (name, len(found))
        a2m.close()
        cpus["a2m server"] = server_cpus
        _report(options, rates, cpus, latencies)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(_HOME, ignore_errors=True)


def _hybrid(storage: A2MStorage, vector: list[float], text: str) -> list[Any]:
    storage.query_texts.note(vector, text)
    return storage.search(vector, limit=LIMIT)


def _report(
    options: argparse.Namespace,
    rates: dict[str, list[float]],
    cpus: dict[str, list[float]],
    latencies: dict[str, list[float]],
) -> None:
    print(
        f"CrewAI storage: {options.records} records x {DIMENSIONS}-d, batches of "
        f"{options.batch}, {options.rounds} rounds; {options.searches} searches, limit {LIMIT}"
    )
    save = {name: statistics.median(values) for name, values in rates.items()}
    print("save (records/s, median of rounds):")
    for name, rate in save.items():
        rounds = ", ".join(f"{r:.0f}" for r in rates[name])
        cpu = statistics.median(cpus[name])
        print(f"  {name:<9} {rate:9.0f}   this process {cpu:.2f} s CPU/1000   rounds: {rounds}")
    print(f"  the A2M server process: {statistics.median(cpus['a2m server']):.2f} s CPU/1000")
    print(f"  A2M / LanceDB: {save['a2m'] / save['lancedb']:.2f}x the rate")
    print("search latency (ms):")
    for name, samples in latencies.items():
        p50, p99 = percentile(samples, 0.5) * 1000, percentile(samples, 0.99) * 1000
        print(f"  {name:<9} p50 {p50:7.2f}   p99 {p99:7.2f}")
    base = percentile(latencies["lancedb"], 0.5)
    for name in ("a2m", "a2m+text"):
        print(f"  {name} p50 / LanceDB p50: {percentile(latencies[name], 0.5) / base:.2f}x")


if __name__ == "__main__":
    main()

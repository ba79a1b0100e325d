"""CrewAI storage benchmark: ``A2MStorage`` over HTTP beside CrewAI's default LanceDB
storage, on the same records in the same run. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_crewai.py [--records 1000] [--batch 50]
                                                   [--searches 200] [--rounds 3]
                                                   [--dims 384]

1. ``save``: ``--records`` records with unit embeddings of ``--dims`` dimensions, in
   batches of ``--batch``, into a fresh store each round (A2M: a server database file,
   LanceDB: a folder); records/s, the median over ``--rounds`` rounds, the two backends
   alternating, with the CPU seconds per 1,000 records of this process and of the A2M
   server process (on a shared machine wall time waits on other work; CPU says what each
   side costs). ``--dims 8,96,384`` repeats this for each width, which shows how much of
   a save's cost grows with the vector.
   Beside it: what the vectors cost as JSON text alone, written and read back by orjson
   in this process (microseconds per record, the best of five passes), against A2M's
   time per record less LanceDB's. A2M 0.1 carries vectors as JSON numbers (§3.7) and no
   bytes in a record (§3.1); LanceDB keeps them as binary floats in process.
2. ``search``: ``--searches`` queries (``limit=10``) on the stores filled at the last
   width, A2M and LanceDB interleaved query by query so both see the same load; p50 and
   p99 latency. A2M is searched twice: by vector alone (what ``StorageBackend.search`` is
   handed) and by vector plus the query's words (what :class:`~a2m_crewai.A2MMemory` sends).

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
from dataclasses import dataclass, field
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
import orjson  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_client import ServerProcess, process_cpu  # noqa: E402
from bench_support import load_average  # noqa: E402

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


def unit(rng: np.random.Generator, dimensions: int = DIMENSIONS) -> list[float]:
    vector = rng.standard_normal(dimensions)
    return [float(x) for x in vector / np.linalg.norm(vector)]


def sentence(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(8))


def make_records(count: int, seed: int, dimensions: int = DIMENSIONS) -> list[MemoryRecord]:
    rng, rnd = np.random.default_rng(seed), random.Random(seed)
    return [
        MemoryRecord(
            content=sentence(rnd),
            scope=SCOPES[index % len(SCOPES)],
            categories=[rnd.choice(WORDS)],
            metadata={"n": index},
            embedding=unit(rng, dimensions),
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
    parser.add_argument(
        "--dims", default=str(DIMENSIONS), help="vector widths to save at, comma-separated"
    )
    options = parser.parse_args()
    widths = [int(width) for width in options.dims.split(",")]
    work = Path(tempfile.mkdtemp(prefix="a2m-bench-crewai-data-"))
    servers: list[ServerProcess] = []
    try:
        saves = [_save_rounds(options, width, work, servers) for width in widths]
        latencies = _search(options, saves[-1].stores, widths[-1])
        _report(options, saves, latencies)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(_HOME, ignore_errors=True)


@dataclass
class Saved:
    """One width's save rounds: rates and CPU per backend, and the last round's stores."""

    dimensions: int
    rates: dict[str, list[float]] = field(default_factory=lambda: {"a2m": [], "lancedb": []})
    cpus: dict[str, list[float]] = field(
        default_factory=lambda: {"a2m": [], "lancedb": [], "a2m server": []}
    )
    json_us: float = 0.0
    """The vectors as JSON text alone: orjson's write and read, microseconds per record."""
    stores: dict[str, Any] = field(default_factory=dict)


def _save_rounds(
    options: argparse.Namespace, dimensions: int, work: Path, servers: list[ServerProcess]
) -> Saved:
    saved = Saved(dimensions)
    for round_number in range(options.rounds):
        records = make_records(options.records, seed=round_number, dimensions=dimensions)
        name = f"{dimensions}-{round_number}"
        server = ServerProcess(work / f"a2m-{name}.db")
        servers.append(server)
        server.wait_ready()
        a2m = A2MStorage(server.url)
        a2m.count()  # negotiate (one describe) before timing
        lance = LanceDBStorage(path=work / f"lance-{name}", compact_every=0)
        order = [("a2m", a2m), ("lancedb", lance)]
        for backend, storage in order if round_number % 2 == 0 else order[::-1]:
            before = process_cpu(server.pid)
            rate, cpu = save_rate(storage, records, options.batch)
            saved.rates[backend].append(rate)
            saved.cpus[backend].append(cpu)
            if backend == "a2m":
                served = process_cpu(server.pid) - before
                saved.cpus["a2m server"].append(served * 1000 / len(records))
        if saved.stores:  # only the last round's stores are searched
            saved.stores["a2m"].close()
            saved.stores["server"].stop()
        saved.stores = {"a2m": a2m, "lancedb": lance, "server": server}
    saved.json_us = json_vector_cost(make_records(options.records, seed=0, dimensions=dimensions))
    return saved


def json_vector_cost(records: list[MemoryRecord]) -> float:
    """Microseconds per record that writing each vector as JSON text and reading it back
    takes with orjson (what the two ends of an A2M save must do at the least), the best of
    five passes."""
    vectors = [record.embedding for record in records if record.embedding]
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for vector in vectors:
            orjson.loads(orjson.dumps(vector))
        best = min(best, time.perf_counter() - started)
    return best * 1e6 / len(vectors)


def _search(
    options: argparse.Namespace, stores: dict[str, Any], dimensions: int
) -> dict[str, list[float]]:
    rng, rnd = np.random.default_rng(1000), random.Random(1000)
    queries = [(unit(rng, dimensions), sentence(rnd)) for _ in range(options.searches)]
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
    return latencies


def _hybrid(storage: A2MStorage, vector: list[float], text: str) -> list[Any]:
    storage.query_texts.note(vector, text)
    return storage.search(vector, limit=LIMIT)


def _report(
    options: argparse.Namespace, saves: list[Saved], latencies: dict[str, list[float]]
) -> None:
    widths = "/".join(str(saved.dimensions) for saved in saves)
    print(
        f"CrewAI storage: {options.records} records x {widths}-d, batches of "
        f"{options.batch}, {options.rounds} rounds; {options.searches} searches, limit {LIMIT}"
        f"; load {load_average()}"
    )
    for saved in saves:
        save = {name: statistics.median(values) for name, values in saved.rates.items()}
        print(f"save at {saved.dimensions}-d (records/s, median of rounds):")
        for name, rate in save.items():
            rounds = ", ".join(f"{r:.0f}" for r in saved.rates[name])
            cpu = statistics.median(saved.cpus[name])
            print(f"  {name:<9} {rate:9.0f}   this process {cpu:.2f} s CPU/1000   rounds: {rounds}")
        server_cpu = statistics.median(saved.cpus["a2m server"])
        print(f"  the A2M server process: {server_cpu:.2f} s CPU/1000")
        print(f"  A2M / LanceDB: {save['a2m'] / save['lancedb']:.2f}x the rate")
        gap = 1e6 / save["a2m"] - 1e6 / save["lancedb"]
        print(
            f"  the vectors as JSON alone (orjson write + read): {saved.json_us:.1f} us/record;"
            f" A2M's time per record less LanceDB's: {gap:+.1f} us"
        )
    print(f"search latency at {saves[-1].dimensions}-d (ms):")
    for name, samples in latencies.items():
        p50, p99 = percentile(samples, 0.5) * 1000, percentile(samples, 0.99) * 1000
        print(f"  {name:<9} p50 {p50:7.2f}   p99 {p99:7.2f}")
    base = percentile(latencies["lancedb"], 0.5)
    for name in ("a2m", "a2m+text"):
        print(f"  {name} p50 / LanceDB p50: {percentile(latencies[name], 0.5) / base:.2f}x")


if __name__ == "__main__":
    main()

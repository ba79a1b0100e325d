"""Client benchmark: what the typed client costs over raw HTTP, what concurrency buys the
async client, and the in-process transport's overhead. Prints figures; it is not a
pass/fail test.

    uv run python tests/benchmarks/bench_client.py [--records 3000] [--block 20] [--rounds 30]
                                                   [--batches 10]

1. ``A2MClient.recall`` against ``python -m a2m_server serve`` running in its own process
   (so the server's CPU never shares the client's GIL), compared with a raw
   ``httpx.Client.post`` of the byte-identical JSON-RPC body and headers the client sends
   (captured with an httpx event hook on a separate client), once checking the status only
   and once also calling ``response.json()`` — the typed client parses too, so that is the
   fair baseline. Both sides pool connections; the typed client has negotiated (its
   describe) before timing starts.
2. ``AsyncA2MClient``: 64 ``recall`` calls under ``asyncio.gather`` against the same 64
   awaited one by one, same server: with httpx's default pool (100 connections, 20 kept
   alive), a pool keeping 64 alive, a pool of 8, and the default pool with httpcore's
   failing ``import sniffio`` made cheap (see ``NO_SNIFFIO``). Client and server CPU per call
   are printed, and the speedup CPU alone would allow on an idle machine.
3. The in-process transport: ``A2MClient.in_process(A2MServer()).recall`` against
   ``connection.handle(text)`` with the same JSON text, and against ``connection.call``.

Other work on the machine makes wall-clock figures noisy, so the compared variants run in
short interleaved blocks on the same queries, their order rotating every round; latencies
are medians over all rounds, and each ratio is the median of the per-round ratios. Queries
and records are seeded. Server CPU is read from ``/proc`` (Linux; 0 elsewhere)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import (
    ServerProcess,
    load_average,
    p50,
    p99,
)

from a2m import A2MClient, AsyncA2MClient
from a2m_server import A2MServer

BATCH = 256
TOP_K = 10
CONCURRENCY = 64


# --- helpers ------------------------------------------------------------------------------


def rotated(names: Sequence[str], round_index: int) -> list[str]:
    """The variants' order in one round: A B C, then B C A, then C A B …"""
    shift = round_index % len(names)
    return [*names[shift:], *names[:shift]]


class Tally:
    """One variant's figures: per-call latencies, one figure per timed block (the block's
    median latency, or its calls/s), and wall, client-CPU and server-CPU totals."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server_pid = server_pid
        self.samples: list[float] = []
        self.blocks: list[float] = []
        self.calls = 0
        self.wall = self.client_cpu = self.server_cpu = 0.0

    def start(self) -> tuple[float, float, float]:
        return time.perf_counter(), time.process_time(), process_cpu(self.server_pid)

    def stop(self, mark: tuple[float, float, float], calls: int) -> float:
        """Add one block's totals; returns its wall time in seconds."""
        wall = time.perf_counter() - mark[0]
        self.client_cpu += time.process_time() - mark[1]
        self.server_cpu += process_cpu(self.server_pid) - mark[2]
        self.wall += wall
        self.calls += calls
        return wall

    def per_call_us(self, seconds: float) -> float:
        return seconds / self.calls * 1e6


def paired_ratio(a: Tally, b: Tally) -> float:
    """The median over rounds of a's block figure over b's in the same round, so load that
    comes and goes between rounds cancels out."""
    return statistics.median(x / y for x, y in zip(a.blocks, b.blocks, strict=True))


def interleave(
    calls: dict[str, Callable[[str], object]],
    queries: Sequence[str],
    rounds: int,
    block: int,
    server_pid: int | None = None,
) -> dict[str, Tally]:
    """Per round, one block of ``block`` calls of each variant, in rotating order, all on
    the same queries (the next slice of ``queries`` each round); an untimed warm-up block
    of each variant first."""
    for call in calls.values():
        for query in queries[:block]:
            call(query)
    tallies = {name: Tally(server_pid) for name in calls}
    cycle = list(queries) * (block // len(queries) + 2)
    for index in range(rounds):
        start = index * block % len(queries)
        chunk = cycle[start : start + block]
        for name in rotated(list(calls), index):
            call, tally = calls[name], tallies[name]
            mark = tally.start()
            latencies = []
            for query in chunk:
                started = time.perf_counter()
                call(query)
                latencies.append(time.perf_counter() - started)
            tally.stop(mark, len(chunk))
            tally.samples.extend(latencies)
            tally.blocks.append(statistics.median(latencies))
    return tallies


def target(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def cpu_count() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    total = os.cpu_count()
    return f"{total} CPUs" + (f" ({usable} usable)" if usable not in (None, total) else "")


def process_cpu(pid: int | None) -> float:
    """User + system CPU seconds of another process so far (Linux ``/proc``; 0 elsewhere)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Corpus:
    """Seeded synthetic text with a Zipf word distribution (as in bench_server.py)."""

    def __init__(self, seed: int = 7, vocabulary: int = 20_000) -> None:
        self.random = random.Random(seed)
        self.words = [self._word(i) for i in range(vocabulary)]
        self.cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(vocabulary)))

    @staticmethod
    def _word(index: int) -> str:
        n, out = index + 1, []
        while n:
            n, r = divmod(n, 26)
            out.append("abcdefghijklmnopqrstuvwxyz"[r])
        return "".join(out) + "e"

    def words_like(self, count: int) -> list[str]:
        return self.random.choices(self.words, cum_weights=self.cumulative, k=count)

    def sentence(self) -> str:
        return " ".join(self.words_like(self.random.randint(10, 20)))

    def query(self) -> str:
        return " ".join(self.words_like(3))


# --- the server process -------------------------------------------------------------------


def fill(client: A2MClient, contents: Sequence[str]) -> None:
    """Write ``contents`` as episodic records, in batches of 256 through ``remember``."""
    for offset in range(0, len(contents), BATCH):
        batch = contents[offset : offset + BATCH]
        client.remember([{"content": content, "tier": "episodic"} for content in batch])


# --- 1. sync client vs raw httpx ----------------------------------------------------------


def capture_requests(url: str, queries: Sequence[str]) -> tuple[list[bytes], dict[str, str]]:
    """The exact bodies (and headers) ``A2MClient.recall`` sends for ``queries``."""
    seen: list[httpx.Request] = []
    with httpx.Client(event_hooks={"request": [seen.append]}) as http:
        client = A2MClient(url, http_client=http)
        for query in queries:
            client.recall(query, limit=TOP_K)
        client.close()
    recalls = [r for r in seen if b'"memory/recall"' in r.content]
    assert len(recalls) == len(queries), "expected one recall request per query"
    keep = ("content-type", "accept", "a2m-protocol-version", "authorization")
    headers = {k: v for k, v in recalls[0].headers.items() if k.lower() in keep}
    return [r.content for r in recalls], headers


def sync_http(
    url: str, queries: list[str], rounds: int, block: int, server_pid: int
) -> dict[str, Tally]:
    bodies, headers = capture_requests(url, queries)
    body_of = dict(zip(queries, bodies, strict=True))
    client = A2MClient(url)
    client.recall(queries[0], limit=TOP_K)  # negotiates: the describe is not timed
    raw = httpx.Client()

    def typed(query: str) -> object:
        return client.recall(query, limit=TOP_K).records

    def post(query: str) -> object:
        response = raw.post(url, content=body_of[query], headers=headers)
        assert response.status_code == 200
        return response

    def post_json(query: str) -> object:
        response = raw.post(url, content=body_of[query], headers=headers)
        assert response.status_code == 200
        return response.json()["result"]["records"]

    found = client.recall(queries[0], limit=TOP_K).records
    assert found, "recall found nothing: the store was not filled"
    try:
        return interleave(
            {"A2MClient.recall": typed, "raw post": post, "raw post + .json()": post_json},
            queries,
            rounds,
            block,
            server_pid,
        )
    finally:
        client.close()
        raw.close()


# --- 2. async: 64 concurrent vs 64 sequential ---------------------------------------------


POOLS: dict[str, httpx.Limits | None] = {
    "default pool (100/20)": None,
    f"pool {CONCURRENCY}/{CONCURRENCY}": httpx.Limits(
        max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY
    ),
    "pool 8/8": httpx.Limits(max_connections=8, max_keepalive_connections=8),
}
NO_SNIFFIO = "default pool, sniffio import cached"
"""httpcore 1.0 runs ``import sniffio`` on every lock/event set-up and falls back to
asyncio when it fails; since anyio 4.11 no longer pulls sniffio in, each of those is a
failed import that scans sys.path. ``sys.modules["sniffio"] = None`` makes the import fail
at once, which costs what installing sniffio would; this variant shows the difference."""


async def async_http(
    url: str, queries: list[str], rounds: int, server_pid: int
) -> dict[str, Tally]:
    batch = queries[:CONCURRENCY]
    pools = {label: httpx.AsyncClient(limits=limits) for label, limits in POOLS.items() if limits}
    clients = {label: AsyncA2MClient(url, http_client=pools.get(label)) for label in POOLS}
    sniffio_missing = importlib.util.find_spec("sniffio") is None
    if sniffio_missing:
        clients[NO_SNIFFIO] = AsyncA2MClient(url)

    async def sequential(client: AsyncA2MClient) -> None:
        for query in batch:
            await client.recall(query, limit=TOP_K)

    async def concurrent(client: AsyncA2MClient) -> None:
        await asyncio.gather(*(client.recall(query, limit=TOP_K) for query in batch))

    async def run(label: str, how: Callable[[AsyncA2MClient], Awaitable[None]]) -> None:
        if label != NO_SNIFFIO:
            return await how(clients[label])
        sys.modules["sniffio"] = None  # type: ignore[assignment]
        try:
            return await how(clients[label])
        finally:
            del sys.modules["sniffio"]

    variants = {}
    for label, client in clients.items():
        await client.recall(batch[0], limit=TOP_K)  # negotiate
        variants[f"sequential, {label}"] = (label, sequential)
        variants[f"gather {CONCURRENCY}, {label}"] = (label, concurrent)
    for label, how in variants.values():  # warm-up, untimed
        await run(label, how)
    tallies = {name: Tally(server_pid) for name in variants}
    for index in range(rounds):
        for name in rotated(list(variants), index):
            tally = tallies[name]
            mark = tally.start()
            await run(*variants[name])
            tally.blocks.append(len(batch) / tally.stop(mark, len(batch)))
    for client in clients.values():
        await client.aclose()
    for pool in pools.values():
        await pool.aclose()
    return tallies


# --- 2b. the same, across a network --------------------------------------------------------

NETWORK_DELAY = 0.005
"""One-way delay of the stand-in network: 10 ms round trips, as between two hosts of a region."""


class DelayProxy:
    """A TCP proxy on loopback that holds every chunk ``delay`` seconds in each direction:
    a network between client and server, so calls wait on I/O as they do in production."""

    def __init__(self, upstream_port: int, delay: float) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        self.ready.wait(10)
        return f"http://127.0.0.1:{self.port}/"

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()
        server.close()
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(server.wait_closed())
        self.loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        # Cancelled when the proxy shuts down: a quiet end, not an error to report.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        for end in (writer, up_writer):
            end.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def receive() -> None:
            while data := await reader.read(65536):
                await queue.put((loop.time() + self.delay, data))
            await queue.put((loop.time() + self.delay, b""))

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        with contextlib.suppress(ConnectionError):
            await asyncio.gather(receive(), deliver())


async def across_network(url: str, queries: list[str], rounds: int) -> dict[str, Tally]:
    """Sequential vs gathered recalls through :class:`DelayProxy`, default client."""
    batch = queries[:CONCURRENCY]
    client = AsyncA2MClient(url)
    await client.recall(batch[0], limit=TOP_K)  # negotiate, untimed

    async def sequential() -> None:
        for query in batch:
            await client.recall(query, limit=TOP_K)

    async def concurrent() -> None:
        await asyncio.gather(*(client.recall(query, limit=TOP_K) for query in batch))

    variants = {"sequential": sequential, f"gather {CONCURRENCY}": concurrent}
    tallies = {name: Tally(None) for name in variants}
    for index in range(rounds):
        for name in rotated(list(variants), index):
            tally = tallies[name]
            mark = tally.start()
            await variants[name]()
            tally.blocks.append(len(batch) / tally.stop(mark, len(batch)))
    await client.aclose()
    return tallies


# --- 3. in-process ------------------------------------------------------------------------


class _Recorder:
    """A ConnectableServer that records the JSON text the in-process transport hands over."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server
        self.texts: list[str] = []

    def connect(self, *, notify: Any = None) -> Any:
        connection = self.server.connect(notify=notify)
        recorder = self

        class Recording:
            def handle(self, message: str) -> str | None:
                recorder.texts.append(message)
                return connection.handle(message)

            def close(self) -> None:
                connection.close()

        return Recording()


def in_process(
    contents: Sequence[str], queries: list[str], rounds: int, block: int
) -> dict[str, Tally]:
    server = A2MServer()
    client = A2MClient.in_process(server)
    fill(client, contents)
    recorder = _Recorder(server)
    capture = A2MClient.in_process(recorder)
    for query in queries:
        capture.recall(query, limit=TOP_K)
    texts = [text for text in recorder.texts if '"memory/recall"' in text]
    text_of = dict(zip(queries, texts, strict=True))
    connection = server.connect()

    def typed(query: str) -> object:
        return client.recall(query, limit=TOP_K).records

    def handle(query: str) -> object:
        return connection.handle(text_of[query])

    def call(query: str) -> object:
        return connection.call("memory/recall", {"query": query, "limit": TOP_K})["records"]

    try:
        return interleave(
            {
                "A2MClient.in_process().recall": typed,
                "connection.handle(text)": handle,
                "connection.call(...)": call,
            },
            queries,
            rounds,
            block,
        )
    finally:
        capture.close()
        client.close()
        connection.close()
        server.close()


# --- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000, help="records in the store")
    parser.add_argument("--block", type=int, default=20, help="calls per block (1 and 3)")
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (1 and 3)")
    parser.add_argument("--batches", type=int, default=10, help=f"rounds of {CONCURRENCY} (2)")
    args = parser.parse_args()
    corpus = Corpus()
    queries = list(dict.fromkeys(corpus.query() for _ in range(1000)))[:200]
    contents = [corpus.sentence() for _ in range(args.records)]
    workdir = Path(tempfile.mkdtemp(prefix="a2m-bench-client-"))
    us = 1e6
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    print(
        f"python {sys.version.split()[0]}, httpx {httpx.__version__}, "
        f"httpcore {metadata.version('httpcore')}, uvicorn {metadata.version('uvicorn')}, "
        f"{cpu_count()}, load average {load_average()} at start"
    )
    print(
        f"{args.records:,} lexical records, recall limit {TOP_K}, {len(queries)} seeded queries; "
        f"variants interleaved in rotating order, {args.rounds} rounds of {args.block}-call "
        f"blocks (2: {args.batches} rounds); ratios are medians of per-round ratios"
    )

    server = ServerProcess(workdir / "bench.db")
    try:
        server.wait_ready()
        with A2MClient(server.url) as loader:
            fill(loader, contents)

        print(f"\n== 1. sync HTTP against a2m-server serve (own process, pid {server.pid}) ==")
        sync = sync_http(server.url, queries, args.rounds, args.block, server.pid)
        for name, tally in sync.items():
            print(
                f"{name:<20} p50 {p50(tally.samples) * us:5.0f} µs  p99 "
                f"{p99(tally.samples) * us:6.0f} µs | per call: client CPU "
                f"{tally.per_call_us(tally.client_cpu):5.0f} µs, server CPU "
                f"{tally.per_call_us(tally.server_cpu):5.0f} µs"
            )
        vs_post = paired_ratio(sync["A2MClient.recall"], sync["raw post"])
        vs_json = paired_ratio(sync["A2MClient.recall"], sync["raw post + .json()"])

        print(f"\n== 2. AsyncA2MClient, {CONCURRENCY} recalls: gather vs one by one ==")
        tallies = asyncio.run(async_http(server.url, queries, args.batches, server.pid))
        for name, tally in tallies.items():
            print(
                f"{name:<50} {p50(tally.blocks):4.0f} calls/s | per call: wall "
                f"{tally.per_call_us(tally.wall):5.0f} µs, client CPU "
                f"{tally.per_call_us(tally.client_cpu):5.0f} µs, server CPU "
                f"{tally.per_call_us(tally.server_cpu):5.0f} µs"
            )
        speedups = {}
        for name in tallies:
            if not name.startswith("sequential, "):
                continue
            label = name.removeprefix("sequential, ")
            one, many = tallies[name], tallies[f"gather {CONCURRENCY}, {label}"]
            speedups[label] = paired_ratio(many, one)
            # A sequential call needs the client's CPU, then the server's, one after the
            # other. Gathered calls can at best overlap them: each side is one process, so at
            # most one core (GIL), and together they have `cpus` cores. So even on an idle
            # machine the speedup cannot beat this ceiling (≤ cpus):
            serial = (one.client_cpu + one.server_cpu) / one.calls
            overlapped = (
                max(many.client_cpu, many.server_cpu, (many.client_cpu + many.server_cpu) / cpus)
                / many.calls
            )
            print(
                f"  {label:<36} speedup {speedups[label]:4.2f}x; CPU-bound ceiling on an idle "
                f"{cpus}-core machine {serial / overlapped:4.2f}x"
            )

        delay_ms = NETWORK_DELAY * 1000
        print(
            f"\n== 2b. the same {CONCURRENCY} recalls across a network ({delay_ms:.0f} ms each way, "
            "a delaying TCP proxy) =="
        )
        with DelayProxy(server.port, NETWORK_DELAY) as proxied:
            networked = asyncio.run(across_network(proxied, queries, max(3, args.batches // 2)))
        for name, tally in networked.items():
            print(f"{name:<20} {p50(tally.blocks):5.0f} calls/s")
        network_speedup = paired_ratio(networked[f"gather {CONCURRENCY}"], networked["sequential"])
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print("\n== 3. in-process transport, A2MServer() in memory, same records and queries ==")
    local = in_process(contents, queries, args.rounds, args.block)
    for name, tally in local.items():
        print(
            f"{name:<30} p50 {p50(tally.samples) * us:5.0f} µs  p99 "
            f"{p99(tally.samples) * us:6.0f} µs"
        )
    typed = local["A2MClient.in_process().recall"]
    handle, call = local["connection.handle(text)"], local["connection.call(...)"]
    over_handle = statistics.median(a - b for a, b in zip(typed.blocks, handle.blocks, strict=True))
    over_call = statistics.median(a - b for a, b in zip(typed.blocks, call.blocks, strict=True))

    print(f"\n== summary (load average {load_average()} at end) ==")
    for name, ratio in (("raw post", vs_post), ("raw post + .json()", vs_json)):
        print(
            f"1. A2MClient.recall / {name:<19} {ratio:5.2f}x  target ≤ 1.05  "
            f"{target(ratio <= 1.05)}"
        )
    for label, speedup in speedups.items():
        print(
            f"2. gather {CONCURRENCY} / sequential, {label:<36} {speedup:5.2f}x  target ≥ 3  "
            f"{target(speedup >= 3)}"
        )
    print(
        f"2b. gather {CONCURRENCY} / sequential across {NETWORK_DELAY * 1000:.0f} ms each way"
        f"{'':<17} {network_speedup:5.2f}x  target ≥ 3  {target(network_speedup >= 3)}"
    )
    print(
        f"3. in-process A2MClient.recall overhead: {over_handle * us:+.0f} µs/call over "
        f"connection.handle(text) ({paired_ratio(typed, handle):.2f}x), "
        f"{over_call * us:+.0f} µs/call over connection.call ({paired_ratio(typed, call):.2f}x); "
        "no target"
    )


if __name__ == "__main__":
    main()

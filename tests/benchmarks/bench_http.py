"""HTTP-path and ranking benchmark, everything in one run: in-process against HTTP for
recall, fetch, describe and remember; the typed client against a raw httpx post; what
the lexical posting budget costs in relevance (bench_quality.py); and R@1/R@5/MRR on the
held-out half of the memory-QA set against an earlier release and exact FTS5 BM25
(recall_quality/evaluate.py). Prints figures side by side; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_http.py [--sizes 10000,100000,1000000]
                                                 [--queries 200] [--rounds 12]
                                                 [--quality-sizes 20000,100000]
                                                 [--skip-http] [--skip-floor]
                                                 [--skip-quality] [--skip-recall-quality]

A quick run: ``--sizes 10000 --queries 100 --rounds 6``.

The workload is the HTTP speed issue's: each record is 12 words drawn from a 70-word
vocabulary plus one unique token, queries are three such words, and writes go in batches
of 200. The HTTP server is ``python -m a2m_server serve`` in its own process on a file of
its own (WAL, acknowledged = committed); the in-process figures come from an
:class:`A2MServer` in this process on another file holding the same records, driven with
JSON text (``Connection.handle``) so both sides parse and encode.

Load from other work on the machine comes and goes, so the compared variants run in short
interleaved blocks in rotating order, and every ratio is the median of per-round ratios
(see ``bench_client.interleave``). The recall rows are measured three ways on the same
load: in-process, a raw httpx post of the body, and the typed ``A2MClient`` over HTTP
(``(client)``, the issue's target row: everything a caller pays, parsing included).

After the HTTP table, ``bench_http_floor.py`` prints the floor under the recall gap: a bare
uvicorn app spending the measured in-process recall time on a worker thread, reached by
the same client, with no A2M code on its request path."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_client import (
    ServerProcess,
    cpu_count,
    interleave,
    load_average,
    p50,
    p99,
    paired_ratio,
    target,
)

from a2m import A2MClient
from a2m_server import A2MServer, Connection
from a2m_types import PROTOCOL_HEADER, PROTOCOL_VERSION

BATCH = 200
TOP_K = 10
VOCABULARY = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "iota", "kappa", "lambda",
    "sigma", "omega", "amber", "basil", "cedar", "dune", "ember", "fjord", "grove", "harbor",
    "island", "jungle", "kelp", "lagoon", "meadow", "nectar", "orchid", "prairie", "quartz",
    "river", "savanna", "tundra", "umber", "valley", "willow", "yarrow", "zephyr", "anchor",
    "beacon", "canyon", "delta2", "engine", "falcon", "glacier", "horizon", "indigo", "jasper",
    "kernel", "lantern", "marble", "nebula", "oasis", "pepper", "quiver", "rocket", "summit",
    "timber", "utopia", "vertex", "walnut", "xenon", "yonder", "zenith", "atlas", "bramble",
    "copper", "drift", "echo", "flint", "garnet",
]  # fmt: skip
assert len(VOCABULARY) == 70


def record_text(rng: random.Random, serial: int) -> str:
    return " ".join(rng.choices(VOCABULARY, k=12)) + f" u{serial:07d}"


def query_text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCABULARY, k=3))


def rpc_body(method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def batches(size: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for offset in range(0, size, BATCH):
        count = min(BATCH, size - offset)
        records = [{"content": record_text(rng, offset + i)} for i in range(count)]
        out.append(rpc_body("memory/remember", {"records": records}))
    return out


def checked(answer: str | bytes | None) -> None:
    assert answer is not None
    head = answer[:60] if isinstance(answer, str) else answer[:60].decode()
    assert '"error"' not in head, answer[:300]


class Sides:
    """The same store contents behind an in-process connection and an HTTP server."""

    def __init__(self, workdir: Path, size: int) -> None:
        self.workdir = workdir
        self.size = size
        self.local_server = A2MServer(db=workdir / f"local-{size}.db")
        self.local: Connection = self.local_server.connect()
        self.process = ServerProcess(workdir / f"http-{size}.db")
        self.process.wait_ready()
        self.url = self.process.url
        self.http = httpx.Client(timeout=60)
        self.client = A2MClient(self.url)

    def fill(self, written: int) -> tuple[float, float]:
        """Top both stores up from ``written`` to ``size`` records; returns records/s
        (in-process, HTTP), each measured over the same batches."""
        bodies = batches(self.size - written, seed=self.size)
        local_s = http_s = 0.0
        for body in bodies:
            started = time.perf_counter()
            checked(self.local.handle(body))
            local_s += time.perf_counter() - started
            started = time.perf_counter()
            response = self.http.post(self.url, content=body)
            http_s += time.perf_counter() - started
            checked(response.content)
        count = self.size - written
        return count / local_s, count / http_s

    def close(self) -> None:
        self.client.close()
        self.http.close()
        self.process.stop()
        self.local.close()
        self.local_server.close()


def compare(
    sides: Sides,
    method: str,
    make_params: Callable[[str], dict[str, object]],
    args: argparse.Namespace,
    typed: Callable[[str], object] | None = None,
) -> list[tuple[float, float, float, float, float]]:
    """p50/p99 in-process and over HTTP, and the paired ratio HTTP / in-process: for a raw
    httpx post, then (given ``typed``, the typed client's call) for the typed client, all
    interleaved on the same load."""
    rng = random.Random(11)
    queries = [query_text(rng) for _ in range(args.queries)]
    bodies = {q: rpc_body(method, make_params(q)) for q in queries}

    def local(query: str) -> object:
        return sides.local.handle(bodies[query])

    def http(query: str) -> object:
        return sides.http.post(sides.url, content=bodies[query]).content

    calls: dict[str, Callable[[str], object]] = {"local": local, "http": http}
    if typed is not None:
        calls["typed"] = typed
    tallies = interleave(calls, queries, args.rounds, args.block, sides.process.pid)
    a = tallies["local"].samples
    rows = []
    for name in [name for name in calls if name != "local"]:
        b = tallies[name].samples
        rows.append(
            (
                p50(a) * 1e3,
                p99(a) * 1e3,
                p50(b) * 1e3,
                p99(b) * 1e3,
                paired_ratio(tallies[name], tallies["local"]),
            )
        )
    return rows


def client_vs_raw(
    sides: Sides, args: argparse.Namespace
) -> tuple[float, float, float, list[float]]:
    """The typed client's recall against a raw post (+ .json()) of the same body."""
    rng = random.Random(12)
    queries = [query_text(rng) for _ in range(args.queries)]
    headers = {"Content-Type": "application/json", PROTOCOL_HEADER: PROTOCOL_VERSION}
    client = sides.client
    client.recall(queries[0], limit=TOP_K)  # negotiates; the describe is not timed

    def typed(query: str) -> object:
        return client.recall(query, limit=TOP_K).records

    def raw(query: str) -> object:
        body = rpc_body("memory/recall", {"query": query, "limit": TOP_K})
        response = sides.http.post(sides.url, content=body, headers=headers)
        return response.json()["result"]["records"]

    tallies = interleave({"typed": typed, "raw": raw}, queries, args.rounds, args.block)
    ratios = [x / y for x, y in zip(tallies["typed"].blocks, tallies["raw"].blocks, strict=True)]
    return (
        p50(tallies["typed"].samples) * 1e3,
        p50(tallies["raw"].samples) * 1e3,
        statistics.median(ratios),
        ratios,
    )


def http_section(args: argparse.Namespace, workdir: Path) -> list[tuple[str, ...]]:
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"\n== in-process vs HTTP ({', '.join(f'{s:,}' for s in sizes)} records) ==")
    rows: list[tuple[str, ...]] = []
    for size in sizes:
        sides = Sides(workdir, size)
        try:
            local_rate, http_rate = sides.fill(0)
            print(f"{size:>9,} records written; load {load_average()}")
            print(
                f"{size:>9,} remember, batches of {BATCH}: in-process {local_rate:8,.0f} rec/s"
                f" | HTTP {http_rate:8,.0f} rec/s  (target >= 20,000: {target(http_rate >= 20_000)})"
            )
            client = sides.client
            client.describe()  # negotiated once, untimed
            for label, method, params, typed in (
                (
                    "recall limit 10",
                    "memory/recall",
                    lambda q: {"query": q, "limit": TOP_K},
                    lambda q, c=client: c.recall(q, limit=TOP_K),
                ),
                (
                    "recall limit 1",
                    "memory/recall",
                    lambda q: {"query": q, "limit": 1},
                    lambda q, c=client: c.recall(q, limit=1),
                ),
                (
                    "fetch missing",
                    "memory/fetch",
                    lambda q: {"key": "missing/" + q.replace(" ", "-")},
                    None,
                ),
                ("describe", "memory/describe", lambda q: {}, None),
            ):
                measured = compare(sides, method, params, args, typed)
                for suffix, (lp50, lp99, hp50, hp99, ratio) in zip(
                    ("", " (client)"), measured, strict=False
                ):
                    rows.append(
                        (f"{size:,}", label + suffix, lp50, lp99, hp50, hp99, hp50 - lp50, ratio)
                    )
            well_known = sides.url.rstrip("/") + "/.well-known/a2m-server.json"
            samples = []
            for _ in range(args.queries):
                started = time.perf_counter()
                sides.http.get(well_known)
                samples.append((time.perf_counter() - started) * 1e3)
            rows.append(
                (f"{size:,}", "GET well-known", 0.0, 0.0, p50(samples), p99(samples), 0.0, 0.0)
            )
            typed, raw, ratio, ratios = client_vs_raw(sides, args)
            spread = f"{min(ratios):.3f}..{max(ratios):.3f}"
            print(
                f"{size:>9,} typed client recall p50 {typed:.3f} ms | raw httpx post+json {raw:.3f} ms"
                f" | ratio {ratio:.3f} (rounds {spread}; target <= 1.05: {target(ratio <= 1.05)})"
            )
        finally:
            sides.close()
    print(
        f"\n{'records':>9} {'call':<25} {'in-proc p50':>11} {'p99':>7} {'HTTP p50':>9} "
        f"{'p99':>7} {'HTTP-local':>10} {'ratio':>6}"
    )
    for size, label, lp50, lp99, hp50, hp99, gap, ratio in rows:
        local = f"{lp50:11.3f} {lp99:7.3f}" if lp50 else f"{'—':>11} {'—':>7}"
        extra = f"{gap:+10.3f} {ratio:6.2f}" if lp50 else f"{'':>10} {'':>6}"
        print(f"{size:>9} {label:<25} {local} {hp50:9.3f} {hp99:7.3f} {extra}")
    print(
        "rows: HTTP = a raw httpx post of the body; (client) = the typed A2MClient over HTTP, "
        "interleaved with them"
    )
    print("targets: recall HTTP p50 <= in-process p50 + 0.6 ms; describe HTTP p50 <= 1 ms")
    for size, label, _, _, _, _, gap, _ in rows:
        if label.startswith("recall limit 10"):
            print(f"  {size:>9} {label:<25} gap {gap:+.3f} ms: {target(gap <= 0.6)}")
    print(f"load {load_average()}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="record counts, comma separated")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--quality-sizes", default="20000")
    parser.add_argument("--skip-recall-quality", action="store_true")
    parser.add_argument("--baseline-ref", default="6d4fa91", help="release to compare recall with")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {cpu_count()}, load {load_average()}")
    with tempfile.TemporaryDirectory(prefix="a2m-bench-http-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, workdir: Path) -> None:
    if not args.skip_http:
        rows = http_section(args, workdir)
        if not args.skip_floor:
            from bench_http_floor import floor_section

            recall = next(row for row in rows if row[1] == "recall limit 10")
            floor = floor_section(float(recall[2]), args.rounds)
            gap = floor["HTTP (httpx)"] - floor["in-process"]
            print(
                f"  recall limit 10 at {recall[0]} records: HTTP - in-process {recall[6]:+.3f} ms,"
                f" of which the floor is {gap:+.3f} ms"
            )
    if not args.skip_quality:
        from bench_quality import quality_section

        quality_section(args, workdir)
    if not args.skip_recall_quality:
        sys.path.insert(0, str(Path(__file__).resolve().parent / "recall_quality"))
        from evaluate import quality_rows, report

        print("\n== recall quality: memory-QA set, held-out half ==")
        report(*quality_rows("heldout", args.baseline_ref, workdir))


if __name__ == "__main__":
    main()

"""A2E memory host benchmark: store and retrieve messages per second over stdio, single and
batched, against the bundled server, beside the same work as plain A2M calls. Prints
figures; it is not a pass/fail test.

    uv run python tests/benchmarks/bench_a2e.py [--messages 500] [--batch 50] [--batches 20]
                                                [--queries 100]

The host is ``python -m a2m_a2e stdio --db FILE`` in its own process, spoken to in JSON lines
(it runs the bundled server as its own stdio subprocess). The baseline is an
:class:`~a2m.A2MClient` over stdio to ``python -m a2m_server stdio`` on another file, making
the A2M call the host makes for the same message (``memory/remember``, ``memory/timeline``
by key, ``memory/recall`` of ``max_recall_limit`` records, which the exact ``total`` needs;
``a2m-10`` is a recall of only the 10 returned, for scale). The two alternate call by call, so machine noise falls on both
alike; the ratio is host time over baseline time (above 1: the host costs more — one more
process hop and the JSON of the message)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import load_average, percentile

from a2m import A2MClient
from a2m_a2e import encode_key, new_message

WORDS = ["tea", "coffee", "hiking", "rust", "python", "lisbon", "porto", "jazz", "chess", "cats"]
NAMESPACE = "bench"


class Host:
    """The A2E host process, one JSON line each way per message."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "a2m_a2e", "stdio", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        response: dict[str, Any] = json.loads(self.process.stdout.readline())
        if response["type"] == "memory/error" or response.get("errors"):
            raise RuntimeError(response)
        return response

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


def entries(start: int, count: int, chooser: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "key": {"agent": "bench", "n": n},
            "content": {"note": " ".join(chooser.sample(WORDS, 3)), "n": n},
            "tier": "episodic",
            "tags": chooser.sample(WORDS, 2),
        }
        for n in range(start, start + count)
    ]


def records(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The A2M records a plain client writes for the same entries."""
    return [
        {
            "content": json.dumps(item["content"]),
            "key": f"{NAMESPACE}/{encode_key(item['key'])}",
            "metadata": {"tags": item["tags"], "value": item["content"]},
            "tier": item["tier"],
            "owner": "bench",
        }
        for item in batch
    ]


def timed(
    calls: list[tuple[Callable[[], Any], ...]], names: tuple[str, ...] = ("a2e", "a2m")
) -> dict[str, list[float]]:
    spent: dict[str, list[float]] = {name: [] for name in names}
    for index, variants in enumerate(calls):
        order = list(zip(names, variants, strict=True))
        for name, call in order if index % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            call()
            spent[name].append(time.perf_counter() - start)
    return spent


def report(title: str, spent: dict[str, list[float]], per_call: int = 1) -> None:
    print(f"\n== {title} ==")
    print(f"{'':<8}{'msgs/s':>10}{'items/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for name, samples in spent.items():
        rate = len(samples) / sum(samples)
        p50, p99 = percentile(samples, 0.5) * 1e3, percentile(samples, 0.99) * 1e3
        print(f"{name:<8}{rate:>10.1f}{rate * per_call:>10.1f}{p50:>10.2f}{p99:>10.2f}")
    ratio = statistics.median(spent["a2e"]) / statistics.median(spent["a2m"])
    print(f"a2e / a2m (median time): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--messages", type=int, default=500, help="single-entry stores, key lookups"
    )
    parser.add_argument("--batch", type=int, default=50, help="entries per batched store")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    chooser = random.Random(42)
    with tempfile.TemporaryDirectory() as folder:
        host = Host(Path(folder) / "a2e.db")
        command = [
            sys.executable,
            "-m",
            "a2m_server",
            "stdio",
            "--db",
            str(Path(folder) / "a2m.db"),
        ]
        try:
            with A2MClient.stdio(command) as client:
                memory = host.send(
                    new_message("memory/init/req", namespace=NAMESPACE, scope={"agent": "bench"})
                )["memory_id"]
                client.describe()  # negotiated before timing, as the host's init did

                def store(
                    batch: list[dict[str, Any]],
                ) -> tuple[Callable[[], Any], Callable[[], Any]]:
                    message = new_message("memory/store/req", memory_id=memory, entries=batch)
                    plain = records(batch)
                    return (lambda: host.send(message), lambda: client.remember(plain))

                singles = [store(entries(n, 1, chooser)) for n in range(args.messages)]
                report(f"store, 1 entry per message (x{args.messages})", timed(singles))
                base = args.messages
                batches = [
                    store(entries(base + b * args.batch, args.batch, chooser))
                    for b in range(args.batches)
                ]
                report(
                    f"store, {args.batch} entries per message (x{args.batches}); items = entries",
                    timed(batches),
                    per_call=args.batch,
                )

                def by_key(n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
                    key = {"agent": "bench", "n": n}
                    message = new_message("memory/retrieve/req", memory_id=memory, keys=[key])
                    where = {"key": [f"{NAMESPACE}/{encode_key(key)}"]}
                    return (
                        lambda: host.send(message),
                        lambda: client.timeline(where=where, owner="bench"),
                    )

                lookups = [by_key(chooser.randrange(args.messages)) for _ in range(args.messages)]
                report(f"retrieve by key (x{args.messages})", timed(lookups))

                # The exact ``total`` needs every match: the host recalls max_recall_limit
                # records (the a2m row) to answer limit 10; a2m-10 is a recall of 10 alone.
                def by_query(words: str) -> tuple[Callable[[], Any], ...]:
                    message = new_message(
                        "memory/retrieve/req", memory_id=memory, query=words, limit=10
                    )
                    return (
                        lambda: host.send(message),
                        lambda: client.recall(words, limit=1000, owner="bench"),
                        lambda: client.recall(words, limit=10, owner="bench"),
                    )

                queries = [
                    by_query(" ".join(chooser.sample(WORDS, 2))) for _ in range(args.queries)
                ]
                report(
                    f"retrieve by query, limit 10 (x{args.queries})",
                    timed(queries, ("a2e", "a2m", "a2m-10")),
                )
        finally:
            host.stop()
    print(f"\nload average: {load_average()}")


if __name__ == "__main__":
    main()

"""What the client's check of the JSON values it sends costs: preparing and encoding a
request (``a2m._core.prepare`` and ``encode_message``, no I/O) with the check, against the
same with the check switched off, in one process. Prints figures; it is not a pass/fail
test.

    uv run python tests/benchmarks/bench_client_checks.py [--records 100] [--dims 384]
                                                          [--rounds 15]

Three requests: a ``memory/remember`` batch of ``--records`` records with a ``--dims``-wide
vector and small metadata each (the write path, whose metadata the check walks), a
``memory/recall`` with a query and a ``where`` (the common read), and a batch whose metadata
holds non-ASCII text (which the shared check, not the fast proof, settles). The variants run
in short interleaved blocks, their order alternating each round; each ratio is the median of
the per-round ratios."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from a2m import _core as core
from a2m._types import NOT_GIVEN
from a2m.transports._base import encode_message


def _batch(records: int, dims: int, text: str) -> list[dict[str, Any]]:
    rng = random.Random(7)
    vector = [rng.random() for _ in range(dims)]
    return [
        {
            "content": f"record {index} about deploys",
            "key": f"bench/{index}",
            "embedding": list(vector),
            "metadata": {
                "source_framework": "bench",
                "tags": ["a", "b"],
                "n": index,
                "nested": {"p": 1.5, "note": text},
            },
        }
        for index in range(records)
    ]


def _timed(work: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        work()
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100, help="records per remember batch")
    parser.add_argument("--dims", type=int, default=384, help="vector width")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    args = parser.parse_args()

    ascii_batch = _batch(args.records, args.dims, "plain")
    text_batch = _batch(args.records, args.dims, "ünïcödé ✓")
    recall = {"query": "deploy the service", "limit": 10, "where": {"tags": ["a"]}}

    def remember(batch: list[dict[str, Any]]) -> Callable[[], object]:
        def work() -> object:
            call = core.prepare_remember(batch, NOT_GIVEN, NOT_GIVEN)
            return encode_message(core.build_request(call, 1))

        return work

    def recall_work() -> object:
        return encode_message(core.build_request(core.prepare(core.RECALL, recall), 1))

    real = core._check_carried
    cases: list[tuple[str, Callable[[], object], int]] = [
        (f"remember {args.records} x {args.dims}-d, ASCII metadata", remember(ascii_batch), 10),
        (f"remember {args.records} x {args.dims}-d, non-ASCII text", remember(text_batch), 10),
        ("recall with query and where", recall_work, 1000),
    ]
    print(f"{args.rounds} interleaved rounds; per-call medians; ratio = with / without check")
    for name, work, calls in cases:
        without: list[float] = []
        with_check: list[float] = []
        ratios: list[float] = []
        for round_number in range(args.rounds):
            order = (False, True) if round_number % 2 else (True, False)
            for checked in order:
                core._check_carried = real if checked else (lambda model, prefix: False)  # type: ignore[assignment]
                (with_check if checked else without).append(_timed(work, calls))
            ratios.append(with_check[-1] / without[-1])
        core._check_carried = real  # type: ignore[assignment]
        print(
            f"{name:<48} without {statistics.median(without) * 1e6:8.1f} µs  "
            f"with {statistics.median(with_check) * 1e6:8.1f} µs  "
            f"ratio {statistics.median(ratios):.3f}"
        )


if __name__ == "__main__":
    main()

"""The adapter contract refuses bad input with the client's typed errors: a value or meta
JSON cannot carry exactly (NaN, infinities, sets, bytes, tuples, keys that are not text,
lone surrogates, nesting past ``MAX_JSON_DEPTH``), a vector that is not numbers, text
with a lone surrogate in any argument, a ``where`` it cannot send — each an
:class:`~a2m.InvalidParams` (an :class:`~a2m.A2MError`), never a bare ``TypeError`` or
``UnicodeEncodeError``, and a batch holding one bad entry writes nothing. Over every
binding, sync and async."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter, AsyncA2MAdapter
from a2m_types.json_values import MAX_JSON_DEPTH

pytestmark = pytest.mark.anyio

SURROGATE = "lone \ud800"


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_VALUES = [
    math.nan,
    -math.inf,
    {"n": math.inf},
    {1, 2},
    b"bytes",
    (1, 2),
    {1: "int key"},
    {"text": SURROGATE},
    {SURROGATE: 1},
    _nested(MAX_JSON_DEPTH + 1),
    _nested(10_000),
]

# (method, args, kwargs) the adapter must refuse typed, for each binding and mode.
BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    *[("write", ("k", "semantic", value), {}) for value in BAD_VALUES],
    *[("write", ("k", "semantic", "v"), {"meta": {"tags": ["a"], "x": v}}) for v in BAD_VALUES],
    ("write", ("k", "semantic", "v"), {"embedding": [0.5, None]}),
    ("write", ("k", "semantic", "v"), {"embedding": [0.5, math.nan]}),
    ("write", ("k", "semantic", "v"), {"embedding": 3}),
    ("write", (SURROGATE, "semantic", "v"), {}),
    ("write_many", ([{"key": "ok", "type": "semantic", "value": 1}, {"key": "bad"}],), {}),
    (
        "write_many",
        (
            [
                {"key": "ok", "type": "semantic", "value": 1},
                {"key": "bad", "type": "semantic", "value": math.nan},
            ],
        ),
        {},
    ),
    ("read", (SURROGATE,), {}),
    ("delete", (SURROGATE,), {}),
    ("query", (), {"text": SURROGATE}),
    ("query", (), {"text": "q", "where": {"metadata.x": math.nan}}),
    ("query", (), {"text": "q", "where": {"metadata.x": {"$in": [{1, 2}]}}}),
    ("list", (), {"where": {"metadata.x": {"$gt": math.inf}}}),
]


async def _check(adapter: A2MAdapter | AsyncA2MAdapter, run: Callable[..., Any]) -> None:
    for method, args, kwargs in BAD_CALLS:
        try:
            await run(getattr(adapter, method), *args, **kwargs)
        except a2m.InvalidParams:
            continue
        except Exception as exc:  # the point: nothing but the client's typed errors
            pytest.fail(f"{method}{args!r:.80} raised {type(exc).__name__}: {exc}")
        pytest.fail(f"{method}{args!r:.80} {kwargs!r:.80} was accepted")
    listed = await run(adapter.list)
    assert listed.entries == []  # nothing of any refused call was written


async def test_the_sync_adapter_refuses_bad_input_typed(
    a2m_binding: str, a2m_client_factory: Any
) -> None:
    client: A2MClient = a2m_client_factory(a2m_binding)

    async def run(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    await _check(A2MAdapter(client, "json/values", source_framework="test"), run)


async def test_the_async_adapter_refuses_bad_input_typed(
    a2m_binding: str, a2m_async_client_factory: Any
) -> None:
    client: AsyncA2MClient = a2m_async_client_factory(a2m_binding)

    async def run(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await method(*args, **kwargs)

    await _check(AsyncA2MAdapter(client, "json/values", source_framework="test"), run)

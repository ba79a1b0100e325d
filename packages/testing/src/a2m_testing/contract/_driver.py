"""How a scenario's adapter calls are made: a scenario is a generator that yields the call
it wants (``yield adapter.write(…)`` builds the call, it does not make it) and receives the
result, so one body runs against a sync adapter (:func:`run`) and an async one
(:func:`run_async`, which awaits each call). Only these two loops differ between the suites."""

from __future__ import annotations

import inspect
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ADAPTER", "OTHER", "Call", "Handle", "Scenario", "run", "run_async"]

ADAPTER, OTHER = "adapter", "other_adapter"


@dataclass(frozen=True)
class Call:
    """One adapter method call a scenario asks for."""

    target: str
    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    collect: bool = False
    """The method returns an iterator (async: an async iterator); the result is the list
    of what it yields, and the iterator itself as ``(items, iterator)``."""

    def __str__(self) -> str:
        given = [repr(arg) for arg in self.args]
        given += [f"{name}={value!r}" for name, value in self.kwargs.items()]
        return f"{self.target}.{self.method}({', '.join(given)})"


class Handle:
    """Stands for an adapter inside a scenario: each method returns the :class:`Call` to
    yield. Only the arguments a scenario gives are passed, so the adapter's own defaults
    (``top_k=5``, ``embedding=None``…) are exercised too."""

    def __init__(self, target: str, namespace: str) -> None:
        self.target = target
        self.namespace = namespace

    def write(
        self,
        key: str,
        type: str,
        value: Any,
        embedding: Sequence[float] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Call:
        options = _given(embedding=list(embedding) if embedding is not None else None, meta=meta)
        return Call(self.target, "write", (key, type, value), options)

    def read(self, key: str) -> Call:
        return Call(self.target, "read", (key,))

    def query(
        self,
        embedding: Sequence[float] | None = None,
        type: str | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        *,
        text: str | None = None,
        tags: Sequence[str] | None = None,
        recursive: bool = False,
        where: Mapping[str, Any] | None = None,
    ) -> Call:
        options = _given(
            embedding=list(embedding) if embedding is not None else None,
            type=type,
            top_k=top_k,
            min_score=min_score,
            text=text,
            tags=list(tags) if tags is not None else None,
            recursive=recursive or None,
            where=dict(where) if where is not None else None,
        )
        return Call(self.target, "query", (), options)

    def delete(self, key: str) -> Call:
        return Call(self.target, "delete", (key,))

    def write_many(self, entries: Sequence[Mapping[str, Any]]) -> Call:
        return Call(self.target, "write_many", ([dict(entry) for entry in entries],))

    def read_many(self, keys: Sequence[str], *, namespace: str | None = None) -> Call:
        return Call(self.target, "read_many", (list(keys),), _given(namespace=namespace))

    def delete_many(self, keys: Sequence[str]) -> Call:
        return Call(self.target, "delete_many", (list(keys),))

    def list(self, **options: Any) -> Call:
        return Call(self.target, "list", (), _given(**options))

    def iter_entries(self, **options: Any) -> Call:
        """Yields ``(entries, iterator)``: everything the iterator gave, and the iterator
        (its ``truncated`` says whether the listing hit the server's cap)."""
        return Call(self.target, "iter_entries", (), _given(**options), collect=True)


Scenario = Generator[Call, Any, None]
"""A contract check: yields calls, receives their results, asserts."""


def run(scenario: Scenario, adapters: Mapping[str, Any]) -> None:
    """Drive ``scenario`` against sync adapters (``{"adapter": …, "other_adapter": …}``).

    A call that raises is thrown back into the scenario at the ``yield`` that asked for it,
    so a failure's traceback points at the contract's line."""
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            call = scenario.send(result) if failure is None else scenario.throw(failure)
        except StopIteration:
            return
        result, failure = None, None
        try:
            result = getattr(adapters[call.target], call.method)(*call.args, **call.kwargs)
            if call.collect:
                result = (list(result), result)
        except Exception as exc:
            failure = exc


async def run_async(scenario: Scenario, adapters: Mapping[str, Any]) -> None:
    """:func:`run` for async adapters: every call is awaited."""
    result: Any = None
    failure: BaseException | None = None
    while True:
        try:
            call = scenario.send(result) if failure is None else scenario.throw(failure)
        except StopIteration:
            return
        result, failure = None, None
        try:
            pending = getattr(adapters[call.target], call.method)(*call.args, **call.kwargs)
            if call.collect:
                if not hasattr(pending, "__aiter__"):
                    raise TypeError(
                        f"{call} returned {type(pending).__name__}, not an async iterator"
                    )
                result = ([item async for item in pending], pending)
                continue
            if not inspect.isawaitable(pending):
                raise TypeError(
                    f"{call} returned {type(pending).__name__}, not an awaitable: "
                    "AsyncAdapterContract tests async adapters; use AdapterContract for a "
                    "sync one"
                )
            result = await pending
        except Exception as exc:
            failure = exc


def _given(**options: Any) -> dict[str, Any]:
    return {name: value for name, value in options.items() if value is not None}

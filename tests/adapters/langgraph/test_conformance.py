"""A2MSaver against LangGraph's own checkpointer conformance suite, on every binding."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from langgraph.checkpoint.conformance import checkpointer_test, validate

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain.langgraph import A2MSaver
from a2m_server.server import A2MServer


def _report(make_client: object) -> object:
    @checkpointer_test(name="A2MSaver")
    async def saver() -> AsyncIterator[A2MSaver]:
        client = make_client()  # type: ignore[operator]
        yield A2MSaver(client)
        if isinstance(client, AsyncA2MClient):
            await client.aclose()
        else:
            client.close()

    return asyncio.run(validate(saver))


def _check(report: object) -> None:
    results = report.results  # type: ignore[attr-defined]
    failures = {name: r.failures for name, r in results.items() if r.failures}
    assert not failures, failures
    assert report.passed_all_base()  # type: ignore[attr-defined]
    for extended in ("copy_thread", "delete_for_runs", "prune"):
        assert results[extended].detected, extended
        assert results[extended].passed, extended


def test_conformance_async_client_in_process(server: A2MServer) -> None:
    _check(_report(lambda: AsyncA2MClient.in_process(server)))


def test_conformance_sync_client_in_process(server: A2MServer) -> None:
    _check(_report(lambda: A2MClient.in_process(server)))


def test_conformance_async_client_over_http(http_url: str) -> None:
    _check(_report(lambda: AsyncA2MClient(http_url)))


def test_conformance_async_client_over_rest(http_url: str) -> None:
    _check(_report(lambda: AsyncA2MClient.rest(http_url, namespace="langgraph")))


def test_conformance_over_authenticated_http(server: A2MServer) -> None:
    from a2m_testing.servers import serve_http

    with serve_http(server, tokens={"token-a": "alice"}) as url:
        _check(_report(lambda: AsyncA2MClient(url, token="token-a")))

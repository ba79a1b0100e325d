"""Whom an adapter's connection acts as, where several principals hold one key: learnt
from ``memory/describe``'s ``owner`` where the server reports it (the bundled server does,
with ``scopes``), so such a key costs no ``memory/fetch``; elsewhere from the fetch, with
the same answer."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from a2m import A2MClient, DescribeResult
from a2m._adapter_owners import Caller
from a2m.adapter import A2MAdapter
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http


@pytest.fixture
def url(a2m_server: A2MServer) -> Iterator[str]:
    with serve_http(a2m_server, tokens={"token-a": "alice", "token-b": "bob"}) as served:
        yield served


class _Counting(httpx.BaseTransport):
    """Real HTTP, counting the calls by method; ``unreported`` drops describe's ``owner``,
    as a server without the extension answers."""

    def __init__(self, *, unreported: bool) -> None:
        self._inner = httpx.HTTPTransport()
        self.unreported = unreported
        self.calls: Counter[str] = Counter()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        method = json.loads(request.content or b"{}").get("method", "")
        self.calls[method] += 1
        response = self._inner.handle_request(request)
        if method != "memory/describe" or not self.unreported:
            return response
        answer = json.loads(response.read())
        answer["result"].pop("owner", None)
        return httpx.Response(response.status_code, json=answer)

    def close(self) -> None:
        self._inner.close()


@pytest.mark.parametrize("reported", [True, False], ids=["reported", "unreported"])
def test_a_fresh_adapter_reads_its_own_record_at_a_key_two_principals_hold(
    url: str, reported: bool
) -> None:
    with A2MClient(url, token="token-a") as alice, A2MClient(url, token="token-b") as bob:
        A2MAdapter(alice, "team").write("plan", "semantic", "alice ships on friday")
        A2MAdapter(bob, "team").write("plan", "semantic", "bob ships on monday")
    # Unreported, each read of the key asks memory/fetch until its answer shows who the
    # caller is: alice's does at once; bob's never can, his being the record anyone would
    # be given (the latest written), so each of his two reads asks.
    for token, expected, asked in (
        ("token-a", "alice ships on friday", 1),
        ("token-b", "bob ships on monday", 2),
    ):
        counting = _Counting(unreported=not reported)
        with (
            httpx.Client(transport=counting) as http,
            A2MClient(url, token=token, http_client=http) as client,
        ):
            adapter = A2MAdapter(client, "team")
            assert adapter.read_many(["plan"])["plan"].value == expected
            assert [e.value for e in adapter.list().entries] == [expected]
        # Told by describe, the adapter never asks.
        assert counting.calls["memory/fetch"] == (0 if reported else asked)


def _description(**fields: object) -> DescribeResult:
    return DescribeResult.model_validate(
        {"protocol": "a2m/0.1", "name": "t", "capabilities": ["core", "keys"], "methods": []}
        | fields
    )


def test_describe_teaches_only_a_caller_that_reads_as_itself() -> None:
    scoped = _description(capabilities=["core", "keys", "scopes"], owner="alice")
    caller = Caller()
    caller.described(scoped)
    assert caller.owner == "alice"
    across = Caller(across=True)  # an adapter with an agent reads every agent's
    across.described(scoped)
    assert across.owner is None
    unscoped = Caller()
    unscoped.described(_description(owner="alice"))  # no scopes: no owners at all
    assert unscoped.owner is None

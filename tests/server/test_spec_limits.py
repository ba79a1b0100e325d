"""§4.1 limits: declared from describe and enforced regardless, with QUOTA_EXCEEDED (-32006,
the code §7 allocates to a documented limit)."""

from __future__ import annotations

from typing import Any

import pytest
from spec_support import Peer, PeerFactory, rpc_error, timeline_ids, uid

from a2m_server import LimitsConfig, ServerConfig

LIMITS = LimitsConfig(max_records_per_call=3, max_recall_limit=5, max_content_length=20)


@pytest.fixture(scope="module")
def limited(binding: str, module_peer_factory: PeerFactory) -> Peer:
    return module_peer_factory(binding, ServerConfig(limits=LIMITS))


def _records(tag: str, n: int, content: str = "fits") -> list[dict[str, Any]]:
    return [{"content": content, "metadata": {"tag": tag}} for _ in range(n)]


@pytest.mark.spec("4.1")
def test_4_1_describe_declares_the_limits(limited: Peer) -> None:
    assert limited.describe()["limits"] == {
        "max_records_per_call": 3,
        "max_recall_limit": 5,
        "max_content_length": 20,
        "max_metadata_bytes": 1_048_576,
        "max_metadata_depth": 64,
    }


@pytest.mark.spec("4.1")
def test_4_1_max_records_per_call_is_enforced(limited: Peer) -> None:
    tag = uid("tag")
    assert len(limited.remember(*_records(tag, 3))) == 3
    failure = rpc_error(limited, "memory/remember", {"records": _records(tag, 4)})
    assert failure.code == -32006
    assert len(timeline_ids(limited, tag=tag)) == 3


@pytest.mark.spec("4.1")
def test_4_1_max_content_length_is_enforced(limited: Peer) -> None:
    tag = uid("tag")
    limited.remember(*_records(tag, 1, "x" * 20))
    too_long = [*_records(tag, 1, "ok"), *_records(tag, 1, "x" * 21)]
    failure = rpc_error(limited, "memory/remember", {"records": too_long})
    assert failure.code == -32006
    assert [r["content"] for r in limited.timeline(where={"tag": tag})] == ["x" * 20]


@pytest.mark.spec("4.1")
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline"])
def test_4_1_max_recall_limit_is_enforced(limited: Peer, method: str) -> None:
    tag = uid("tag")
    for _ in range(3):
        limited.remember(*_records(tag, 3))
    assert len(limited.call(method, {"where": {"tag": tag}, "limit": 5})["records"]) == 5
    assert rpc_error(limited, method, {"where": {"tag": tag}, "limit": 6}).code == -32006
    assert len(limited.call(method, {"where": {"tag": tag}})["records"]) <= 5


@pytest.mark.spec("4.3")
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline"])
def test_4_3_limit_0_is_not_unbounded_when_a_maximum_is_declared(
    limited: Peer, method: str
) -> None:
    """§4.3: ``limit: 0`` means "no limit" only when no ``max_recall_limit`` is declared."""
    tag = uid("tag")
    for _ in range(3):
        limited.remember(*_records(tag, 3))
    records = limited.call(method, {"where": {"tag": tag}, "limit": 0})["records"]
    assert 1 <= len(records) <= 5

    # The converse (0 is unbounded without a declared maximum) has no server to ask:
    # this one always declares max_recall_limit, as §4.1 allows.

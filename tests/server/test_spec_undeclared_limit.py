"""A server configured to declare no ``max_recall_limit`` (``declare_recall_limit =
false``) answers as §4.3 and §4.4 say such a server does: describe carries no limit, a
timeline without ``limit`` (or with 0) carries every record, and any limit is honoured."""

from __future__ import annotations

import pytest
from spec_support import PeerFactory

from a2m_server import ServerConfig
from a2m_server.config import LimitsConfig

UNDECLARED = ServerConfig(
    declare_recall_limit=False, timeline_cursor=False, limits=LimitsConfig(max_recall_limit=10)
)


@pytest.mark.spec("4.4")
def test_4_4_without_a_declared_limit_a_timeline_carries_every_record(
    make_peer: PeerFactory,
) -> None:
    peer = make_peer("in-process", UNDECLARED)
    assert "max_recall_limit" not in peer.describe()["limits"]
    peer.remember(*({"content": f"fact {i}"} for i in range(25)))
    assert len(peer.timeline()) == 25
    assert len(peer.timeline(limit=0)) == 25
    newest = peer.timeline(limit=20)
    assert [r["content"] for r in newest] == [f"fact {i}" for i in range(5, 25)]
    assert len(peer.recall(query="fact", limit=20)) == 20

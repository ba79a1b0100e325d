"""§4.15 ``memory/summarize``: a selector is required, sources are never deleted, declining
is not an error, the summary is an ordinary record, and a key is replaced."""

from __future__ import annotations

import re
from typing import Any

import pytest
from spec_support import Peer, PeerFactory, rpc_error, timeline_ids, uid

from a2m_server.config import LimitsConfig, ServerConfig

FACTS = [
    "The staging database is rebuilt every Sunday night.",
    "Deploys to production need two approvals from the platform team.",
    "The platform team owns the deploy pipeline and its approvals.",
    "Production incidents are reviewed every Tuesday morning.",
]


def _sources(peer: Peer) -> tuple[str, list[str]]:
    tag = uid("tag")
    ids = peer.remember(
        *({"content": fact, "metadata": {"tag": tag}} for fact in FACTS), session=uid("session")
    )
    return tag, ids


@pytest.mark.spec("4.15")
def test_4_15_describe_reports_summarize_model(peer: Peer) -> None:
    assert peer.describe()["summarize"] == {"model": None}


@pytest.mark.spec("4.15")
@pytest.mark.parametrize(
    "params",
    [{}, {"limit": 5}, {"into": "semantic"}, {"key": "page/x"}, {"where": {}}],
    ids=str,
)
def test_4_15_a_call_without_a_selector_is_32602(peer: Peer, params: dict[str, Any]) -> None:
    before = peer.describe()["tiers"]
    assert rpc_error(peer, "memory/summarize", params).code == -32602
    assert peer.describe()["tiers"] == before


@pytest.mark.spec("4.15")
@pytest.mark.parametrize("selector", ["ids", "where", "query"])
def test_4_15_summarize_writes_a_summary_and_never_deletes_sources(
    peer: Peer, selector: str
) -> None:
    tag, ids = _sources(peer)
    choices: dict[str, dict[str, Any]] = {
        "ids": {"ids": ids},
        "where": {"where": {"tag": tag}},
        "query": {"query": "platform team deploy approvals", "where": {"tag": tag}},
    }
    params = choices[selector]
    result = peer.call("memory/summarize", params)
    assert result["read"] >= 1
    assert result["written"] == len(result["records"])
    assert timeline_ids(peer, tag=tag) == ids, "§4.15: MUST NOT delete the source records"
    if result["written"]:
        (summary,) = result["records"]
        assert summary["id"] not in ids
        assert summary["content"]
        # An ordinary record: recallable and forgettable like any other.
        stored = peer.timeline(where={"id": summary["id"]})
        assert [r["content"] for r in stored] == [summary["content"]]
        assert peer.call("memory/forget", {"ids": [summary["id"]]}) == {"forgotten": 1}


@pytest.mark.spec("4.15")
def test_4_15_declining_is_not_an_error(peer: Peer) -> None:
    """Nothing selected: ``written: 0`` and empty ``records``, not an error."""
    result = peer.call("memory/summarize", {"ids": [uid("absent"), uid("absent")]})
    assert result == {"records": [], "read": 0, "written": 0}
    result = peer.call("memory/summarize", {"where": {"tag": uid("no-such-tag")}})
    assert result["written"] == 0
    assert result["records"] == []


@pytest.mark.spec("4.15")
def test_4_15_summarizing_to_a_key_replaces_what_is_there(peer: Peer) -> None:
    tag, ids = _sources(peer)
    key = f"{uid('page')}/deploys"
    first = peer.call("memory/summarize", {"ids": ids[:2], "key": key})
    second = peer.call("memory/summarize", {"ids": ids, "key": key})
    assert first["written"] == second["written"] == 1
    (a,), (b,) = first["records"], second["records"]
    assert a["id"] == b["id"], "§4.15/§3.6: the summary keeps its id"
    assert (a["revision"], b["revision"]) == (0, 1)
    fetched = peer.call("memory/fetch", {"key": key})["record"]
    assert fetched["id"] == a["id"]
    assert fetched["content"] == b["content"]
    assert len(peer.timeline(key_prefix=key)) == 1
    assert timeline_ids(peer, tag=tag) == ids


@pytest.mark.spec("4.15")
def test_4_15_into_names_the_destination_tier(peer: Peer) -> None:
    _, ids = _sources(peer)
    result = peer.call("memory/summarize", {"ids": ids, "into": "procedural"})
    if result["written"]:
        assert result["records"][0]["tier"] == "procedural"
    assert rpc_error(peer, "memory/summarize", {"ids": ids, "into": "nowhere"}).code == -32002
    assert rpc_error(peer, "memory/summarize", {"tier": "nowhere"}).code == -32002


@pytest.mark.spec("4.15")
def test_4_15_limit_bounds_the_sources_read(peer: Peer) -> None:
    tag, _ = _sources(peer)
    result = peer.call("memory/summarize", {"where": {"tag": tag}, "limit": 2})
    assert result["read"] <= 2


@pytest.mark.spec("4.15")
def test_4_15_a_summary_never_passes_the_content_limit(
    binding: str, make_peer: PeerFactory
) -> None:
    """The summary is a record this server would accept from a caller: within
    ``max_content_length``, however many sentences would otherwise fit its 1,200."""
    limit = 120
    peer = make_peer(binding, ServerConfig(limits=LimitsConfig(max_content_length=limit)))
    tag, _ = _sources(peer)
    (summary,) = peer.call("memory/summarize", {"where": {"tag": tag}})["records"]
    assert 0 < len(summary["content"]) <= limit
    assert set(re.split(r"(?<=\.) ", summary["content"])) <= set(FACTS)  # whole sentences

"""A2MStorage on every binding the client speaks (in-process, stdio, HTTP, REST): the same
answers, since the storage only ever calls A2M methods."""

from __future__ import annotations

from crew_support import embed_one
from storage_support import BASE, ids, records

from a2m import A2MClient
from a2m_crewai import A2MStorage


def test_every_binding_answers_alike(a2m_client: A2MClient) -> None:
    storage = A2MStorage(a2m_client)
    storage.save(records())
    assert storage.count() == 5
    assert storage.get_record("rec-3") == records()[3]
    assert ids(storage.search(embed_one("the deploy key"), scope_prefix="/crew", limit=2)) == [
        "rec-0",
        "rec-3",
    ]
    assert storage.list_scopes("/") == ["/crew", "/finance"]
    assert storage.list_categories("/finance") == {"market": 1, "numbers": 1}
    assert [r.id for r in storage.list_records(limit=2)] == ["rec-4", "rec-3"]
    assert storage.get_scope_info("/crew/research").newest_record == BASE.replace(day=2)
    assert storage.delete(categories=["market"]) == 2
    assert storage.delete(record_ids=["rec-0"]) == 1
    storage.reset()
    assert storage.count() == 0
    storage.close()  # the caller's client: left open
    assert a2m_client.timeline(limit=1).records == []

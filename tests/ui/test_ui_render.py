"""The page's HTML for what only the observations extension returns: a transferred
observation (docs/observations.md §7's shape) shows its source project, read-only, with
its content escaped."""

from __future__ import annotations

from a2m_server.ui._fields import row_of_observation
from a2m_server.ui._listing import Filters
from a2m_server.ui._render import PageContext, memory_page

TRANSFERRED = {
    "id": "obs-1",
    "content": "All dates are ISO 8601 <b>UTC</b>",
    "type": "convention.dates",
    "classification": "convention",
    "weight": 2.0,
    "effective_weight": 1.0,
    "tags": ["datetime"],
    "source": "explicit",
    "origin": "https://git.example/pr/7",
    "file_path": "src/dates.py",
    "agent": "planner",
    "created_at": "2026-12-04T10:00:00.000Z",
    "transferred": True,
    "source_project": "acme/api",
}


def test_a_transferred_observation_is_shown_read_only_with_its_project() -> None:
    row = row_of_observation(TRANSFERRED)
    assert row.transferred_from == "acme/api"
    assert row.weight == 1.0  # the discounted weight it ranks with here
    ctx = PageContext(principal="alice", csrf="t", auth=True, read_only=False)
    html = memory_page(
        ctx,
        title="Memory of planner",
        base="/ui/agents/planner/memory",
        filters=Filters(),
        tiers=["episodic"],
        rows=[],
        editable=[],
        next_cursor=None,
        oldest=False,
        searched=False,
        back="/ui/agents/planner/memory",
        transferred=[row],
    )
    section = html.split('id="transferred"', 1)[1]
    assert "transferred from <strong>acme/api</strong> (read-only)" in section
    assert "All dates are ISO 8601 &lt;b&gt;UTC&lt;/b&gt;" in section
    assert "<b>UTC</b>" not in html
    assert 'action="/ui/record/edit"' not in section
    assert "/ui/record/weight" not in section
    assert "/ui/record/delete" not in section
    assert 'href="https://git.example/pr/7" rel="noopener noreferrer"' in section


def test_an_ordinary_observation_without_transfer_has_no_project() -> None:
    row = row_of_observation({**TRANSFERRED, "transferred": False, "source_project": None})
    assert row.transferred_from is None

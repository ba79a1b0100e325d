"""The agent memory page in a real headless Chromium against a real ``a2m-server serve``:
login and logout, the agents list, keyset pages, filters in the URL, inline edit with its
history, reweight, permanent delete (gone from recall), a second principal seeing nothing
of the first, markup rendered inert, CSRF refusals, read-only servers, no-JS reading, and
a 360 px wide screen."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from ui_support import PLANNER_RECORDS, XSS, Served, login, shot, start_serve, stop

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect

PLANNER = "/ui/agents/planner/memory"


def _contents(page: Any) -> list[str]:
    return [c.strip() for c in page.locator("tbody tr td.content").all_inner_texts()]


def _row(page: Any, text: str) -> Any:
    return page.locator("tbody tr", has=page.locator("td.content", has_text=text))


def test_login_sets_a_strict_cookie_and_logout_ends_the_session(page: Any, served: Served) -> None:
    page.goto(served.url + "/ui/")
    assert "/ui/login" in page.url
    shot(page, "login")
    page.get_by_label("Bearer token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    assert page.get_by_role("alert").inner_text().startswith("That token authenticates nobody")

    login(page, served.url, "alice-token")
    assert page.get_by_text("Signed in as").is_visible()
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "a2m_ui_session"]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    stolen = cookie["value"]

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r".*/ui/login.*"))
    # The session is over on the server too: its cookie no longer opens the page.
    again = httpx.get(
        served.url + "/ui/", cookies={"a2m_ui_session": stolen}, follow_redirects=False
    )
    assert again.status_code == 303
    assert again.headers["location"].startswith("/ui/login")


def test_agents_list_counts_and_pages_newest_first_to_the_oldest(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    table = page.locator("table.agents")
    planner = table.locator("tr", has=page.get_by_role("link", name="planner", exact=True))
    assert planner.locator("td[data-label=Records]").inner_text() == str(PLANNER_RECORDS)
    assert "crewai" in planner.locator("td[data-label=Frameworks]").inner_text()
    assert "episodic" in planner.locator("td[data-label=Tiers]").inner_text()
    assert "bob-agent" not in table.inner_text()
    shot(page, "agents")

    page.get_by_role("link", name="planner", exact=True).click()
    page.wait_for_url(served.url + PLANNER)
    first = _contents(page)
    assert len(first) == 50
    assert first[0].startswith("planner fact 129")
    assert first == sorted(first, reverse=True)
    shot(page, "memory")
    shot(page, "memory-window", full_page=False)

    seen = list(first)
    while page.get_by_role("link", name="Older").count():
        with page.expect_navigation():
            page.get_by_role("link", name="Older").click()
        seen += _contents(page)
    assert seen == [
        f"planner fact {i:03d}: service {i % 7} uses ISO 8601 dates" for i in range(129, -1, -1)
    ]

    page.goto(served.url + PLANNER)
    with page.expect_navigation():
        page.get_by_role("link", name="Oldest").click()
    oldest = _contents(page)
    assert oldest[-1].startswith("planner fact 000")
    assert len(oldest) == 50


def test_filters_combine_and_live_in_the_url(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + PLANNER)
    page.get_by_label("decision").check()
    page.get_by_label("convention").check()
    page.get_by_label("Tag").fill("datetime")
    page.get_by_label("Framework").fill("crewai")
    with page.expect_navigation():
        page.get_by_role("button", name="Apply filters").click()
    query = parse_qs(urlsplit(page.url).query)
    assert query["classification"] == ["decision", "convention"]
    assert query["tag"] == ["datetime"]
    assert query["framework"] == ["crewai"]
    # Even-numbered facts carry "datetime"; i % 5 picks the classification.
    expected = [i for i in range(PLANNER_RECORDS - 1, -1, -1) if i % 2 == 0 and i % 5 in (0, 1)]
    shown = _contents(page)
    assert [int(text[13:16]) for text in shown] == expected
    badges = set(page.locator("tbody .badge").all_inner_texts())
    assert badges == {"decision", "convention"}

    # The URL alone reproduces the view (a shared link), in a fresh page.
    shared = page.url
    page.goto(served.url + "/ui/")
    page.goto(shared)
    assert _contents(page) == shown
    assert page.get_by_label("decision").is_checked()

    page.goto(served.url + PLANNER + "?framework=langgraph")
    assert _contents(page) == []
    page.goto(served.url + "/ui/memory?tier=episodic&framework=langgraph")
    assert _contents(page) == ["researcher note: the API is rate limited to 100 rps"]


def test_text_search_uses_the_servers_recall(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + "/ui/memory")
    page.get_by_label("Search").fill("rate limited")
    with page.expect_navigation():
        page.get_by_label("Search").press("Enter")
    assert parse_qs(urlsplit(page.url).query)["q"] == ["rate limited"]
    assert _contents(page)[0] == "researcher note: the API is rate limited to 100 rps"
    assert page.get_by_text("Best matches first").is_visible()


def test_text_search_pages_on_to_the_end_of_the_matches(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + PLANNER)
    page.get_by_label("Search").fill("ISO 8601 dates")
    with page.expect_navigation():
        page.get_by_label("Search").press("Enter")
    seen: list[str] = []
    counts = []
    while True:
        contents = _contents(page)
        counts.append(len(contents))
        seen += contents
        more = page.get_by_role("link", name="More matches")
        if more.count() == 0:
            break
        with page.expect_navigation():
            more.click()
    assert counts == [50, 50, PLANNER_RECORDS - 100]
    assert len(set(seen)) == PLANNER_RECORDS  # every planner fact, none twice
    assert parse_qs(urlsplit(page.url).query)["page"] == ["3"]
    assert page.locator("p.search-end").inner_text().endswith("That is every match.")
    shot(page, "search-last-page")
    page.get_by_role("link", name="Better matches").click()
    page.wait_for_url(re.compile(r".*page=2.*"))
    assert len(_contents(page)) == 50


def test_inline_edit_saves_in_place_and_shows_in_history(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + PLANNER)
    row = _row(page, "planner fact 129")
    row.get_by_text("Edit", exact=True).click()
    row.get_by_label("Content").fill("planner fact 129: all dates are UTC strings")
    row.get_by_label("Type").fill("convention.dates")
    url_before = page.url
    row.get_by_role("button", name="Save").click()
    edited = _row(page, "all dates are UTC strings")
    edited.get_by_text("Saved.").wait_for()
    assert page.url == url_before  # saved in place, no navigation
    assert edited.locator("td[data-label=Type]").inner_text() == "convention.dates"

    found = served.rpc("alice-token", "memory/recall", {"query": "UTC strings", "limit": 3})
    assert found["records"][0]["content"] == "planner fact 129: all dates are UTC strings"
    assert found["records"][0]["metadata"]["observation_type"] == "convention.dates"
    gone = served.rpc("alice-token", "memory/recall", {"query": "fact 129 ISO", "limit": 50})
    assert all("ISO 8601" not in r["content"] or "129" not in r["content"] for r in gone["records"])

    edited.get_by_text("History", exact=True).click()
    panel = edited.locator("details.history .panel")
    panel.locator("p, ol").first.wait_for()
    described = served.rpc("alice-token", "memory/describe", {})
    if "observations" in described:
        # The edit is in the audit log: who, what, before and after.
        entry = panel.locator("ol.audit li").first
        expect(entry).to_contain_text("updated by alice")
        content = entry.locator(".change", has_text="content")
        expect(content.locator("del")).to_contain_text("ISO 8601")
        expect(content.locator("ins")).to_contain_text("all dates are UTC strings")
    else:
        expect(panel).to_contain_text("Created")
        expect(panel).to_contain_text("keeps no audit log")
    edited.get_by_text("Edit", exact=True).click()
    shot(page, "history")
    shot(page, "edit-window", full_page=False)


def test_weight_up_and_down(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + PLANNER)
    row = _row(page, "planner fact 128")
    assert row.locator("td.weight").inner_text() == "1"
    row.get_by_role("button", name="Raise weight").click()
    expect(row.locator("td.weight")).to_have_text("1.5")
    expect(row.get_by_text("Saved.")).to_be_visible()
    row.get_by_role("button", name="Lower weight").click()
    expect(row.locator("td.weight")).to_have_text("1")
    row.get_by_role("button", name="Lower weight").click()
    expect(row.locator("td.weight")).to_have_text("0.5")
    stored = served.rpc(
        "alice-token", "memory/timeline", {"where": {"content": _row_text(page, "fact 128")}}
    )
    assert stored["records"][0]["salience"] == 0.5
    if "observations" in served.rpc("alice-token", "memory/describe", {}):
        # Each click is an audited edit of the observation's weight.
        log = served.rpc(
            "alice-token",
            "memory/observations/audit",
            {"observation_id": stored["records"][0]["id"]},
        )
        weights = [(e["before"]["weight"], e["after"]["weight"]) for e in log["entries"][:3]]
        assert weights == [(1.0, 0.5), (1.5, 1.0), (1.0, 1.5)]  # newest first
        assert all(e["actor"] == "alice" for e in log["entries"][:3])


def _row_text(page: Any, text: str) -> str:
    return str(_row(page, text).locator("td.content").inner_text().strip().split("\n")[0])


def test_delete_asks_then_is_gone_from_recall(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + PLANNER)
    target = "planner fact 127: service 1 uses ISO 8601 dates"
    _row(page, "planner fact 127").get_by_role("link", name="Delete…").click()
    assert "permanent" in page.get_by_role("alert").inner_text()
    shot(page, "delete-confirm")
    page.get_by_role("button", name="Delete permanently").click()
    page.wait_for_url(served.url + PLANNER)
    assert target not in _contents(page)
    recalled = served.rpc(
        "alice-token", "memory/recall", {"query": "planner fact 127", "limit": 200}
    )
    assert target not in [r["content"] for r in recalled["records"]]


def test_a_second_principal_sees_nothing_of_the_first(browser: Any, served: Served) -> None:
    alice = browser.new_context()
    bob = browser.new_context()
    try:
        alice_page = alice.new_page()
        login(alice_page, served.url, "alice-token")
        alice_page.goto(served.url + PLANNER)
        record_id = alice_page.locator("tbody tr").first.get_attribute("data-id")

        bob_page = bob.new_page()
        login(bob_page, served.url, "bob-token")
        assert "planner" not in bob_page.locator("main").inner_text()
        assert "bob-agent" in bob_page.locator("main").inner_text()
        bob_page.goto(served.url + "/ui/memory")
        assert _contents(bob_page) == ["bob's private fact: the staging password rotates weekly"]
        bob_page.goto(served.url + PLANNER)
        assert _contents(bob_page) == []
        response = bob_page.goto(served.url + f"/ui/record/history?id={record_id}")
        assert response is not None
        assert response.status == 404
        response = bob_page.goto(served.url + f"/ui/record/delete?id={record_id}")
        assert response is not None
        assert response.status == 404
        shot(bob_page, "second-principal")
    finally:
        alice.close()
        bob.close()


def test_markup_in_a_record_is_shown_as_text(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + "/ui/agents/mallory/memory")
    assert _contents(page) == [XSS]
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("tbody script, tbody img").count() == 0
    csp = page.evaluate("document.contentType")
    assert csp == "text/html"


def test_csrf_and_cross_origin_posts_are_refused(page: Any, served: Served) -> None:
    login(page, served.url, "alice-token")
    page.goto(served.url + PLANNER)
    row = page.locator("tbody tr").first
    record_id = row.get_attribute("data-id")
    before = row.locator("td.weight").inner_text()
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    attempts = [
        ({"id": record_id, "direction": "up"}, {}),
        ({"id": record_id, "direction": "up", "csrf": "forged"}, {}),
        ({"id": record_id, "direction": "up", "csrf": csrf}, {"Origin": "http://evil.example"}),
    ]
    for form, headers in attempts:
        response = page.request.post(
            served.url + "/ui/record/weight", form=form, headers=headers, max_redirects=0
        )
        assert response.status == 403, (form, headers)
    page.reload()
    assert page.locator("tbody tr").first.locator("td.weight").inner_text() == before
    # The same request with the page's token and origin goes through.
    good = page.request.post(
        served.url + "/ui/record/weight",
        form={"id": record_id, "direction": "up", "csrf": csrf},
        max_redirects=0,
    )
    assert good.status == 303


def test_read_only_server_hides_edit_controls_and_refuses_edits(page: Any, tmp_path: Path) -> None:
    running = start_serve(tmp_path, "--read-only")
    try:
        login(page, running.url, "alice-token")
        page.goto(running.url + PLANNER)
        assert page.get_by_text("This server is read-only").is_visible()
        assert page.locator("details.edit, form.weight, a.delete").count() == 0
        record_id = page.locator("tbody tr").first.get_attribute("data-id")
        csrf = page.locator("input[name=csrf]").first.get_attribute("value")
        response = page.request.post(
            running.url + "/ui/record/edit",
            form={"id": record_id, "content": "changed", "type": "", "csrf": csrf},
            max_redirects=0,
        )
        assert response.status == 403
        assert "read-only" in response.text()
    finally:
        stop(running)


def test_reading_works_without_javascript(browser: Any, served: Served) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        login(page, served.url, "alice-token")
        page.goto(served.url + PLANNER)
        assert len(_contents(page)) == 50
        row = page.locator("tbody tr").first
        row.get_by_text("History", exact=True).click()
        with page.expect_navigation():
            row.get_by_role("link", name="Open the history of this record").click()
        expect(page.get_by_role("heading", name="History of a record")).to_be_visible()
        # And a plain form post edits, then comes back to the list.
        page.goto(served.url + PLANNER)
        row = page.locator("tbody tr").first
        row.get_by_text("Edit", exact=True).click()
        row.get_by_label("Content").fill("edited without javascript")
        with page.expect_navigation():
            row.get_by_role("button", name="Save").click()
        assert page.url == served.url + PLANNER
        assert "edited without javascript" in _contents(page)
    finally:
        context.close()


def test_narrow_screen_and_keyboard(browser: Any, served: Served) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740})
    try:
        page = context.new_page()
        login(page, served.url, "alice-token")
        page.goto(served.url + PLANNER)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360
        shot(page, "memory-360px")
        # Keyboard: the skip link comes first and leads to the content; every control of
        # the filter bar is labelled and reachable by Tab.
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        for label in ("Search", "Tag", "Framework", "Tier", "decision"):
            assert page.get_by_label(label).count() == 1
        page.get_by_label("Search").focus()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "f-tag"
        # Open a row's editor and close it again from the keyboard.
        summary = page.locator("tbody tr").first.locator("details.edit summary")
        summary.focus()
        page.keyboard.press("Enter")
        assert (
            page.locator("tbody tr").first.locator("details.edit").get_attribute("open") is not None
        )
        page.keyboard.press("Tab")
        page.keyboard.press("Escape")
        assert page.locator("tbody tr").first.locator("details.edit").get_attribute("open") is None
    finally:
        context.close()

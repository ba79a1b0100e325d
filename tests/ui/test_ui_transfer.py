"""Transferred observations end to end, in a real headless Chromium against a real
``a2m-server serve`` with a transfer grant: the destination project's agent sees the
source project's observation read-only, with the project it came from, and cannot edit
it; without the grant it sees nothing of the other project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_support import login, start_serve, stop

from a2m import A2MClient

TOKENS = {
    "web-token": "acme/web/planner",
    "api-token": "acme/api/planner",  # transfer is agent to agent: the same name
    "alice-token": "alice",
    "bob-token": "bob",
}
GRANT = """
[observations]
grants = [{ source = "acme/api", destination = "acme/web" }]
"""
FACT = "The api signs every webhook with HMAC-SHA256"


def _serve(tmp_path: Path, granted: bool) -> Any:
    extra: list[str] = []
    if granted:
        config = tmp_path / "a2m.toml"
        config.write_text(GRANT, encoding="utf-8")
        extra = ["--config", str(config)]
    served = start_serve(tmp_path, *extra, tokens_map=TOKENS)
    with A2MClient(served.url + "/", token="api-token") as api:
        api.remember_observation(FACT, classification="convention", tags=["webhooks"])
    with A2MClient(served.url + "/", token="web-token") as web:
        web.remember_observation("The web app renders dates in the viewer's zone")
    return served


@pytest.mark.parametrize("granted", [True, False], ids=["granted", "denied"])
def test_a_transferred_observation_is_shown_read_only(
    browser: Any, tmp_path: Path, granted: bool
) -> None:
    served = _serve(tmp_path, granted)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        login(page, served.url, "web-token")
        page.goto(served.url + "/ui/agents/planner/memory")
        assert "renders dates in the viewer" in page.content()
        section = page.locator("#transferred")
        if not granted:
            assert section.count() == 0  # deny by default: nothing of acme/api
            assert FACT not in page.content()
            return
        assert section.count() == 1
        table = page.locator("#transferred ~ table").first
        row = table.locator("tbody tr", has_text=FACT)
        assert row.count() == 1
        assert "transferred from acme/api (read-only)" in row.inner_text()
        assert row.get_by_role("button", name="Save").count() == 0
        assert row.get_by_text("Edit", exact=True).count() == 0
        # Its history is its own project's audit log: no History panel to open on a 404.
        assert row.locator("details.history").count() == 0
        own = page.locator("tr", has_text="renders dates in the viewer").first
        assert own.locator("details.history").count() == 1
        page.screenshot(path=str(Path(__file__).parent / "screenshots" / "transferred.png"))
    finally:
        context.close()
        stop(served)


def test_a_transferred_observation_cannot_be_edited_through_the_api(tmp_path: Path) -> None:
    served = _serve(tmp_path, True)
    try:
        with A2MClient(served.url + "/", token="web-token") as web:
            listed = web.list_observations(include_transferred=True).observations
            (transferred,) = [o for o in listed if o.transferred]
            assert transferred.source_project == "acme/api"
            assert transferred.effective_weight == pytest.approx(transferred.weight * 0.5)
            from a2m.errors import A2MError

            with pytest.raises(A2MError):
                web.update_observation(transferred.id, content="rewritten")
        assert httpx.get(served.url + "/ui/login", timeout=5).status_code == 200
    finally:
        stop(served)

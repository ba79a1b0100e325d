"""An operator audits the agents' observations on the memory page (seed 004): signed in with
a principal listed in ``observations.operators``, it sees every agent's observations of its
project in the index, on each agent's page and in a text search, and edits them through the
observations extension (audited, naming it); it never sees an agent's other records, nor
another project's observations. Anyone else still sees only what its principal reads.

Through the ASGI app ``create_app`` builds, on both stores, and in a real headless Chromium
against ``a2m-server serve``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from ui_support import login, sign_in, start_serve, stop

from a2m import A2MClient
from a2m_server import A2MServer, ServerConfig
from a2m_server.bindings.http import create_app
from a2m_server.config import ObservationsConfig

TOKENS = {
    "planner-token": "planner",
    "coder-token": "coder",
    "ops-token": "ops",
    "eve-token": "eve",
    "api-token": "acme/api/planner",
}
PLANNER_FACT = "Billing dates are ISO 8601 strings in UTC"
CODER_FACT = "The coder runs ruff before every commit"
CODER_PRIVATE = "coder private scratch note about lunch"
OTHER_PROJECT = "The api project keeps its secrets in vault"
OPS_FACT = "Operators rotate the signing keys monthly"


def _config() -> ServerConfig:
    return ServerConfig(
        observations=ObservationsConfig(org="acme", project="web", operators=frozenset({"ops"}))
    )


def _as(server: A2MServer, principal: str, method: str, params: dict[str, Any]) -> Any:
    with server.connect(transport="http", principal=principal) as connection:
        return connection.call(method, params)


def _seed(server: A2MServer) -> None:
    remember = "memory/observations/remember"
    _as(server, "planner", remember, {"content": PLANNER_FACT, "classification": "convention"})
    _as(server, "coder", remember, {"content": CODER_FACT, "classification": "tool-use"})
    _as(server, "ops", remember, {"content": OPS_FACT})
    _as(server, "acme/api/planner", remember, {"content": OTHER_PROJECT})
    _as(
        server,
        "coder",
        "memory/remember",
        {"records": [{"content": CODER_PRIVATE, "metadata": {"source_agent": "coder"}}]},
    )


@pytest.fixture
def server(store_backend: str) -> Iterator[A2MServer]:
    with A2MServer(config=_config()) as running:
        _seed(running)
        yield running


def _signed_in(server: A2MServer, token: str) -> tuple[TestClient, str]:
    return sign_in(create_app(server, tokens=TOKENS), token)


def _row_id(page: str, content: str) -> str:
    """The record id of the row showing ``content`` (rows carry ``data-id``)."""
    for row in re.findall(r"<tr[^>]*data-id=\"[^\"]+\".*?</tr>", page, flags=re.S):
        if content in row:
            found = re.search(r'data-id="([^"]+)"', row)
            assert found is not None
            return found.group(1)
    raise AssertionError(f"no row shows {content!r}")


def test_an_operator_sees_every_agents_observations_of_its_project(server: A2MServer) -> None:
    client, _ = _signed_in(server, "ops-token")
    index = client.get("/ui/").text
    assert "/ui/agents/planner/memory" in index
    assert "/ui/agents/coder/memory" in index
    planner = client.get("/ui/agents/planner/memory").text
    assert PLANNER_FACT in planner
    assert CODER_FACT not in planner
    everything = client.get("/ui/memory").text
    for fact in (PLANNER_FACT, CODER_FACT, OPS_FACT):
        assert fact in everything
    # Not an agent's other records, nor another project's observations.
    assert CODER_PRIVATE not in everything
    assert OTHER_PROJECT not in everything
    assert CODER_PRIVATE not in client.get("/ui/agents/coder/memory").text
    # Filters narrow the audit as they narrow anything else.
    conventions = client.get("/ui/memory?classification=convention").text
    assert PLANNER_FACT in conventions
    assert CODER_FACT not in conventions
    # A text search ranks over what the listing shows.
    found = client.get("/ui/memory?q=billing+dates").text
    assert PLANNER_FACT in found
    assert CODER_PRIVATE not in client.get("/ui/memory?q=lunch+scratch").text


def test_the_operators_index_counts_each_observation_once(server: A2MServer) -> None:
    client, _ = _signed_in(server, "ops-token")
    counts = {}
    for row in re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", client.get("/ui/").text):
        name = re.search(r">([^<]*)</a>", row)
        total = re.search(r'data-label="Records">(\d+)<', row)
        assert name is not None
        assert total is not None
        counts[name.group(1)] = total.group(1)
    assert counts["planner"] == "1"
    assert counts["coder"] == "1"  # the observation; the private record is not the operator's
    assert counts["ops"] == "1"  # its own, counted by its scope and not again as audited


def test_an_operator_edits_and_deletes_an_agents_observation_audited(server: A2MServer) -> None:
    client, csrf = _signed_in(server, "ops-token")
    record_id = _row_id(client.get("/ui/agents/planner/memory").text, PLANNER_FACT)
    history = client.get(f"/ui/record/history?id={record_id}")
    assert history.status_code == 200
    edited = client.post(
        "/ui/record/edit",
        data={"csrf": csrf, "id": record_id, "content": "Billing dates are UTC", "type": ""},
        follow_redirects=False,
    )
    assert edited.status_code == 303
    audit = _as(server, "ops", "memory/observations/audit", {"observation_id": record_id})
    assert [e["actor"] for e in audit["entries"]][:1] == ["ops"]
    listed = _as(server, "planner", "memory/observations/list", {})["observations"]
    assert [o["content"] for o in listed] == ["Billing dates are UTC"]
    deleted = client.post(
        "/ui/record/delete", data={"csrf": csrf, "id": record_id}, follow_redirects=False
    )
    assert deleted.status_code == 303
    assert _as(server, "planner", "memory/observations/list", {})["observations"] == []


def test_anyone_else_sees_only_what_its_principal_reads(server: A2MServer) -> None:
    client, csrf = _signed_in(server, "eve-token")
    assert PLANNER_FACT not in client.get("/ui/memory").text
    assert PLANNER_FACT not in client.get("/ui/memory?q=billing+dates").text
    ops, _ = _signed_in(server, "ops-token")
    record_id = _row_id(ops.get("/ui/memory").text, PLANNER_FACT)
    assert client.get(f"/ui/record/history?id={record_id}").status_code == 404
    refused = client.post(
        "/ui/record/edit",
        data={"csrf": csrf, "id": record_id, "content": "forged", "type": ""},
        follow_redirects=False,
    )
    assert refused.status_code == 404
    # An agent sees its own observations, not another agent's.
    coder, _ = _signed_in(server, "coder-token")
    page = coder.get("/ui/memory").text
    assert CODER_FACT in page
    assert PLANNER_FACT not in page
    listed = _as(server, "planner", "memory/observations/list", {})["observations"]
    assert [o["content"] for o in listed] == [PLANNER_FACT]


def test_an_operator_audits_an_agent_in_a_browser(browser: Any, tmp_path: Path) -> None:
    config = tmp_path / "a2m.toml"
    config.write_text('[observations]\norg = "acme"\nproject = "web"\noperators = ["ops"]\n')
    served = start_serve(tmp_path, "--config", str(config), tokens_map=TOKENS)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        with A2MClient(served.url + "/", token="planner-token") as planner:
            planner.remember_observation(PLANNER_FACT, classification="convention")
        page = context.new_page()
        login(page, served.url, "ops-token")
        page.get_by_role("link", name="planner").first.click()
        row = page.locator("tr", has_text=PLANNER_FACT).first
        row.get_by_text("Edit", exact=True).click()
        row.get_by_label("Content").fill("Billing dates are UTC strings")
        row.get_by_role("button", name="Save").click()
        page.locator("tr", has_text="Billing dates are UTC strings").first.get_by_text(
            "Saved."
        ).wait_for()
        with A2MClient(served.url + "/", token="planner-token") as planner:
            (observation,) = planner.list_observations().observations
            assert observation.content == "Billing dates are UTC strings"
    finally:
        context.close()
        stop(served)

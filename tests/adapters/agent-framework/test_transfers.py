"""Observations another project granted reach the model through A2MContextProvider, marked
with their project; another agent's do not; and no grant costs no call."""

from __future__ import annotations

import pytest
from agent_framework import Agent
from maf_fake_client import ScriptedChatClient, said

from a2m import AsyncA2MClient
from a2m_agent_framework import A2MContextProvider
from a2m_testing.plugin import ServerFactory
from a2m_testing.servers import MethodLog, serve_http
from a2m_testing.transfers import (
    GRANTED_FACT,
    OTHER_AGENT_FACT,
    TOKENS,
    WEB_TOKEN,
    granted_config,
    seed_granted_project,
)

pytestmark = pytest.mark.anyio

QUESTION = "Which fastapi version should the web service pin?"


def _context_text(client: ScriptedChatClient) -> str:
    return "\n".join(m.text for m in client.inputs[0] if m.text != QUESTION)


async def test_a_granted_observation_reaches_the_model_marked(
    a2m_server_factory: ServerFactory,
) -> None:
    server = a2m_server_factory(granted_config())
    seed_granted_project(server)
    model = ScriptedChatClient([said("0.115")])
    with serve_http(server, tokens=TOKENS) as url:
        async with AsyncA2MClient(url, token=WEB_TOKEN) as a2m:
            provider = A2MContextProvider(a2m, store_turns=False)
            await Agent(client=model, context_providers=[provider]).run(QUESTION)
    seen = _context_text(model)
    assert "Observations transferred from other projects (read-only):" in seen
    assert f"- [acme/api, agent planner] {GRANTED_FACT}" in seen
    assert OTHER_AGENT_FACT not in seen  # the grant is the same agent's only


@pytest.mark.parametrize("grant", [True, False], ids=["granted", "no-grant"])
async def test_one_observation_recall_where_a_grant_exists_none_elsewhere(
    a2m_server_factory: ServerFactory, grant: bool
) -> None:
    server = a2m_server_factory(granted_config(grant=grant))
    seed_granted_project(server)
    log = MethodLog(server)
    model = ScriptedChatClient([said("ok")])
    async with AsyncA2MClient.in_process(log) as a2m:
        provider = A2MContextProvider(a2m, store_turns=False)
        await Agent(client=model, context_providers=[provider]).run(QUESTION)
    assert log.count("memory/recall") == 1
    assert log.count("memory/observations/recall") == (1 if grant else 0)
    # A local caller without a principal reads every record; only a grant marks one.
    assert ("[acme/api, agent planner]" in _context_text(model)) is grant

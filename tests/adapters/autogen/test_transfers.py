"""Observations another project granted reach the model through ``update_context``, marked
with their project, and come back as results carrying where they came from; another
agent's do not; and no grant costs no call."""

from __future__ import annotations

import pytest
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

from a2m import AsyncA2MClient
from a2m_autogen import PROVENANCE_KEY, A2MMemory
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


def _context() -> UnboundedChatCompletionContext:
    return UnboundedChatCompletionContext([UserMessage(content=QUESTION, source="user")])


async def _system_text(context: UnboundedChatCompletionContext) -> str:
    messages = await context.get_messages()
    return "\n".join(m.content for m in messages if isinstance(m, SystemMessage))


async def test_a_granted_observation_reaches_the_model_marked(
    a2m_server_factory: ServerFactory,
) -> None:
    server = a2m_server_factory(granted_config())
    granted_id = seed_granted_project(server)
    with serve_http(server, tokens=TOKENS) as url:
        async with AsyncA2MClient(url, token=WEB_TOKEN) as a2m:
            context = _context()
            result = await A2MMemory(a2m).update_context(context)
    text = await _system_text(context)
    assert "Observations transferred from other projects (read-only):" in text
    assert f"- [acme/api, agent planner] {GRANTED_FACT}" in text
    assert OTHER_AGENT_FACT not in text  # the grant is the same agent's only
    [granted] = [r for r in result.memories.results if r.content == GRANTED_FACT]
    assert granted.metadata is not None
    stated = granted.metadata[PROVENANCE_KEY]
    assert (stated["id"], stated["transferred"], stated["source_project"]) == (
        granted_id,
        True,
        "acme/api",
    )
    assert granted.metadata["score"] == stated["score"] > 0


async def test_a_threshold_keeps_a_weak_transfer_out(a2m_server_factory: ServerFactory) -> None:
    server = a2m_server_factory(granted_config())
    seed_granted_project(server)
    with serve_http(server, tokens=TOKENS) as url:
        async with AsyncA2MClient(url, token=WEB_TOKEN) as a2m:
            context = _context()
            result = await A2MMemory(a2m, score_threshold=0.99).update_context(context)
    assert result.memories.results == []
    assert await _system_text(context) == ""


@pytest.mark.parametrize("grant", [True, False], ids=["granted", "no-grant"])
async def test_one_observation_recall_where_a_grant_exists_none_elsewhere(
    a2m_server_factory: ServerFactory, grant: bool
) -> None:
    server = a2m_server_factory(granted_config(grant=grant))
    seed_granted_project(server)
    log = MethodLog(server)
    async with AsyncA2MClient.in_process(log) as a2m:
        context = _context()
        await A2MMemory(a2m).update_context(context)
    assert log.count("memory/recall") == 1
    assert log.count("memory/observations/recall") == (1 if grant else 0)
    # A local caller without a principal reads every record; only a grant marks one.
    assert ("[acme/api, agent planner]" in await _system_text(context)) is grant

"""Observations another project granted come back among A2MMemory's relevant memories,
sync and async, marked with their project; another agent's do not; and no grant costs
no call."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain import A2MMemory
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

INPUTS = {"input": "Which fastapi version should the web service pin?"}


def test_a_granted_observation_is_relevant_and_marked(
    a2m_server_factory: ServerFactory,
) -> None:
    server = a2m_server_factory(granted_config())
    seed_granted_project(server)
    with serve_http(server, tokens=TOKENS) as url, A2MClient(url, token=WEB_TOKEN) as client:
        memory = A2MMemory(client=client, session_id="s", relevant_key="facts")
        facts = memory.load_memory_variables(INPUTS)["facts"]
    assert f"[transferred from acme/api] {GRANTED_FACT}" in facts.splitlines()
    assert OTHER_AGENT_FACT not in facts  # the grant is the same agent's only


@pytest.mark.anyio
async def test_async_documents_say_where_a_transfer_came_from(
    a2m_server_factory: ServerFactory,
) -> None:
    server = a2m_server_factory(granted_config())
    granted_id = seed_granted_project(server)
    with serve_http(server, tokens=TOKENS) as url:
        async with AsyncA2MClient(url, token=WEB_TOKEN) as client:
            memory = A2MMemory(
                client=client, session_id="s", relevant_key="facts", return_docs=True
            )
            loaded = await memory.aload_memory_variables(INPUTS)
    documents: list[Document] = loaded["facts"]
    [granted] = [d for d in documents if d.page_content == GRANTED_FACT]
    assert granted.id == granted_id
    assert granted.metadata["transferred"] is True
    assert granted.metadata["source_project"] == "acme/api"
    assert granted.metadata["source_agent"] == "planner"
    assert 0 < granted.metadata["score"] <= 1


@pytest.mark.parametrize("grant", [True, False], ids=["granted", "no-grant"])
def test_one_observation_recall_where_a_grant_exists_none_elsewhere(
    a2m_server_factory: ServerFactory, grant: bool
) -> None:
    server = a2m_server_factory(granted_config(grant=grant))
    seed_granted_project(server)
    log = MethodLog(server)
    with A2MClient.in_process(log) as client:
        memory = A2MMemory(client=client, session_id="s", relevant_key="facts")
        facts = memory.load_memory_variables(INPUTS)["facts"]
    assert log.count("memory/recall") == 1
    assert log.count("memory/observations/recall") == (1 if grant else 0)
    # A local caller without a principal reads every record; only a grant marks one.
    assert ("[transferred from acme/api]" in facts) is grant

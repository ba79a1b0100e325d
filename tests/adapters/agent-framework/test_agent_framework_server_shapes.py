"""The history provider, the context provider and the session store on every kind of
conformant A2M server, not only the bundled one's defaults: a plain 0.1 server (no
timeline cursor, no ``where`` operators, no event log), one declaring no
``max_recall_limit``, one with a small ``max_recall_limit`` (with and without a cursor),
one with a small ``max_records_per_call``, and ones lacking an optional capability. Runs
give the model what InMemoryHistoryProvider gives it; where the server can neither page
nor give a conversation whole, the newest part comes with an ``IncompleteHistoryWarning``;
no call asks for more records than the server returns in one."""

from __future__ import annotations

import pytest
from agent_framework import Agent, InMemoryHistoryProvider, Message, SessionStore
from maf_fake_client import ScriptedChatClient, calls, said
from test_history_provider import _dicts, _every_content, what_the_model_saw
from test_session_store import _script as _store_script

from a2m_agent_framework import A2MContextProvider, A2MHistoryProvider, A2MSessionStore
from a2m_agent_framework._history import IncompleteHistoryWarning
from a2m_server.config import LimitsConfig
from a2m_testing.shapes import SERVER_SHAPES, SMALL_RECALL_NO_CURSOR, async_client_on, lacking

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("store_backend"),
    pytest.mark.filterwarnings("ignore::agent_framework._feature_stage.ExperimentalWarning"),
]

SAME_ANSWERS = {
    **SERVER_SHAPES,
    **lacking("keys", "tiers", "sessions", "scopes", "embeddings", "salience"),
}


@pytest.mark.parametrize("shape", list(SAME_ANSWERS))
async def test_the_history_answers_as_in_memory_history_on_every_server_shape(
    shape: str,
) -> None:
    """Two runs (six messages, more than three), then eight messages of every content
    type saved, replayed with one more, and cleared."""
    expected = await what_the_model_saw(InMemoryHistoryProvider())
    messages = _every_content()
    async with async_client_on(**SAME_ANSWERS[shape]) as (client, _):
        provider = A2MHistoryProvider(client)
        assert await what_the_model_saw(provider) == expected
        await provider.save_messages("s-all", messages)
        assert _dicts(await provider.get_messages("s-all")) == _dicts(messages)
        more = [*messages, Message(role="user", contents=["new"])]
        await provider.save_messages("s-all", more)
        assert _dicts(await provider.get_messages("s-all")) == _dicts(more)
        await provider.clear("s-all")
        assert await provider.get_messages("s-all") == []


async def test_a_conversation_a_server_cannot_page_comes_newest_first_with_a_warning() -> None:
    """No cursor and ``max_recall_limit`` 3: two messages read back whole; eight read
    back as the newest three, with a warning; a replayed transcript still adds only what
    is new (its tail read asks for three)."""
    messages = _every_content()
    async with async_client_on(**SMALL_RECALL_NO_CURSOR) as (client, log):
        provider = A2MHistoryProvider(client)
        await provider.save_messages("short", messages[:2])
        assert _dicts(await provider.get_messages("short")) == _dicts(messages[:2])
        await provider.save_messages("long", messages)
        with pytest.warns(IncompleteHistoryWarning, match="more than the 3 records"):
            assert _dicts(await provider.get_messages("long")) == _dicts(messages[-3:])
        before = log.count("memory/remember")
        await provider.save_messages("long", [*messages, Message(role="user", contents=["new"])])
        assert log.count("memory/remember") == before + 1
        systems = await client.timeline(where={"role": "system", "session": "long"}, limit=3)
        assert len(systems.records) == 1  # nothing of the replay was written again


async def test_writes_go_in_batches_the_server_accepts() -> None:
    """Eight messages on a server taking two a call: four ``memory/remember`` calls."""
    async with async_client_on(limits=LimitsConfig(max_records_per_call=2)) as (client, log):
        provider = A2MHistoryProvider(client)
        await provider.save_messages("s", _every_content())
        assert log.count("memory/remember") == 4
        assert _dicts(await provider.get_messages("s")) == _dicts(_every_content())


@pytest.mark.parametrize("shape", [*SAME_ANSWERS, "no cursor, max_recall_limit 3"])
async def test_the_context_asks_for_no_more_than_the_server_returns(shape: str) -> None:
    """``k`` 5: the run gets the five best memories, or the three best where the server's
    ``max_recall_limit`` is 3 (its recall of candidates asks for three, not ``2k``); the
    fact tool and the turn write on every shape."""
    model = ScriptedChatClient(
        [calls("remember_fact", {"fact": "Ada flies on Friday"}, call_id="f1"), said("Noted.")]
    )
    config = SAME_ANSWERS.get(shape, SMALL_RECALL_NO_CURSOR)
    async with async_client_on(**config) as (client, _):
        for n in range(6):
            await client.remember(f"Ada's window seat, row {n}")
        memory = A2MContextProvider(client, agent="concierge", k=5, remember_tool=True)
        agent = Agent(client=model, name="concierge", context_providers=[memory])
        assert (await agent.run("Ada's window seat?")).text == "Noted."
        seen = "\n".join(m.text for m in model.inputs[0] if m.text.startswith("Memories"))
        assert seen.count("window seat, row") == (3 if "max_recall_limit 3" in shape else 5)
        written = await client.timeline(where={"source_framework": "agent-framework"}, limit=3)
        assert sorted(r.content.split(":")[0] for r in written.records) == [
            "Ada flies on Friday",
            "user",
        ]


@pytest.mark.parametrize("shape", [s for s in SAME_ANSWERS if s != "no keys"])
async def test_the_session_store_answers_as_the_framework_store_on_every_server_shape(
    shape: str,
) -> None:
    expected = await _store_script(SessionStore())
    async with async_client_on(**SAME_ANSWERS[shape]) as (client, _):
        assert await _store_script(A2MSessionStore(client)) == expected

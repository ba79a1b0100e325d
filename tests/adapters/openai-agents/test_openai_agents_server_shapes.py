"""A2MSession and the memory tools on every kind of conformant A2M server, not only the
bundled one's defaults: a plain 0.1 server (no timeline cursor, no ``where`` operators,
no event log), one declaring no ``max_recall_limit``, one with a small
``max_recall_limit`` (with and without a cursor), one with a small
``max_records_per_call``, and ones lacking an optional capability. Every call answers as
the SDK's own SQLiteSession does; where the server can neither page nor give a history
whole, the newest part comes with an ``IncompleteHistoryWarning``; no call asks for more
records than the server returns in one."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, Runner, SQLiteSession
from oai_fake_model import ScriptedModel, calls, said
from oai_items import every_kind_of_item
from test_session_side_by_side import _script

from a2m_openai_agents import A2MSession, IncompleteHistoryWarning, memory_tools
from a2m_server.config import LimitsConfig
from a2m_testing.shapes import SERVER_SHAPES, SMALL_RECALL_NO_CURSOR, async_client_on, lacking

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]

SAME_ANSWERS = {
    **SERVER_SHAPES,
    **lacking("keys", "tiers", "sessions", "scopes", "embeddings", "salience"),
}


async def _reference() -> list[Any]:
    session = SQLiteSession("s1")
    try:
        return await _script(session)
    finally:
        session.close()


@pytest.mark.parametrize("shape", list(SAME_ANSWERS))
async def test_every_call_answers_as_sqlite_session_does_on_every_server_shape(
    shape: str,
) -> None:
    expected = await _reference()
    async with async_client_on(**SAME_ANSWERS[shape]) as (client, _):
        assert await _script(A2MSession("s1", client, agent="assistant")) == expected


async def test_a_server_that_cannot_page_gives_the_newest_with_a_warning() -> None:
    """No cursor and ``max_recall_limit`` 3: reads up to three items answer as
    SQLiteSession does; a read of more gives the newest three and says so; pops (which
    read a window of the newest) empty the session in SQLiteSession's order."""
    items = every_kind_of_item()[:5]
    reference = SQLiteSession("s2")
    try:
        await reference.add_items(items)
        async with async_client_on(**SMALL_RECALL_NO_CURSOR) as (
            client,
            _,
        ):
            ours = A2MSession("s2", client)
            await ours.add_items(items)
            for limit in (1, 2, 3):
                assert await ours.get_items(limit) == await reference.get_items(limit)
            for limit in (None, 4, 10):
                with pytest.warns(IncompleteHistoryWarning, match="more than the 3 records"):
                    assert await ours.get_items(limit) == items[-3:]
            popped = [await ours.pop_item() for _ in range(6)]
            assert popped == [await reference.pop_item() for _ in range(6)]
            assert popped[-1] is None
    finally:
        reference.close()


async def test_writes_go_in_batches_the_server_accepts() -> None:
    """Five items on a server taking two a call: three ``memory/remember`` calls."""
    async with async_client_on(limits=LimitsConfig(max_records_per_call=2)) as (client, log):
        session = A2MSession("s3", client)
        await session.add_items(every_kind_of_item()[:5])
        assert log.count("memory/remember") == 3
        assert await session.get_items() == every_kind_of_item()[:5]


@pytest.mark.parametrize("shape", [*SAME_ANSWERS, "no cursor, max_recall_limit 3"])
async def test_the_memory_tools_ask_for_no_more_than_the_server_returns(shape: str) -> None:
    """Six memories: the model's ``recall_memory`` with its default limit (5) and with 10
    answers with five and six, or with the three best where the server's
    ``max_recall_limit`` is 3 (a read of more would be refused); ``remember`` writes on
    every shape."""
    model = ScriptedModel(
        [
            [calls("recall_memory", '{"query": "window seat"}', call_id="r1")],
            [calls("recall_memory", '{"query": "window seat", "limit": 10}', call_id="r2")],
            [calls("remember", '{"content": "Ada flies on Friday"}', call_id="w1")],
            [said("Done.")],
        ]
    )
    config = SAME_ANSWERS.get(shape, SMALL_RECALL_NO_CURSOR)
    small = "max_recall_limit 3" in shape
    async with async_client_on(**config) as (client, _):
        for n in range(6):
            await client.remember(f"Ada's window seat, row {n}")
        agent = Agent(name="concierge", model=model, tools=memory_tools(client, agent="a"))
        result = await Runner.run(agent, "Which seat?")
        assert result.final_output == "Done."
        found = (await client.recall("Friday", limit=1)).records
        assert [r.content for r in found] == ["Ada flies on Friday"]
    for turn, wanted in ((1, 3 if small else 5), (2, 3 if small else 6)):
        output = model.inputs[turn][-1]
        assert output["type"] == "function_call_output"
        assert output["output"].count("window seat, row") == wanted, output["output"]

"""Query results carry their score where AutoGen's own vector memories (ChromaDB, Redis)
put it, ``metadata["score"]``, as well as under ``metadata["a2m"]``; and what scores under
the threshold never reaches the model context."""

from __future__ import annotations

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

from a2m import AsyncA2MClient, Record
from a2m_autogen import PROVENANCE_KEY, A2MMemory
from a2m_autogen._memory import _below

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]

TEXT = MemoryMimeType.TEXT
NOTES = [
    "The user prefers metric units for weather",
    "units units units metric",
    "The user likes black coffee",
    "weather in Paris is mild",
]


async def _memory(client: AsyncA2MClient, **options: object) -> A2MMemory:
    memory = A2MMemory(client, namespace="app/scores", k=10, **options)  # type: ignore[arg-type]
    await memory.add_many([MemoryContent(content=note, mime_type=TEXT) for note in NOTES])
    return memory


async def test_each_result_carries_its_score_where_autogen_memories_do(
    client: AsyncA2MClient,
) -> None:
    memory = await _memory(client)
    results = (await memory.query("What units should the user use for the weather?")).results
    assert results
    scores = []
    for result in results:
        assert result.metadata is not None
        assert isinstance(result.metadata["score"], float)
        assert result.metadata["score"] == result.metadata[PROVENANCE_KEY]["score"]
        scores.append(result.metadata["score"])
    assert scores == sorted(scores, reverse=True)


async def test_nothing_under_the_threshold_reaches_the_model(client: AsyncA2MClient) -> None:
    question = "What units should the user use for the weather?"
    everything = (await (await _memory(client)).query(question)).results
    threshold = 0.5
    above = [r.content for r in everything if r.metadata and r.metadata["score"] >= threshold]
    assert 0 < len(above) < len(everything)  # the threshold does leave some out
    memory = A2MMemory(client, namespace="app/scores", k=10, score_threshold=threshold)
    context = UnboundedChatCompletionContext([UserMessage(content=question, source="user")])
    result = await memory.update_context(context)
    assert [c.content for c in result.memories.results] == above
    (added,) = [m for m in await context.get_messages() if isinstance(m, SystemMessage)]
    for note in NOTES:
        assert (note in added.content) is (note in above)


def test_by_default_only_what_scores_zero_or_less_is_left_out() -> None:
    def scored(score: float | None) -> Record:
        return Record.model_validate(
            {"id": "r", "content": "x", "created_at": "2026-01-01T00:00:00Z", "score": score}
        )

    assert _below(scored(0.0), None)
    assert not _below(scored(0.001), None)
    assert not _below(scored(None), None)  # a listing, not a ranking: nothing to compare
    assert _below(scored(0.49), 0.5)
    assert not _below(scored(0.5), 0.5)

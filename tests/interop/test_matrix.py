"""The N-by-N interop matrix: for every ordered pair of participants, what the writer stores
the reader finds — its text, its provenance and, where both carry one, its vector intact.

The matrix is printed, and must equal the table in ``docs/interop.md``: a cell that is
not ✅ there says why, and a cell that changes fails this test until the table says so."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from frameworks import (
    A2EHost,
    AgnoKnowledge,
    AgnoMemory,
    AutoGenMemory,
    CrewAIStorage,
    LangChainChatHistory,
    LangChainMemory,
    LangChainVectorStore,
    LangGraphStore,
)
from participants import Fact, Participant, RawClient, Rest

from a2m_server import A2MServer
from a2m_testing.servers import serve_http

DOCS = Path(__file__).parents[2] / "docs" / "interop.md"
PARTICIPANTS: list[Callable[[str], Participant]] = [
    LangChainMemory,
    LangChainChatHistory,
    LangChainVectorStore,
    LangGraphStore,
    CrewAIStorage,
    AutoGenMemory,
    AgnoMemory,
    AgnoKnowledge,
    A2EHost,
    RawClient,
    Rest,
]
OK = "✅"


def check(reader: Participant, writer: Participant, fact: Fact) -> str:
    """The cell for ``writer`` → ``reader``: ✅, or what went wrong, in a few words."""
    seen = reader.read(fact)
    if seen is None:
        return "not found"
    if seen.content != fact.text and fact.text not in seen.content:
        return "text changed"
    if seen.source_framework != writer.source_framework:
        return "provenance lost"
    if writer.carries_embeddings and reader.carries_embeddings:
        if seen.embedding is None or len(seen.embedding) != len(fact.embedding):
            return "vector lost"
        if any(abs(a - b) > 1e-6 for a, b in zip(seen.embedding, fact.embedding, strict=True)):
            return "vector changed"
    return OK


def documented() -> dict[tuple[str, str], str]:
    """(writer, reader) -> the cell's first word in docs/interop.md's matrix."""
    lines = [line for line in DOCS.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    readers = header[1:]
    cells: dict[tuple[str, str], str] = {}
    for line in lines[2:]:
        row = [cell.strip() for cell in line.strip("|").split("|")]
        if len(row) != len(header):
            break  # the end of the matrix: another table follows
        for reader, cell in zip(readers, row[1:], strict=True):
            cells[(row[0], reader)] = re.split(r"\s", cell, maxsplit=1)[0]
    return cells


def render(names: list[str], cells: dict[tuple[str, str], str]) -> str:
    width = max(len(name) for name in names)
    head = f"{'writer ↓ / reader →':<{width}} | " + " | ".join(names)
    rows = [f"{w:<{width}} | " + " | ".join(cells[(w, r)] for r in names) for w in names]
    return "\n".join([head, *rows])


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with A2MServer() as server, serve_http(server) as address:
        yield address


@pytest.fixture(scope="module")
def participants(url: str) -> Iterator[list[Participant]]:
    made = [make(url) for make in PARTICIPANTS]
    yield made
    for participant in made:
        participant.close()


def test_every_reader_finds_what_every_writer_wrote(participants: list[Participant]) -> None:
    facts = {}
    for index, writer in enumerate(participants):
        facts[writer.name] = Fact(writer.name, f"zq{index}x{len(writer.name)}w")
        writer.write(facts[writer.name])
    cells = {
        (writer.name, reader.name): check(reader, writer, facts[writer.name])
        for writer in participants
        for reader in participants
    }
    names = [participant.name for participant in participants]
    print("\n" + render(names, cells))
    expected = documented()
    got = {pair: (OK if cell == OK else "❌") for pair, cell in cells.items()}
    missing = [pair for pair in got if pair not in expected]
    assert not missing, f"docs/interop.md lacks the cells {missing}"
    wrong = {pair: cells[pair] for pair in got if got[pair] != expected[pair]}
    assert not wrong, f"cells that differ from docs/interop.md: {wrong}"

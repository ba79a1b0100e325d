"""The AutoGen participant of the interop matrix: AutoGen's own ``Memory`` interface
(``add`` / ``query``) through ``a2m_autogen.A2MMemory``."""

from __future__ import annotations

import asyncio

from autogen_core.memory import MemoryContent, MemoryMimeType
from participants import Fact, Participant, Seen

from a2m_autogen import PROVENANCE_KEY, A2MMemory


class AutoGenMemory(Participant):
    """``A2MMemory.add`` and ``A2MMemory.query``, on a loop of its own (the memory is
    async; the matrix drives participants from plain functions). AutoGen's memory carries
    no vectors."""

    name = "AutoGen"
    source_framework = "autogen"

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.memory = A2MMemory(url=url, namespace="interop/autogen", k=5)

    def write(self, fact: Fact) -> None:
        content = MemoryContent(content=fact.text, mime_type=MemoryMimeType.TEXT)
        self.loop.run_until_complete(self.memory.add(content))

    def read(self, fact: Fact) -> Seen | None:
        found = self.loop.run_until_complete(self.memory.query(fact.word))
        for result in found.results:
            if isinstance(result.content, str) and fact.word in result.content:
                provenance = (result.metadata or {}).get(PROVENANCE_KEY, {})
                return Seen(result.content, provenance.get("source_framework"))
        return None

    def close(self) -> None:
        self.loop.run_until_complete(self.memory.close())
        self.loop.close()

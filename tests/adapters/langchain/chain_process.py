"""One turn of a conversation in a process of its own: a classic ``ConversationChain``
with ``A2MMemory`` and a fake chat model, against the A2M server at ``argv[1]``.

Prints, as JSON, the chain's answer and the prompt the model was given, so the test can
see what the process remembered of the turns before it."""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from typing import Any

from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain import A2MMemory


class RecordingChatModel(FakeListChatModel):
    """A fake chat model that keeps the prompts it was given."""

    seen: list[str] = []

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.seen.append("\n".join(str(m.content) for m in messages))
        return super()._call(messages, *args, **kwargs)


def main(url: str, mode: str, question: str, answer: str) -> None:
    warnings.simplefilter("ignore")  # ConversationChain is deprecated; it is what users have
    from langchain_classic.chains import ConversationChain

    model = RecordingChatModel(responses=[answer])
    if mode == "sync":
        with A2MClient(url) as client:
            memory = A2MMemory(client=client, session_id="conversation-1")
            result = ConversationChain(llm=model, memory=memory).invoke({"input": question})
    else:

        async def turn() -> dict[str, Any]:
            async with AsyncA2MClient(url) as client:
                memory = A2MMemory(client=client, session_id="conversation-1")
                chain = ConversationChain(llm=model, memory=memory)
                return await chain.ainvoke({"input": question})

        result = asyncio.run(turn())
    print(json.dumps({"answer": result["response"], "seen": model.seen}))


if __name__ == "__main__":
    main(*sys.argv[1:5])

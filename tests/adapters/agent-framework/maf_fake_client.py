"""A scripted Agent Framework chat client: it answers each model call with the next
scripted message (function calls run through the framework's own function-invocation
layer) and records every input it was given. No API key, no network."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import BaseChatClient, ChatResponse, Content, Message
from agent_framework._tools import FunctionInvocationLayer


def said(text: str) -> Message:
    """An assistant message saying ``text``."""
    return Message(role="assistant", contents=[text])


def calls(name: str, arguments: dict[str, Any], *, call_id: str) -> Message:
    """An assistant message calling a function."""
    return Message(
        role="assistant",
        contents=[Content.from_function_call(call_id=call_id, name=name, arguments=arguments)],
    )


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Answers the n-th model call with the n-th scripted message."""

    def __init__(self, turns: Sequence[Message]) -> None:
        super().__init__()
        self.turns = list(turns)
        self.inputs: list[list[Message]] = []

    async def _answer(self, messages: Sequence[Message]) -> ChatResponse:
        self.inputs.append(list(messages))
        return ChatResponse(messages=[self.turns.pop(0)])

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Any:
        if stream:
            raise NotImplementedError("these tests run without streaming")
        return self._answer(messages)

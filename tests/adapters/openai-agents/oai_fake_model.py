"""A scripted Agents SDK model: it answers each turn from a list and records every input it
was given, so a test can check what the model saw. No API key, no network."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


def said(text: str, *, index: int = 0) -> ResponseOutputMessage:
    """An assistant message saying ``text``."""
    return ResponseOutputMessage(
        id=f"msg_{index}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def calls(name: str, arguments: str, *, call_id: str) -> ResponseFunctionToolCall:
    """A function call the model makes."""
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}", type="function_call", call_id=call_id, name=name, arguments=arguments
    )


class ScriptedModel(Model):
    """Answers the n-th model call with the n-th list of output items."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append([input] if isinstance(input, str) else list(input))
        output = self.turns.pop(0)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("these tests run without streaming")

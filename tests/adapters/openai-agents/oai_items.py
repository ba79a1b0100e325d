"""Input items of every kind the Agents SDK puts in a session, for the tests to round-trip."""

from __future__ import annotations

from typing import Any


def every_kind_of_item() -> list[dict[str, Any]]:
    """One input item of each kind a run puts in a session: messages (plain, multimodal,
    model output), function calls and their outputs, reasoning, searches, references."""
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the weather in Lyon?"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "And this picture?"},
                {
                    "type": "input_image",
                    "image_url": "https://example.test/cat.png",
                    "detail": "auto",
                },
                {"type": "input_file", "file_id": "file-123", "filename": "notes.pdf"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
            "encrypted_content": None,
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Lyon"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 24°C"},
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "Lyon weather"},
        },
        {
            "type": "file_search_call",
            "id": "fs_1",
            "status": "completed",
            "queries": ["Lyon climate"],
            "results": [
                {"file_id": "file-9", "filename": "climate.txt", "score": 0.87, "text": "mild"}
            ],
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "It is sunny in Lyon, 24°C.", "annotations": []}
            ],
        },
        {"type": "item_reference", "id": "msg_0"},
        {"role": "user", "content": "Merci ! 🌞 ünïcödé"},
    ]

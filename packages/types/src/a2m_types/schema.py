"""The A2M 0.1 JSON Schema, shipped with the models, for validating raw messages."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["json_schema", "method_schema"]


@cache
def json_schema() -> dict[str, Any]:
    """The specification's JSON Schema (draft 2020-12), as published with A2M 0.1."""
    text = resources.files(__package__).joinpath("a2m-0.1.schema.json").read_text("utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def method_schema(method: str, part: str) -> dict[str, Any]:
    """A self-contained schema for one method's ``params`` or ``result``."""
    schema = json_schema()
    return {"$defs": schema["$defs"], **schema["methods"][method][part]}

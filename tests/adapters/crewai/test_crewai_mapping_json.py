"""The mapping refuses metadata JSON cannot hold exactly, before anything is sent: what
``json.dumps(allow_nan=False)`` refuses, and what it would change on the way back (a tuple
read back as a list, a key that is not text read back as text)."""

from __future__ import annotations

import json
import math
from datetime import datetime
from enum import IntEnum
from typing import Any

import pytest
from crewai.memory.types import MemoryRecord

from a2m_crewai._mapping import Layout, record_input

LAYOUT = Layout(
    capabilities=frozenset({"keys", "embeddings", "salience"}),
    tier=None,
    max_recall_limit=100,
    max_records_per_call=100,
)


class _Level(IntEnum):
    HIGH = 2


class _Float(float):
    pass


CASES: list[Any] = [
    {"n": 1, "tags_of_mine": ["a", 2.5, None, True], "deep": {"x": [{"y": -0.0}]}},
    {"nan": math.nan},
    {"deep": {"inf": [1.0, -math.inf]}},
    {"tuple": (1, "a")},
    {"enum": _Level.HIGH},
    {"sub": _Float(0.5)},
    {"sub_nan": _Float(math.nan)},
    {"when": datetime(2026, 1, 1)},
    {"set": {1, 2}},
    {"deep": [[[{"bytes": b"x"}]]]},
    {"deep": {1: "an int key"}},  # MemoryRecord checks only the top level's keys
    {"deep": {None: "a null key"}},
    {"deep": [{(1, 2): "a tuple key"}]},
    {"huge": 10**30},
]


def _refused_by_json(metadata: Any) -> bool:
    try:
        text = json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError):
        return True
    return bool(json.loads(text) != metadata)


@pytest.mark.parametrize("metadata", CASES)
def test_metadata_is_refused_exactly_where_json_refuses_it(metadata: Any) -> None:
    record = MemoryRecord(content="x", metadata=metadata)
    if _refused_by_json(metadata):
        with pytest.raises(ValueError, match="A2M stores JSON exactly"):
            record_input(record, LAYOUT)
    else:
        assert record_input(record, LAYOUT)["content"] == "x"

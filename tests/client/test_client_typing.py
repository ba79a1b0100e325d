"""The type checker in strict mode on ``client/``, and on a snippet that uses the client, so
a verb whose return type decays to ``Any`` fails here rather than in a user's editor."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USAGE = """
from typing_extensions import assert_type

from a2m import (
    A2MClient, AsyncA2MClient, AsyncSubscription, AsyncWatcher, DescribeResult, Event,
    FetchResult, RecallResult, Record, RememberResult, Subscription, TimelineResult, Watcher,
)


def sync_usage(client: A2MClient) -> None:
    assert_type(client.describe(), DescribeResult)
    assert_type(client.remember(["a", {"content": "b"}]), RememberResult)
    assert_type(client.recall("q", limit=3, where={"role": "user"}), RecallResult)
    assert_type(client.timeline(limit=2), TimelineResult)
    assert_type(client.fetch("k").record, "Record | None")
    assert_type(client.fetch("k"), FetchResult)
    assert_type(client.watch(), Watcher)
    assert_type(client.subscribe(), Subscription)
    assert_type(client.with_options(timeout=5), A2MClient)
    for event in client.subscribe():
        assert_type(event, Event)


async def async_usage(client: AsyncA2MClient) -> None:
    assert_type(await client.recall("q"), RecallResult)
    assert_type(client.watch(), AsyncWatcher)
    subscription = await client.subscribe()
    assert_type(subscription, AsyncSubscription)
    async for event in subscription:
        assert_type(event, Event)
    records: list[Record] = (await client.timeline()).records
    del records
"""


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_strict_on_the_client_and_its_use(tmp_path: Path) -> None:
    usage = tmp_path / "usage_of_a2m.py"
    usage.write_text(USAGE)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "client/src", str(usage)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

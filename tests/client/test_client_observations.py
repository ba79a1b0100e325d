"""The observation verbs (docs/observations.md) on every cell of the matrix ({sync, async} x
{in-process, stdio, HTTP}) against the real bundled server: typed results, dedup, the audit
log, typed errors for bad input with nothing sent or written, and a refusal unsent when the
server does not declare the extension."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from client_support import Driver

from a2m.errors import CapabilityNotSupported, InvalidParams, QuotaExceeded, UnknownRecord
from a2m_server.config import ObservationsConfig
from a2m_types.observations import (
    ObservationAuditResult,
    ObservationListResult,
    ObservationRecallResult,
    ObservationRememberResult,
)

pytestmark = pytest.mark.anyio


async def test_remember_deduplicates_and_every_verb_returns_its_typed_result(
    client: Driver,
) -> None:
    first = await client.remember_observation(
        "All date/time values use ISO 8601 UTC strings.",
        classification="convention",
        file_path="services/billing/src/utils/dates.ts",
        tags=("datetime", "billing"),
        weight=2.0,
    )
    assert isinstance(first, ObservationRememberResult)
    assert not first.deduplicated
    again = await client.remember_observation("all date/time values use ISO 8601 UTC strings.")
    assert (again.id, again.deduplicated, again.weight) == (first.id, True, 3.0)
    await client.remember_observation("Run the linter before committing.", type="tool-use.lint")

    listed = await client.list_observations(classifications=["convention"])
    assert isinstance(listed, ObservationListResult)
    (observation,) = listed.observations
    assert observation.id == first.id
    assert observation.tags == ["datetime", "billing"]
    assert observation.file_path == "services/billing/src/utils/dates.ts"
    assert observation.weight == 3.0

    ranked = await client.recall_observations("ISO dates", limit=5)
    assert isinstance(ranked, ObservationRecallResult)
    assert ranked.observations[0].id == first.id
    assert ranked.observations[0].score is not None

    updated = await client.update_observation(first.id, weight=0.5, tags=["dates"])
    assert (updated.observation.weight, updated.observation.tags) == (0.5, ["dates"])
    since = datetime.now(timezone.utc) - timedelta(minutes=5)
    audit = await client.observation_audit(observation_id=first.id, since=since)
    assert isinstance(audit, ObservationAuditResult)
    assert [e.action for e in audit.entries] == ["updated", "merged", "created"]
    assert audit.entries[0].before is not None
    assert audit.entries[0].before["weight"] == 3.0

    deleted = await client.delete_observations([first.id])
    assert deleted.deleted == 1
    with pytest.raises(UnknownRecord):
        await client.delete_observations([first.id])


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"content": "x", "weight": -1.0}, InvalidParams),
        ({"content": "x", "weight": math.nan}, InvalidParams),
        ({"content": "x", "weight": math.inf}, InvalidParams),
        ({"content": ""}, InvalidParams),
        ({"content": "x", "tags": [""]}, InvalidParams),
    ],
)
async def test_bad_input_is_refused_before_anything_is_sent(
    client: Driver, spy: Any, arguments: dict[str, Any], error: type[Exception]
) -> None:
    await client.describe()
    recorder = spy(client)
    with pytest.raises(error):
        await client.remember_observation(**arguments)
    assert recorder.methods == []


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"content": "x", "weight": 1e9}, InvalidParams),
        ({"content": "   "}, InvalidParams),
        ({"content": "y" * 100_001}, QuotaExceeded),
    ],
)
async def test_bad_input_the_server_judges_is_a_typed_error_and_writes_nothing(
    client: Driver, arguments: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        await client.remember_observation(**arguments)
    assert (await client.list_observations()).observations == []


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("binding", ["in-process", "http"])
async def test_a_server_without_the_extension_is_refused_unsent(
    make_driver: Any, spy: Any, mode: str, binding: str
) -> None:
    from client_support import close_all

    driver = make_driver(mode, binding, config={"observations": ObservationsConfig(enabled=False)})
    try:
        await driver.describe()
        recorder = spy(driver)
        with pytest.raises(CapabilityNotSupported):
            await driver.remember_observation("x")
        assert recorder.methods == []
    finally:
        await close_all(make_driver)

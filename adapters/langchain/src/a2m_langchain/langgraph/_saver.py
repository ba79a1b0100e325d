"""LangGraph's checkpointer on A2M: :class:`A2MSaver`, over a synchronous or an
asynchronous client, with both surfaces. What each method costs is in
:mod:`._saver_plan`."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter_support import settled
from a2m_types.rest import validate_namespace

from ._effects import Call, Plan, adrive, drive
from ._saver_plan import (
    SaverSettings,
    plan_copy_thread,
    plan_delete_for_runs,
    plan_delete_thread,
    plan_get_tuple,
    plan_list,
    plan_prune,
    plan_put,
    plan_put_writes,
)

__all__ = ["A2MSaver"]

T = TypeVar("T")


class A2MSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose threads are A2M sessions (``session`` = thread id).

    ``A2MSaver(A2MClient(...))`` or ``A2MSaver(AsyncA2MClient(...))``: the client's kind
    decides which surface is native. With a synchronous client the async methods run it
    in a worker thread; with an asynchronous one the synchronous methods run on the
    saver's event loop from another thread (as LangGraph does for synchronous nodes of an
    async graph), and raise on the loop itself, where they would deadlock it.

    Checkpoints and pending writes live under ``namespace`` (default ``langgraph``) and
    are opaque to other frameworks; with ``transcript=True`` each new message of a thread
    is also written as a readable episodic record with its role, which is what other
    frameworks' agents read. :meth:`close_thread` lets a finished thread settle. The
    client is the caller's: the saver never closes it, and sends nothing until used."""

    def __init__(
        self,
        client: A2MClient | AsyncA2MClient,
        *,
        namespace: str = "langgraph",
        transcript: bool = False,
        source_framework: str = "langgraph",
        agent: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.client = client
        self._settings = SaverSettings(
            root=validate_namespace(namespace),
            serde=self.serde,
            source_framework=source_framework,
            agent=agent,
            transcript=transcript,
        )
        self._loop: asyncio.AbstractEventLoop | None = _running_loop()

    @property
    def settings(self) -> SaverSettings:
        """What the plans run with, holding the saver's serializer as it is now: LangGraph
        compiles a graph with a clone whose serializer allows the graph's own types
        (:meth:`with_allowlist`), which must be the one that reads its checkpoints."""
        if self._settings.serde is not self.serde:
            self._settings = dataclasses.replace(self._settings, serde=self.serde)
        return self._settings

    # --- the two drivers ----------------------------------------------------------------

    def _run(self, plan: Plan[T]) -> T:
        if isinstance(self.client, A2MClient):
            return drive(plan, self.client, None)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            plan.close()
            raise RuntimeError(
                "A2MSaver over an AsyncA2MClient cannot run a synchronous method on its "
                "event loop; await the async one (aget_tuple, aput, …)"
            )
        loop = self._loop
        if loop is None or not loop.is_running():
            plan.close()
            raise RuntimeError(
                "A2MSaver over an AsyncA2MClient runs synchronous methods on its event loop, "
                "which is not running; pass an A2MClient for synchronous code"
            )
        return asyncio.run_coroutine_threadsafe(self._arun_native(plan), loop).result()

    async def _arun(self, plan: Plan[T]) -> T:
        if isinstance(self.client, A2MClient):
            return await asyncio.to_thread(drive, plan, self.client, None)
        self._loop = asyncio.get_running_loop()
        return await self._arun_native(plan)

    async def _awrite(self, plan: Plan[T]) -> T:
        """:meth:`_arun` for a write: run to its end even if the caller is cancelled
        meanwhile (then raised), so no write of several calls is left half-done, as
        ``AsyncPostgresSaver``'s one transaction never is."""
        return await settled(self._arun(plan))

    def _arun_native(self, plan: Plan[T]) -> Coroutine[Any, Any, T]:
        assert isinstance(self.client, AsyncA2MClient)
        return adrive(plan, self.client, None)

    # --- the synchronous surface --------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (or its thread's latest), with pending writes."""
        return self._run(plan_get_tuple(config, self.settings))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints of the thread (all threads for ``None``), newest first, matching
        ``filter`` on their metadata and older than ``before``."""
        yield from self._run(plan_list(config, filter, before, limit, self.settings))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint; returns the config that names it."""
        return self._run(plan_put(config, checkpoint, metadata, new_versions, self.settings))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the checkpoint ``config`` names."""
        self._run(plan_put_writes(config, writes, task_id, task_path, self.settings))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and transcript record of a thread."""
        self._run(plan_delete_thread(thread_id, self.settings))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that these runs made."""
        self._run(plan_delete_for_runs(run_ids, self.settings))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread into another."""
        self._run(plan_copy_thread(source_thread_id, target_thread_id, self.settings))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep each namespace's latest checkpoint (``keep_latest``) or none (``delete``);
        a thread using delta channels is left whole by ``keep_latest``."""
        self._run(plan_prune(thread_ids, strategy, self.settings))

    def __enter__(self) -> A2MSaver:
        """``with saver:`` as with LangGraph's own savers; leaving closes nothing, since
        the client is the caller's."""
        return self

    def __exit__(self, *_: object) -> None:
        return None

    async def __aenter__(self) -> A2MSaver:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    def close_thread(self, thread_id: str) -> None:
        """End the thread's A2M session so its records settle (§4.11); the checkpoints
        stay and the thread can still resume."""
        if isinstance(self.client, A2MClient):
            self.client.close_session(str(thread_id))
            return
        self._run(_close(thread_id))

    # --- the asynchronous surface -------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple`'s twin."""
        return await self._arun(plan_get_tuple(config, self.settings))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list`'s twin."""
        for found in await self._arun(plan_list(config, filter, before, limit, self.settings)):
            yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put`'s twin."""
        return await self._awrite(
            plan_put(config, checkpoint, metadata, new_versions, self.settings)
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`put_writes`'s twin."""
        await self._awrite(plan_put_writes(config, writes, task_id, task_path, self.settings))

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread`'s twin."""
        await self._arun(plan_delete_thread(thread_id, self.settings))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`delete_for_runs`'s twin."""
        await self._awrite(plan_delete_for_runs(run_ids, self.settings))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`copy_thread`'s twin."""
        await self._awrite(plan_copy_thread(source_thread_id, target_thread_id, self.settings))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune`'s twin."""
        await self._awrite(plan_prune(thread_ids, strategy, self.settings))

    async def aclose_thread(self, thread_id: str) -> None:
        """:meth:`close_thread`'s twin."""
        await self._arun(_close(thread_id))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions that sort as strings in the order they were made, as LangGraph's own
        savers make them."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"


def _close(thread_id: str) -> Plan[None]:
    yield Call("close_session", {"session": str(thread_id)})


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop a constructor runs on, if any: synchronous calls from worker threads are
    sent there (only looked at, never started)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None

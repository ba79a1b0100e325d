"""What an async Agno database keeps besides user memories — sessions, runs, metrics,
evals, knowledge rows, traces, learnings — held in this process by an ``InMemoryDb``.

Those calls touch only dictionaries in memory (no I/O), so awaiting them never blocks
the event loop; each coroutine hands its arguments to the in-memory method of the same
name, whose signature and semantics it has."""

from __future__ import annotations

from typing import Any

from agno.db.in_memory import InMemoryDb


class LocalTables:
    """Async twins of ``InMemoryDb``'s non-memory methods, over ``self.local``."""

    local: InMemoryDb

    async def calculate_metrics(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.calculate_metrics``, awaited."""
        return self.local.calculate_metrics(*args, **kwargs)

    async def create_eval_run(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.create_eval_run``, awaited."""
        return self.local.create_eval_run(*args, **kwargs)

    async def create_span(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.create_span``, awaited."""
        return self.local.create_span(*args, **kwargs)

    async def create_spans(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.create_spans``, awaited."""
        return self.local.create_spans(*args, **kwargs)

    async def delete_eval_runs(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_eval_runs``, awaited."""
        return self.local.delete_eval_runs(*args, **kwargs)

    async def delete_knowledge_content(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_knowledge_content``, awaited."""
        return self.local.delete_knowledge_content(*args, **kwargs)

    async def delete_learning(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_learning``, awaited."""
        return self.local.delete_learning(*args, **kwargs)

    async def delete_run(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_run``, awaited."""
        return self.local.delete_run(*args, **kwargs)

    async def delete_runs(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_runs``, awaited."""
        return self.local.delete_runs(*args, **kwargs)

    async def delete_session(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_session``, awaited."""
        return self.local.delete_session(*args, **kwargs)

    async def delete_sessions(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.delete_sessions``, awaited."""
        return self.local.delete_sessions(*args, **kwargs)

    async def get_eval_run(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_eval_run``, awaited."""
        return self.local.get_eval_run(*args, **kwargs)

    async def get_eval_runs(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_eval_runs``, awaited."""
        return self.local.get_eval_runs(*args, **kwargs)

    async def get_knowledge_content(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_knowledge_content``, awaited."""
        return self.local.get_knowledge_content(*args, **kwargs)

    async def get_knowledge_contents(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_knowledge_contents``, awaited."""
        return self.local.get_knowledge_contents(*args, **kwargs)

    async def get_latest_schema_version(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_latest_schema_version``, awaited."""
        return self.local.get_latest_schema_version(*args, **kwargs)

    async def get_learning(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_learning``, awaited."""
        return self.local.get_learning(*args, **kwargs)

    async def get_learnings(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_learnings``, awaited."""
        return self.local.get_learnings(*args, **kwargs)

    async def get_metrics(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_metrics``, awaited."""
        return self.local.get_metrics(*args, **kwargs)

    async def get_run(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_run``, awaited."""
        return self.local.get_run(*args, **kwargs)

    async def get_runs(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_runs``, awaited."""
        return self.local.get_runs(*args, **kwargs)

    async def get_session(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_session``, awaited."""
        return self.local.get_session(*args, **kwargs)

    async def get_sessions(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_sessions``, awaited."""
        return self.local.get_sessions(*args, **kwargs)

    async def get_span(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_span``, awaited."""
        return self.local.get_span(*args, **kwargs)

    async def get_spans(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_spans``, awaited."""
        return self.local.get_spans(*args, **kwargs)

    async def get_trace(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_trace``, awaited."""
        return self.local.get_trace(*args, **kwargs)

    async def get_trace_stats(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_trace_stats``, awaited."""
        return self.local.get_trace_stats(*args, **kwargs)

    async def get_traces(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.get_traces``, awaited."""
        return self.local.get_traces(*args, **kwargs)

    async def rename_eval_run(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.rename_eval_run``, awaited."""
        return self.local.rename_eval_run(*args, **kwargs)

    async def rename_session(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.rename_session``, awaited."""
        return self.local.rename_session(*args, **kwargs)

    async def table_exists(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.table_exists``, awaited."""
        return self.local.table_exists(*args, **kwargs)

    async def update_eval_run_user_id(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.update_eval_run_user_id``, awaited."""
        return self.local.update_eval_run_user_id(*args, **kwargs)

    async def upsert_knowledge_content(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.upsert_knowledge_content``, awaited."""
        return self.local.upsert_knowledge_content(*args, **kwargs)

    async def upsert_learning(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.upsert_learning``, awaited."""
        return self.local.upsert_learning(*args, **kwargs)

    async def upsert_run(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.upsert_run``, awaited."""
        return self.local.upsert_run(*args, **kwargs)

    async def upsert_schema_version(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.upsert_schema_version``, awaited."""
        return self.local.upsert_schema_version(*args, **kwargs)

    async def upsert_session(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.upsert_session``, awaited."""
        return self.local.upsert_session(*args, **kwargs)

    async def upsert_trace(self, *args: Any, **kwargs: Any) -> Any:
        """``InMemoryDb.upsert_trace``, awaited."""
        return self.local.upsert_trace(*args, **kwargs)

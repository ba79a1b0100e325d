"""Which client a call runs on: every class takes a sync client, an async one, or both, and
each method uses the one that matches it (sync methods never touch the event loop)."""

from __future__ import annotations

from a2m import A2MClient, AsyncA2MClient


def sort_clients(
    client: A2MClient | AsyncA2MClient | None, async_client: AsyncA2MClient | None
) -> tuple[A2MClient | None, AsyncA2MClient | None]:
    """(sync, async) from what the caller passed: ``client`` may be either kind."""
    if isinstance(client, AsyncA2MClient):
        if async_client is not None:
            raise TypeError("pass one AsyncA2MClient, as client= or as async_client=, not two")
        return None, client
    if client is not None and not isinstance(client, A2MClient):
        raise TypeError(f"client must be an A2MClient or AsyncA2MClient, not {type(client)}")
    if async_client is not None and not isinstance(async_client, AsyncA2MClient):
        raise TypeError(f"async_client must be an AsyncA2MClient, not {type(async_client)}")
    if client is None and async_client is None:
        raise TypeError("pass an A2MClient (client=) and/or an AsyncA2MClient (async_client=)")
    return client, async_client


def need_sync(client: A2MClient | AsyncA2MClient | None, owner: object, method: str) -> A2MClient:
    """The sync client, or a clear error naming the async twin to call instead."""
    if not isinstance(client, A2MClient):
        raise RuntimeError(
            f"{type(owner).__name__}.{method} is synchronous and this instance was given only "
            f"an AsyncA2MClient: await the async twin (a{method}), or pass client=A2MClient(...)"
        )
    return client


def need_async(client: AsyncA2MClient | None, owner: object, method: str) -> AsyncA2MClient:
    """The async client, or a clear error: running the sync client in a thread would hide
    blocking I/O behind an async name."""
    if client is None:
        raise RuntimeError(
            f"{type(owner).__name__}.{method} is asynchronous and this instance was given only "
            f"a synchronous A2MClient: pass async_client=AsyncA2MClient(...), or call "
            f"{method.removeprefix('a')}"
        )
    return client

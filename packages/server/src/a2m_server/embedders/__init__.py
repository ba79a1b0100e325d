"""Server-side embedders (spec §3.7: a server MAY embed records that arrive without a
vector): one model for every framework writing to the store, so their records and
queries share one semantic space. Off unless configured (``--embedder NAME``).

Built in: ``wordllama`` (offline, 256-d static word vectors shipped in the
``wordllama`` wheel: ``pip install 'a2m-server[embed]'``) and ``endpoint`` (any
OpenAI-compatible ``/v1/embeddings``: vLLM, TEI, Ollama, a hosted API). Any other name
is looked up as an entry point in the ``a2m_server.embedders`` group, or given as
``module:factory``; the factory takes no arguments and returns an :class:`Embedder`."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from .base import Embedder, EmbedderError, check_vectors

__all__ = ["ENTRY_POINT_GROUP", "Embedder", "EmbedderError", "check_vectors", "load_embedder"]

ENTRY_POINT_GROUP = "a2m_server.embedders"


def load_embedder(name: str) -> Embedder:
    """The embedder called ``name``; ValueError naming what is offered when none is."""
    if name == "wordllama":
        from .wordllama import WordLlamaEmbedder

        return WordLlamaEmbedder()
    if name == "endpoint":
        from .endpoint import EndpointEmbedder

        return EndpointEmbedder.from_environment()
    factory = None
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == name:
            factory = point.load()
            break
    if factory is None and ":" in name:
        module, _, attribute = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"embedder {name!r} cannot be imported: {exc}") from None
    if factory is None:
        offered = sorted(
            {"wordllama", "endpoint"} | {p.name for p in entry_points(group=ENTRY_POINT_GROUP)}
        )
        raise ValueError(
            f"unknown embedder {name!r}: offered are {', '.join(offered)}, or module:factory"
        )
    embedder = factory()
    if not isinstance(embedder, Embedder):
        raise ValueError(
            f"embedder {name!r} made a {type(embedder).__name__}, which lacks name, model, "
            "dimensions or embed()"
        )
    return embedder

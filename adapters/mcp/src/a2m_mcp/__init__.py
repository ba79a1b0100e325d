"""A2M memory as an MCP server: every MCP client shares the store that LangChain, CrewAI,
AutoGen and Agno agents use.

``a2m-mcp --db memory.db`` serves an embedded store over stdio; ``a2m-mcp --url URL`` any
A2M server (token from ``A2M_TOKEN``); ``--transport http`` serves streamable HTTP. In
Python, :func:`build_server` puts the same tools over any :class:`~a2m.AsyncA2MClient`."""

from ._graph import Entity, EntityNotFound, Graph, GraphTooLarge, KnowledgeGraph, Relation
from ._server import build_server
from ._tools import A2MTools, MemoryConfig

__all__ = [
    "A2MTools",
    "Entity",
    "EntityNotFound",
    "Graph",
    "GraphTooLarge",
    "KnowledgeGraph",
    "MemoryConfig",
    "Relation",
    "build_server",
]

"""A2M memory for LangChain and LangGraph: memory, chat history, retriever, vector store, store and checkpointer."""

from __future__ import annotations

__all__: list[str] = []

"""The meaning of each ``memory/*`` method, independent of transport and storage."""

from .context import CallContext
from .core import Protocol

__all__ = ["CallContext", "Protocol"]

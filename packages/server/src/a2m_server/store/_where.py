"""One ``where`` entry as SQL: the operator dispatch both stores share. Each store's
:class:`Dialect` says how equality, ordering and presence are written in its SQL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from a2m_types.filters import Condition, parse

__all__ = ["Clause", "Conditions", "Dialect"]

Clause = tuple[str, list[Any]]
"""A SQL condition and its parameters."""


class Conditions:
    """SQL conditions and their parameters, in order, read as one condition: all of them
    (:meth:`text`) or any of them (:meth:`any`). The literals are SQLite's; a dialect
    without them overrides ``TRUE`` and ``FALSE``."""

    TRUE: ClassVar[str] = "1"
    FALSE: ClassVar[str] = "0"

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def text(self) -> str:
        """All the conditions; true when there are none."""
        return " AND ".join(self.clauses) if self.clauses else self.TRUE

    def any(self) -> Clause:
        """Any of the conditions, parenthesised; false when there are none."""
        return "(" + (" OR ".join(self.clauses) or self.FALSE) + ")", self.params


@dataclass(frozen=True)
class Dialect:
    """How one store writes each kind of test; :meth:`clause` combines them."""

    equality: Callable[[Condition, list[Any]], Clause]
    """Any of the values (``$eq``, ``$in``, §5.2 equality)."""
    ordering: Callable[[Condition], Clause]
    """``$gt`` ``$gte`` ``$lt`` ``$lte``."""
    presence: Callable[[Condition], Clause]
    """``$exists``."""

    def condition(self, condition: Condition) -> Clause:
        op = condition.op
        if condition.kind == "logical":
            return self._logical(condition)
        if op in ("$eq", "$ne"):
            clause, params = self.equality(condition, [condition.operand])
        elif op in ("$in", "$nin"):
            clause, params = self.equality(condition, list(condition.operand))
        elif op == "$exists":
            return self.presence(condition)
        else:
            return self.ordering(condition)
        return (f"(NOT {clause})" if op in ("$ne", "$nin") else clause), params

    def _logical(self, condition: Condition) -> Clause:
        """``$and`` / ``$or``: each where object as its conditions joined by AND, the
        objects joined by AND or OR (none is empty: the protocol layer refused that)."""
        params: list[Any] = []
        branches: list[str] = []
        for branch in condition.operand:
            clauses = []
            for part in branch:
                clause, more = self.condition(part)
                clauses.append(clause)
                params += more
            branches.append("(" + " AND ".join(clauses) + ")")
        joiner = " AND " if condition.op == "$and" else " OR "
        return "(" + joiner.join(branches) + ")", params

    def clause(self, name: str, expected: Any) -> Clause:
        """One ``where`` entry (§5.2 equality, and the declared operators) as one
        condition; every operator of an operator object must hold. The protocol layer
        has checked it (:func:`a2m_types.filters.parse`)."""
        clauses: list[str] = []
        params: list[Any] = []
        for condition in parse({name: expected}):
            clause, more = self.condition(condition)
            clauses.append(clause)
            params += more
        return "(" + (" AND ".join(clauses) or "1 = 1") + ")", params

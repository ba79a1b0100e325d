"""``where`` compiled to SQLite: §5.2's equality on a record field, else on a metadata key
(a list means any of its values), and the operators of :mod:`a2m_types.filters` on fields,
metadata keys and nested metadata paths. Each key becomes one parenthesised SQL condition
and its parameters, so a filter never runs in Python.

A long list is one ``IN (SELECT value FROM json_each(?))`` rather than a chain of ``OR``s:
a chain of a thousand alternatives exceeds SQLite's expression depth.

Strings holding U+0000 compare exactly. SQLite's JSON functions end text at NUL: older
versions (3.40) end a decoded string there (``"a\u0000b"`` reads as ``'a'``), newer ones
(3.51) keep it but match a path's key with a stored key up to the first NUL of either
(:func:`_keys_end_at_nul` asks the library which). Metadata text writes NUL as the
escape ``\u0000``, so a row whose text holds none has no NUL anywhere and reads exactly.
A row holding it is tested on :data:`_ORDERED_METADATA`, its text with every string in
:func:`order_key` form, which holds no NUL and keeps equality and order; the fast test on
the text as stored runs first wherever every match passes it too, so a row pays for the
exact test only when the fast one let it through."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sqlite3
from collections.abc import Sequence
from typing import Any

from a2m_types import parse_timestamp, to_epoch_ms
from a2m_types.filters import Condition

from ._json_text import dump_json
from ._where import Clause, Conditions, Dialect

__all__ = [
    "FIELD_COLUMNS",
    "NUMBER_FIELDS",
    "TIME_COLUMNS",
    "field_column",
    "json_path",
    "order_key",
    "tag_clause",
    "text_in",
    "where_clause",
]

FIELD_COLUMNS = {
    "id": "id",
    "content": "content",
    "role": "role",
    "group": "grp",
    "tier": "tier",
    "owner": "owner",
    "session": "session",
    "key": "key",
    "revision": "revision",
    "uri": "uri",
    "media_type": "media_type",
    "salience": "salience",
    "access_count": "access_count",
}
"""Record fields a ``where`` clause may name directly; anything else is a metadata key."""

NUMBER_FIELDS = frozenset({"revision", "salience", "access_count"})
"""The fields holding numbers; the rest hold text. A boolean equals neither kind, a number
never equals text and a string never equals a number: SQLite's column affinity would
turn ``1`` into ``'1'`` (and ``'0'`` into ``0``) if the comparison were left to it."""


def field_column(name: str) -> str:
    """SQL for the record field ``name`` as its wire form has it: ``revision`` is carried
    only by a record with a key (§3.6), so it is NULL on the others."""
    if name == "revision":
        return "(CASE WHEN r.key IS NULL THEN NULL ELSE r.revision END)"
    return f"r.{FIELD_COLUMNS[name]}"


TIME_COLUMNS = {
    "created_at": "created_at",
    "accessed_at": "accessed_at",
    "updated_at": "updated_at",
}
"""Timestamp fields: a where value is their wire form, compared as epoch milliseconds."""

_INT64 = range(-(2**63), 2**63)
_SYMBOLS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_METADATA = "r.metadata"
_COMPARABLE = "json_type({doc}, ?) IN ('integer', 'real', 'text')"
_MAY_HOLD_NUL = "instr(r.metadata, '\\u0000')"
"""SQL, nonzero when the row's metadata text holds the escape of a NUL (or text that looks
like it, such as an escaped backslash before ``u0000``); 0 when none of its strings (keys
or values) holds a NUL."""
_ORDERED_METADATA = (
    "replace(replace(replace(r.metadata, '\\\\', '\\u005c'), '\\u0001', '\\u0001\\u0002'), "
    "'\\u0000', '\\u0001\\u0001')"
)
"""SQL: the row's metadata text with every string, key or value, in :func:`order_key` form
(each escaped backslash spelled ``\\u005c`` first, so that what is replaced is an escape):
JSON that holds no NUL, compared with operands in that form too."""


@functools.lru_cache(maxsize=1024)
def json_path(*segments: str) -> str:
    """The SQLite JSON path of a metadata key, or of a nested path: each segment quoted as
    the stored metadata text writes that key (a control character escaped, as a path may
    not hold it raw); kept for the paths filters name again and again."""
    return "$." + ".".join(map(dump_json, segments))


def order_key(text: str) -> str:
    """``text`` as :data:`_ORDERED_METADATA` holds it: NUL becomes U+0001 U+0001 and
    U+0001 becomes U+0001 U+0002. A prefix code keeping code-point order, so two strings
    compare (and are equal) in this form exactly as they do themselves."""
    return text.replace("\x01", "\x01\x02").replace("\x00", "\x01\x01")


def _ordered(value: Any) -> Any:
    return order_key(value) if isinstance(value, str) else value


def _holds_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


@functools.cache
def _keys_end_at_nul() -> bool:
    """Whether this SQLite's JSON paths match a stored key up to the first NUL of either
    (3.51 does, 3.40 does not), so that no lookup on a row holding a NUL is trusted."""
    with contextlib.closing(sqlite3.connect(":memory:")) as probe:
        row = probe.execute("""SELECT json_extract('{"a\\u0000b": 1}', '$."a"')""").fetchone()
    return row[0] is not None


def _exactly(fast: Clause, exact: Clause, *, then: Clause | None = None) -> Clause:
    """One metadata test, exact on every row: ``exact`` (over :data:`_ORDERED_METADATA`)
    where the row holds a NUL escape, ``fast`` (over the text as stored) elsewhere.

    With ``then``, every match passes ``fast`` on every row, so ``fast`` runs first and
    the rest only on the rows it lets through: ``then`` there on rows holding no NUL
    escape (``("1", [])`` when ``fast`` says all), ``exact`` on the others. Each result is
    1 or 0, never NULL; ``CASE`` keeps each test from running before it is needed."""
    (fast_sql, fast_params), (exact_sql, exact_params) = fast, exact
    if then is not None:
        then_sql, then_params = then
        if not _keys_end_at_nul():
            return (
                f"(CASE WHEN {fast_sql} THEN CASE WHEN {_MAY_HOLD_NUL} = 0 THEN "
                f"coalesce({then_sql}, 0) ELSE coalesce({exact_sql}, 0) END ELSE 0 END)",
                [*fast_params, *then_params, *exact_params],
            )
        if then_sql != "1":
            fast_sql, fast_params = f"({fast_sql} AND {then_sql})", [*fast_params, *then_params]
    return (
        f"(CASE WHEN {_MAY_HOLD_NUL} THEN coalesce({exact_sql}, 0) "
        f"WHEN {fast_sql} THEN 1 ELSE 0 END)",
        [*exact_params, *fast_params],
    )


def _dump(values: list[Any]) -> str:
    return json.dumps(values, ensure_ascii=False, allow_nan=False)


def _number(value: Any) -> Any:
    """``value`` as SQLite can compare it: an integer beyond 64 bits is held as a REAL (in
    JSON too), so compare one; beyond any float, an infinity of its sign."""
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def _moment(value: Any) -> int | None:
    try:
        return to_epoch_ms(parse_timestamp(value)) if isinstance(value, str) else None
    except ValueError:
        return None


def _equality(condition: Condition, values: list[Any]) -> tuple[str, list[Any]]:
    """Any of ``values`` (§5.2): SQL that is 1 or 0, never NULL."""
    found = Conditions()
    scalars: list[Any] = []
    if condition.kind == "time":
        column = f"r.{TIME_COLUMNS[condition.target[0]]}"
        for value in values:
            moment = _moment(value)
            if value is None:
                found.add(f"{column} IS NULL")
            elif moment is None:
                found.add("0")  # not a timestamp: equal to none
            else:
                scalars.append(moment)
        _gather(found, scalars, *_column_tests(column))
        return found.any()
    if condition.kind == "field":
        column = field_column(condition.target[0])
        numeric = condition.target[0] in NUMBER_FIELDS
        for value in map(_number, values):
            if value is None:
                found.add(f"{column} IS NULL")
            elif isinstance(value, bool) or isinstance(value, str) is numeric:
                continue  # equal to no value of this field's kind
            elif _holds_nul(value):
                # Compared whole as bound text; json_each could cut it short at the NUL.
                found.add(_column_tests(column)[0], value)
            else:
                scalars.append(value)
        _gather(found, scalars, *_column_tests(column))
        return found.any()
    target = condition.target
    exact = _metadata_equality(
        _ORDERED_METADATA, json_path(*map(order_key, target)), list(map(_ordered, values))
    )
    if any(map(_holds_nul, target)):
        # A key holding NUL: only the ordered text tells it from its prefix.
        return exact
    path = json_path(*target)
    if any(map(_holds_nul, values)):
        # Only a row holding the escape can hold such a value; json_each (and json_extract
        # in older SQLite) would cut it short, so it joins only the exact test.
        plain = [value for value in values if not _holds_nul(value)]
        return _exactly(_metadata_equality(_METADATA, path, plain), exact)
    fast = _metadata_equality(_METADATA, path, values)
    if not any(isinstance(value, str) for value in values) and not _keys_end_at_nul():
        return fast  # numbers, booleans and null hold no NUL
    # A string equal to one of these holds no NUL, so it reads exactly: every match passes.
    return _exactly(fast, exact, then=("1", []))


def _metadata_equality(doc: str, path: str, values: list[Any]) -> Clause:
    """Whether the value at ``path`` of the metadata text ``doc`` (SQL) is any of
    ``values``, as read by SQLite: exact when no string read holds a NUL."""
    found = Conditions()
    scalars: list[Any] = []
    for value in values:
        if value is None:
            found.add(f"coalesce(json_type({doc}, ?), 'null') = 'null'", path)
        elif isinstance(value, bool):
            found.add(f"coalesce(json_type({doc}, ?) = ?, 0)", path, str(value).lower())
        elif _beyond_int64(value):
            clause, params = _big_equality(doc, path, int(value))
            found.add(clause, *params)
        else:
            # json_extract reports true/false as 1/0 and containers as JSON text: only
            # numbers and strings may compare equal to a scalar.
            scalars.append(value)
    extract = f"json_extract({doc}, ?)"
    if all(map(_unambiguous, scalars)):
        # No value that json_extract could also give for a boolean or a container: the
        # type test is implied, and each row's metadata is parsed once rather than twice.
        _gather(
            found,
            scalars,
            f"coalesce({extract} = ?, 0)",
            f"coalesce({extract} IN (SELECT value FROM json_each(?)), 0)",
            path,
        )
        return found.any()
    comparable = _COMPARABLE.format(doc=doc)
    _gather(
        found,
        scalars,
        f"coalesce({comparable} AND {extract} = ?, 0)",
        f"coalesce({comparable} AND {extract} IN (SELECT value FROM json_each(?)), 0)",
        path,
        path,
    )
    return found.any()


def _beyond_int64(value: Any) -> bool:
    """Whether ``value`` is a number past SQLite's 64-bit integers: a whole number (every
    double that large is one) that SQLite reads, stored as a JSON integer, as a REAL."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not -(2**63) <= value < 2**63
    )


def _double_of(whole: int) -> float:
    try:
        return float(whole)
    except OverflowError:
        return math.inf if whole > 0 else -math.inf


def _big_equality(doc: str, path: str, whole: int) -> Clause:
    """Equality with a whole number past 64 bits, exact: a JSON integer stored is
    compared by its text (SQLite would read it as the nearest REAL, equal to its
    neighbours too), a JSON real by value where a double equals the number."""
    double = _double_of(whole)
    real, real_params = (
        ("0", []) if double != whole else (f"json_extract({doc}, ?) = ?", [path, double])
    )
    return (
        f"(CASE json_type({doc}, ?) WHEN 'integer' THEN ({doc} -> ?) = ? "
        f"WHEN 'real' THEN {real} ELSE 0 END)",
        [path, path, str(whole), *real_params],
    )


def _big_ordering(doc: str, path: str, op: str, whole: int) -> Clause:
    """A comparison with a whole number past 64 bits, exact. Where the stored number
    reads as a REAL other than the operand's nearest double, comparing the two decides
    (rounding keeps order); at a tie a stored real is that double, compared here, and a
    stored integer (as big, of the same sign) compares by its digits: more digits are
    more, as are, among as many, the later in text order."""
    symbol = _SYMBOLS[op]
    double = _double_of(whole)
    extract = f"json_extract({doc}, ?)"
    real_tie = "1" if _holds(op, double, whole) else "0"
    digits = str(abs(whole))
    text = f"({doc} -> ?)"
    if whole > 0:
        text_tie = f"((length({text}), {text}) {symbol} (?, ?))"
        text_params: list[Any] = [path, path, len(digits), digits]
    else:
        magnitude = f"substr({text}, 2)"
        text_tie = f"((?, ?) {symbol} (length({magnitude}), {magnitude}))"
        text_params = [len(digits), digits, path, path]
    return (
        f"(CASE WHEN coalesce(json_type({doc}, ?), 'null') NOT IN ('integer', 'real') THEN 0 "
        f"WHEN {extract} <> ? THEN {extract} {symbol} ? "
        f"WHEN json_type({doc}, ?) = 'real' THEN {real_tie} ELSE {text_tie} END)",
        [path, path, double, path, double, path, *text_params],
    )


def _unambiguous(value: Any) -> bool:
    """Whether only a JSON number or string at a path can give ``json_extract`` this
    value: it reads ``true``/``false`` as 1/0 and an array or object as its JSON text
    (which starts with ``[`` or ``{``); SQLite never finds a number equal to text."""
    if isinstance(value, str):
        return not value.startswith(("[", "{"))
    return bool(value != 0 and value != 1)


def _column_tests(column: str) -> tuple[str, str]:
    """Equality with one value and with any of several, each 1 or 0 (never NULL) and in a
    form the column's index serves, partial indexes (``WHERE x IS NOT NULL``) included: the
    values compared are never NULL, so only the column's NULL needs turning into 0."""
    return (
        f"({column} IS NOT NULL AND {column} = ?)",
        f"({column} IS NOT NULL AND {column} IN (SELECT value FROM json_each(?)))",
    )


def _gather(found: Conditions, scalars: list[Any], single: str, many: str, *lead: Any) -> None:
    if len(scalars) == 1:
        found.add(single, *lead, scalars[0])
    elif scalars:
        found.add(many, *lead, _dump(scalars))


def _ordering(condition: Condition) -> tuple[str, list[Any]]:
    symbol = _SYMBOLS[condition.op]
    operand = condition.operand
    if condition.kind != "metadata":
        operand = _number(operand)
    if condition.kind == "time":
        return f"(r.{TIME_COLUMNS[condition.target[0]]} {symbol} ?)", [_moment(operand)]
    numeric = not isinstance(operand, str)
    if condition.kind == "field":
        column = field_column(condition.target[0])
        kinds = "('integer', 'real')" if numeric else "('text')"
        return f"(typeof({column}) IN {kinds} AND {column} {symbol} ?)", [operand]
    target = condition.target
    exact = _metadata_ordering(
        _ORDERED_METADATA, json_path(*map(order_key, target)), condition.op, _ordered(operand)
    )
    if any(map(_holds_nul, target)):
        return f"coalesce({exact[0]}, 0)", exact[1]
    path = json_path(*target)
    fast = _metadata_ordering(_METADATA, path, condition.op, operand)
    if _keys_end_at_nul():
        return _exactly(fast, exact)
    if numeric or (condition.op in ("$gte", "$lt") and "\x00" not in operand):
        # Exact as read: a string read up to its first NUL is at or above a NUL-free
        # operand exactly when the whole string is, and below it exactly when it is.
        return fast
    if "\x00" not in operand:
        return _cut_short(path, condition.op, operand, exact)
    wide, then = _text_ordering(path, condition.op, operand)
    return _exactly(wide, exact, then=then)


def _cut_short(path: str, op: str, operand: str, exact: Clause) -> Clause:
    """``$gt`` or ``$lte`` with a NUL-free operand: as read, except where the string reads
    as the operand itself, which a string holding NUL right after it also does (where
    SQLite ends a decoded string at NUL): there a row holding a NUL escape gets the exact
    test."""
    extract = "json_extract(r.metadata, ?)"
    low, high = (operand, b"") if op == "$gt" else ("", operand)
    strict = ">" if op == "$gt" else "<"
    is_text = "coalesce(json_type(r.metadata, ?) = 'text', 0)"
    at_operand = f"WHEN {_MAY_HOLD_NUL} THEN coalesce({exact[0]}, 0) ELSE "
    at_operand += "0" if op == "$gt" else is_text
    params: list[Any] = [path, low, high, path, operand, path, *exact[1]]
    if op == "$lte":
        params.append(path)
    return (
        f"(CASE WHEN {extract} BETWEEN ? AND ? THEN CASE WHEN {extract} {strict} ? "
        f"THEN {is_text} {at_operand} END ELSE 0 END)",
        params,
    )


def _text_ordering(path: str, op: str, operand: str) -> tuple[Clause, Clause]:
    """A comparison with a metadata string holding NUL, as a test every match passes on
    every row and the test of its result where the row holds no NUL escape (for
    :func:`_exactly`).

    Where SQLite ends a decoded string at NUL, a string reads as its part before the first
    NUL: never above what it is, so never past an operand it is below, and never below the
    operand read the same way when it is above the operand. So every match lies between
    the ends ``BETWEEN`` reads once: the operand up to its first NUL (for ``$gt`` and
    ``$gte``) or the operand itself."""
    extract = "json_extract(r.metadata, ?)"
    if op in ("$gt", "$gte"):
        low: Any = operand.split("\x00", 1)[0]
        high: Any = b""
    else:
        low, high = "", operand
    then = "json_type(r.metadata, ?) = 'text'"
    then_params: list[Any] = [path]
    if op in ("$gt", "$lt") or (op == "$gte" and low != operand):
        # Where BETWEEN's end is not the operand, compare with the operand itself.
        then = f"{extract} {_SYMBOLS[op]} ? AND {then}"
        then_params = [path, operand, path]
    return (f"({extract} BETWEEN ? AND ?)", [path, low, high]), (f"({then})", then_params)


# The ends of each kind's range in SQLite's order: every number lies between the
# infinities, and every text between '' and the empty blob (numbers < text < blobs).
_NUMBERS = (-math.inf, math.inf)
_TEXTS = ("", b"")


def _metadata_ordering(doc: str, path: str, op: str, operand: Any) -> Clause:
    """A comparison with a metadata value of the operand's kind (numbers with numbers,
    strings with strings). ``x BETWEEN lo AND hi`` reads the value once, where a type
    test and a comparison would parse the row's metadata twice; it holds values of the
    operand's kind only, and the rest of the type test runs on rows in range alone: for
    strings (an array's JSON text sorts among them), and for numbers where the range
    holds 0 or 1 (what ``json_extract`` gives for false and true)."""
    if _beyond_int64(operand):
        return _big_ordering(doc, path, op, int(operand))
    symbol = _SYMBOLS[op]
    numeric = not isinstance(operand, str)
    low, high = _NUMBERS if numeric else _TEXTS
    if op in ("$gt", "$gte"):
        low = operand
    else:
        high = operand
    extract = f"json_extract({doc}, ?)"
    clause = f"({extract} BETWEEN ? AND ?"
    params: list[Any] = [path, low, high]
    if op in ("$gt", "$lt"):
        clause += f" AND {extract} {symbol} ?"
        params += [path, operand]
    if not numeric:
        clause += f" AND json_type({doc}, ?) = 'text'"
        params.append(path)
    elif any(_holds(op, flag, operand) for flag in (0, 1)):
        clause += f" AND json_type({doc}, ?) IN ('integer', 'real')"
        params.append(path)
    return clause + ")", params


def _holds(op: str, value: float, operand: float) -> bool:
    if op == "$gt":
        return value > operand
    if op == "$gte":
        return value >= operand
    if op == "$lt":
        return value < operand
    return value <= operand


def _presence(condition: Condition) -> tuple[str, list[Any]]:
    if condition.kind == "metadata":
        test = "!=" if condition.operand else "="
        target = condition.target
        present = "(coalesce(json_type({}, ?), 'null') {} 'null')"
        exact = present.format(_ORDERED_METADATA, test), [json_path(*map(order_key, target))]
        if any(map(_holds_nul, target)):
            return exact
        fast = present.format(_METADATA, test), [json_path(*target)]
        return _exactly(fast, exact) if _keys_end_at_nul() else fast
    name = condition.target[0]
    column = f"r.{TIME_COLUMNS[name]}" if condition.kind == "time" else field_column(name)
    null = "IS NOT NULL" if condition.operand else "IS NULL"
    return f"({column} {null})", []


_SQLITE = Dialect(equality=_equality, ordering=_ordering, presence=_presence)


def where_clause(name: str, expected: Any) -> tuple[str, list[Any]]:
    """One ``where`` entry as ``(condition, parameters)`` in SQLite's SQL."""
    return _SQLITE.clause(name, expected)


def text_in(column: str, values: Sequence[str]) -> Clause:
    """SQL: ``column`` is one of ``values`` (strings), in one ``json_each`` list; a value
    holding NUL, which ``json_each`` cuts short in older SQLite (3.40), is bound whole."""
    if "\x00" not in "".join(values):
        return f"{column} IN (SELECT value FROM json_each(?))", [dump_json(list(values))]
    whole = [value for value in values if "\x00" in value]
    rest = [value for value in values if "\x00" not in value]
    marks = ", ".join("?" * len(whole))
    return (
        f"({column} IN (SELECT value FROM json_each(?)) OR {column} IN ({marks}))",
        [dump_json(rest), *whole],
    )


def tag_clause(tag: str) -> Clause:
    """SQL: the metadata's ``tags`` (an array, or one value) holds the string ``tag``."""
    held = "EXISTS (SELECT 1 FROM json_each({}, '$.tags') AS t WHERE t.value = ?)"
    exact = held.format(_ORDERED_METADATA), [order_key(tag)]
    if "\x00" in tag:
        return _exactly(("0", []), exact)
    # A tag equal to ``tag`` holds no NUL, so it reads exactly: every match passes.
    return _exactly((held.format(_METADATA), [tag]), exact, then=("1", []))

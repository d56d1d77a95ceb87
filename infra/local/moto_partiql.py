"""Emulator patch 27: a PartiQL `BatchExecuteStatement` of single-item writes, run as DynamoDB's own writes.

Why not upstream: moto runs every PartiQL statement by handing `py_partiql_parser` a JSON copy of every item
of every table (`DynamoDBBackend.execute_statement`): one 25-statement batch against a 20,000-URL table copies
500,000 items. The crawler's conditional writes go as such batches (a write unit an item; a transaction bills
two), so the patch runs the statements it understands as the PutItem and UpdateItem DynamoDB documents them
to be, through moto's own `put_item` / `update_item` (its condition evaluator and item rules):

- `INSERT INTO "table" VALUE {'name': value, ...}`: a put that fails with `DuplicateItem` when an item with
  the key exists.
- `UPDATE "table" SET name = value [SET name = value ...] WHERE <key equalities> [AND <condition>]`: an update
  of an existing item (`ConditionalCheckFailed` when there is none), under the rest of the condition; with
  `ReturnValuesOnConditionCheckFailure: ALL_OLD` a failed condition answers the item it saw.

A condition is comparisons (`=`, `<>`, `<`, `<=`, `>`, `>=`) of a top-level attribute with a value,
`name IS [NOT] MISSING`, `AND`, `OR`, `NOT` and brackets. A value is `?` (the next parameter), a 'string' or a
number. A batch holding any other statement (a SELECT, a DELETE, nested paths, functions) goes to upstream
whole; so does one naming a missing table or one whose key the WHERE does not give by equalities.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["BATCH_MAX_STATEMENTS", "Insert", "Update", "batch_execute_statement", "parse"]

BATCH_MAX_STATEMENTS = 25
"""DynamoDB's limit of statements per BatchExecuteStatement."""

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<quoted>"(?:[^"]|"")*")
      | (?P<string>'(?:[^']|'')*')
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<op><>|<=|>=|[=<>{}:,()?])
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_COMPARATORS = ("=", "<>", "<", "<=", ">", ">=")


class Unsupported(ValueError):
    """A statement outside the subset this module runs (upstream runs it)."""


@dataclass(frozen=True, slots=True)
class Value:
    """A literal (DynamoDB JSON) or the `index`th parameter."""

    literal: dict[str, Any] | None = None
    index: int = -1

    def bind(self, parameters: list[dict[str, Any]]) -> dict[str, Any]:
        return self.literal if self.literal is not None else parameters[self.index]


@dataclass(frozen=True, slots=True)
class Insert:
    table: str
    attributes: tuple[tuple[str, Value], ...]
    parameters: int


@dataclass(frozen=True, slots=True)
class Update:
    table: str
    sets: tuple[tuple[str, Value], ...]
    condition: Any
    """The WHERE clause as a tree: ("and"|"or", left, right), ("not", x), ("cmp", op, name, Value),
    ("missing", name, is_missing)."""
    parameters: int


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            return
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            raise Unsupported(f"unexpected text at {at}: {text[at : at + 20]!r}")
        kind = match.lastgroup or ""
        yield kind, match.group(kind)
        at = match.end()


class _Parser:
    def __init__(self, text: str) -> None:
        self._tokens = list(_tokens(text))
        self._at = 0
        self.parameters = 0

    def _peek(self) -> tuple[str, str]:
        return self._tokens[self._at] if self._at < len(self._tokens) else ("end", "")

    def _next(self) -> tuple[str, str]:
        token = self._peek()
        self._at += 1
        return token

    def _keyword(self, *words: str) -> str | None:
        kind, text = self._peek()
        if kind == "word" and text.upper() in words:
            self._at += 1
            return text.upper()
        return None

    def _expect_keyword(self, word: str) -> None:
        if self._keyword(word) is None:
            raise Unsupported(f"expected {word}, found {self._peek()[1]!r}")

    def _expect(self, op: str) -> None:
        if self._next() != ("op", op):
            raise Unsupported(f"expected {op!r}")

    def _name(self) -> str:
        kind, text = self._next()
        if kind == "quoted":
            return text[1:-1].replace('""', '"')
        if kind == "word":
            return text
        raise Unsupported(f"expected a name, found {text!r}")

    def _value(self) -> Value:
        kind, text = self._next()
        if (kind, text) == ("op", "?"):
            self.parameters += 1
            return Value(index=self.parameters - 1)
        if kind == "string":
            return Value(literal={"S": text[1:-1].replace("''", "'")})
        if kind == "number":
            return Value(literal={"N": text})
        raise Unsupported(f"expected a value, found {text!r}")

    def end(self) -> None:
        if self._peek()[0] != "end":
            raise Unsupported(f"unexpected {self._peek()[1]!r} after the statement")

    def statement(self) -> Insert | Update:
        verb = self._keyword("INSERT", "UPDATE")
        if verb == "INSERT":
            self._expect_keyword("INTO")
            table = self._name()
            self._expect_keyword("VALUE")
            self._expect("{")
            attributes: list[tuple[str, Value]] = []
            while True:
                kind, text = self._next()
                if kind != "string":
                    raise Unsupported("an attribute name of an INSERT is a 'string'")
                name = text[1:-1].replace("''", "'")
                self._expect(":")
                attributes.append((name, self._value()))
                if self._peek() == ("op", "}"):
                    self._next()
                    break
                self._expect(",")
            self.end()
            if len({n for n, _ in attributes}) != len(attributes):
                raise Unsupported("an attribute named twice")
            return Insert(table, tuple(attributes), self.parameters)
        if verb == "UPDATE":
            table = self._name()
            sets: list[tuple[str, Value]] = []
            while self._keyword("SET"):
                sets.append(self._assignment())
                while self._peek() == ("op", ","):
                    self._next()
                    sets.append(self._assignment())
            if not sets:
                raise Unsupported("an UPDATE without SET")
            self._expect_keyword("WHERE")
            condition = self._or()
            self.end()
            return Update(table, tuple(sets), condition, self.parameters)
        raise Unsupported("not an INSERT or UPDATE")

    def _assignment(self) -> tuple[str, Value]:
        name = self._name()
        self._expect("=")
        return name, self._value()

    def _or(self) -> Any:
        left = self._and()
        while self._keyword("OR"):
            left = ("or", left, self._and())
        return left

    def _and(self) -> Any:
        left = self._not()
        while self._keyword("AND"):
            left = ("and", left, self._not())
        return left

    def _not(self) -> Any:
        if self._keyword("NOT"):
            return ("not", self._not())
        if self._peek() == ("op", "("):
            self._next()
            inner = self._or()
            self._expect(")")
            return inner
        name = self._name()
        if self._keyword("IS"):
            negated = self._keyword("NOT") is not None
            self._expect_keyword("MISSING")
            return ("missing", name, not negated)
        kind, op = self._next()
        if kind != "op" or op not in _COMPARATORS:
            raise Unsupported(f"expected a comparison after {name!r}")
        return ("cmp", op, name, self._value())


@functools.lru_cache(maxsize=256)
def parse(statement: str) -> Insert | Update:
    """The statement's plan (kept per text: the crawler's statements are a few texts with `?` values).
    Raises `Unsupported` for anything outside this module's subset."""
    return _Parser(statement).statement()


def _conjuncts(tree: Any) -> list[Any]:
    if tree[0] == "and":
        return _conjuncts(tree[1]) + _conjuncts(tree[2])
    return [tree]


class _Expression:
    """A condition tree rendered as a ConditionExpression, with its names and values as placeholders."""

    def __init__(self, parameters: list[dict[str, Any]]) -> None:
        self._parameters = parameters
        self.names: dict[str, str] = {}
        self.values: dict[str, dict[str, Any]] = {}

    def name(self, name: str) -> str:
        for placeholder, known in self.names.items():
            if known == name:
                return placeholder
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = name
        return placeholder

    def value(self, value: Value) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value.bind(self._parameters)
        return placeholder

    def render(self, tree: Any) -> str:
        kind = tree[0]
        if kind in ("and", "or"):
            return f"({self.render(tree[1])} {kind.upper()} {self.render(tree[2])})"
        if kind == "not":
            return f"(NOT {self.render(tree[1])})"
        if kind == "missing":
            function = "attribute_not_exists" if tree[2] else "attribute_exists"
            return f"{function}({self.name(tree[1])})"
        _, op, name, value = tree
        return f"{self.name(name)} {op} {self.value(value)}"


Conjuncts = tuple[Any, ...]


@functools.lru_cache(maxsize=256)
def _key_split(statement: str, key_names: tuple[str, ...]) -> tuple[tuple[tuple[str, Value], ...], Conjuncts]:
    """An UPDATE's WHERE clause as the key's `name = value` conjuncts and the others (its condition), kept per
    text and table keys. Raises `Unsupported` when the equalities do not give the whole key."""
    plan = parse(statement)
    assert isinstance(plan, Update)
    key: dict[str, Value] = {}
    rest = []
    for term in _conjuncts(plan.condition):
        if term[0] == "cmp" and term[1] == "=" and term[2] in key_names and term[2] not in key:
            key[term[2]] = term[3]
        else:
            rest.append(term)
    if len(key) != len(key_names):
        raise Unsupported("the WHERE clause does not give the whole key by equalities")
    return tuple(key.items()), tuple(rest)


def _key_names(table: Any) -> tuple[str, ...]:
    return (table.hash_key_attr, table.range_key_attr) if table.range_key_attr else (table.hash_key_attr,)


def _error(code: str, message: str, item: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"Code": code, "Message": message}
    if item:
        error["Item"] = item
    return {"Error": error}


def _run_insert(backend: Any, plan: Insert, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    from moto.dynamodb.exceptions import ConditionalCheckFailed

    table = backend.get_table(plan.table)
    item = {name: value.bind(parameters) for name, value in plan.attributes}
    try:
        backend.put_item(
            plan.table,
            item,
            condition_expression="attribute_not_exists(#k)",
            expression_attribute_names={"#k": table.hash_key_attr},
            expression_attribute_values={},
        )
    except ConditionalCheckFailed:
        return _error("DuplicateItem", "Duplicate primary key exists in table")
    return {"TableName": plan.table}


def _run_update(
    backend: Any, plan: Update, statement: str, parameters: list[dict[str, Any]], return_old: bool
) -> dict[str, Any]:
    from moto.dynamodb.exceptions import ConditionalCheckFailed
    from moto.dynamodb.models.dynamo_type import DynamoType

    table = backend.get_table(plan.table)
    key_terms, rest = _key_split(statement, _key_names(table))
    key = {name: value.bind(parameters) for name, value in key_terms}
    expression = _Expression(parameters)
    updates = ", ".join(f"{expression.name(n)} = {expression.value(v)}" for n, v in plan.sets)
    # A PartiQL UPDATE changes an existing item only: the condition holds the key's existence.
    condition = " AND ".join(
        [f"attribute_exists({expression.name(table.hash_key_attr)})", *map(expression.render, rest)]
    )
    try:
        backend.update_item(
            plan.table,
            key,
            update_expression=f"SET {updates}",
            expression_attribute_names=expression.names,
            expression_attribute_values=expression.values,
            condition_expression=condition,
        )
    except ConditionalCheckFailed:
        # Refused, so unchanged (the backend's calls are serialised): the item the condition saw.
        seen = table.get_item(*(DynamoType(key[name]) for name in _key_names(table))) if return_old else None
        item = seen.to_json()["Attributes"] if seen is not None else None
        return _error("ConditionalCheckFailed", "The conditional request failed", item)
    return {"TableName": plan.table}


def _plans(statements: list[dict[str, Any]], tables: dict[str, Any]) -> list[Insert | Update] | None:
    plans = []
    for statement in statements:
        text = statement.get("Statement", "")
        try:
            plan = parse(text)
        except Unsupported:
            return None
        table = tables.get(plan.table)
        if table is None:
            return None
        if isinstance(plan, Update):
            try:
                _key_split(text, _key_names(table))
            except Unsupported:
                return None
        plans.append(plan)
    return plans


def batch_execute_statement(
    upstream: Callable[[Any, list[dict[str, Any]]], list[dict[str, Any]]],
) -> Callable[[Any, list[dict[str, Any]]], list[dict[str, Any]]]:
    """`DynamoDBBackend.batch_execute_statement`, running a batch of the subset's writes as single writes
    (each answered on its own, as DynamoDB answers a batch); any other batch goes to `upstream`."""
    from moto.dynamodb.exceptions import MockValidationException

    @functools.wraps(upstream)
    def wrapper(self: Any, statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
        plans = _plans(statements, self.tables)
        if plans is None:
            return upstream(self, statements)
        if len(statements) > BATCH_MAX_STATEMENTS:
            raise MockValidationException(
                f"1 validation error detected: Value at 'statements' failed to satisfy constraint: "
                f"Member must have length less than or equal to {BATCH_MAX_STATEMENTS}"
            )
        responses = []
        for statement, plan in zip(statements, plans, strict=True):
            parameters = statement.get("Parameters") or []
            if plan.parameters != len(parameters):
                responses.append(
                    _error(
                        "ValidationError",
                        f"Number of parameters in request and statement don't match: "
                        f"{len(parameters)} and {plan.parameters}",
                    )
                )
                continue
            try:
                if isinstance(plan, Insert):
                    responses.append(_run_insert(self, plan, parameters))
                else:
                    old = statement.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
                    responses.append(_run_update(self, plan, statement["Statement"], parameters, old))
            except MockValidationException as exc:
                responses.append(_error("ValidationError", exc.message))
        return responses

    return wrapper

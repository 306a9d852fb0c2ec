"""Filter language v2 (METHOD A16): tokenizer, recursive-descent parser, compiler to a DuckDB predicate.

    filter  := element (('+' | '|') element)*     '+' AND, '|' OR; mixing them needs parentheses
    element := key op values | '(' filter ')'
    key     := field | mapfield '[' name ']'
    values  := '"' text '"' (',' '"' text '"')*

Values are bound parameters; field names map to columns through an allow-list, so no input reaches SQL text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipelines.serving.query.aggregates import UNALLOCATED, Params, check_map_key, map_lookup_sql
from pipelines.serving.query.errors import QueryError

MAX_FILTER_CHARS = 8192
MAX_DEPTH = 32
MAX_VALUES = 500
OPS = ("!<~:", "!~>:", "<~:", "~>:", "!~:", "~:", "!:", ":")  # longest first
FIELDS = ("cluster", "node", "namespace", "controllerKind", "controllerName", "pod", "container", "provider",
          "services", "label[k]", "annotation[k]", "department", "environment", "owner", "product", "team")
FILTER_ALLOWED = ("use field op \"value\"[,\"value\"…] joined by + (and) or | (or), parentheses to mix; fields: "
                  + ", ".join(FIELDS) + "; ops: " + " ".join(reversed(OPS)))
_SCALAR = {"cluster": "cluster", "node": "node", "namespace": "namespace", "controllerkind": "controller_kind",
           "controllername": "controller", "pod": "pod", "container": "container", "provider": "provider_id"}
# Kubecost's default label names behind its alias fields.
ALIASES = {"department": "department", "environment": "env", "owner": "owner", "product": "app", "team": "team"}


@dataclass(frozen=True)
class Condition:
    field: str  # canonical lower-case field name
    key: str | None  # map key for label/annotation (None = the "has key" form)
    op: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    op: str  # "+" or "|"
    items: tuple[Condition | Group, ...]


Node = Condition | Group


@dataclass(frozen=True)
class _Tok:
    kind: str  # ident, key, op, str, ',', '+', '|', '(', ')'
    text: str
    pos: int


def _err(raw: str, why: str, allowed: str = FILTER_ALLOWED) -> QueryError:
    return QueryError("filter", raw, f"{why}; {allowed}")


# (raw filter, field name, [key] or None, operator, values) -> Condition; raises QueryError for an unknown field
ConditionFn = Callable[[str, str, "str | None", str, tuple[str, ...]], Condition]


def tokenize(raw: str, allowed: str = FILTER_ALLOWED) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c in " \t\r\n":
            i += 1
        elif c in ",+|()":
            toks.append(_Tok(c, c, i))
            i += 1
        elif c == '"':
            j, buf = i + 1, []
            while j < n and raw[j] != '"':
                if raw[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(raw[j])
                j += 1
            if j >= n:
                raise _err(raw, f"unterminated string at character {i + 1}", allowed)
            toks.append(_Tok("str", "".join(buf), i))
            i = j + 1
        elif c.isascii() and (c.isalpha() or c == "_"):
            j = i
            while j < n and raw[j].isascii() and (raw[j].isalnum() or raw[j] == "_"):
                j += 1
            toks.append(_Tok("ident", raw[i:j], i))
            i = j
            if i < n and raw[i] == "[":
                end = raw.find("]", i + 1)
                if end < 0:
                    raise _err(raw, f"'[' at character {i + 1} is not closed", allowed)
                key = raw[i + 1:end].strip()
                if len(key) >= 2 and key[0] == key[-1] == '"':
                    key = key[1:-1]
                toks.append(_Tok("key", key, i))
                i = end + 1
        else:
            for op in OPS:
                if raw.startswith(op, i):
                    toks.append(_Tok("op", op, i))
                    i += len(op)
                    break
            else:
                raise _err(raw, f"unexpected character {c!r} at {i + 1}", allowed)
    return toks


class _Parser:
    """The grammar of the module docstring; which fields exist is the `condition` function's business."""

    def __init__(self, raw: str, condition: ConditionFn, allowed: str) -> None:
        self.raw = raw
        self.condition = condition
        self.allowed = allowed
        self.toks = tokenize(raw, allowed)
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, kind: str, what: str) -> _Tok:
        t = self.peek()
        if t is None or t.kind != kind:
            where = f"at character {t.pos + 1}" if t else "at the end"
            raise _err(self.raw, f"expected {what} {where}", self.allowed)
        self.i += 1
        return t

    def filter(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise _err(self.raw, f"more than {MAX_DEPTH} nested parentheses", self.allowed)
        items = [self.element(depth)]
        op: str | None = None
        while (t := self.peek()) is not None and t.kind in "+|":
            if op is not None and t.kind != op:
                raise _err(self.raw, f"mixing + and | needs parentheses (character {t.pos + 1})", self.allowed)
            op = t.kind
            self.i += 1
            items.append(self.element(depth))
        return items[0] if op is None else Group(op, tuple(items))

    def element(self, depth: int) -> Node:
        t = self.peek()
        if t is not None and t.kind == "(":
            self.i += 1
            node = self.filter(depth + 1)
            self.take(")", "')'")
            return node
        name = self.take("ident", "a field name").text
        key_tok = self.peek()
        key: str | None = None
        if key_tok is not None and key_tok.kind == "key":
            self.i += 1
            key = key_tok.text
        op = self.take("op", "an operator").text
        values = [self.take("str", 'a quoted value "…"').text]
        while (t := self.peek()) is not None and t.kind == ",":
            self.i += 1
            values.append(self.take("str", 'a quoted value "…"').text)
            if len(values) > MAX_VALUES:
                raise _err(self.raw, f"more than {MAX_VALUES} values", self.allowed)
        return self.condition(self.raw, name, key, op, tuple(values))


def _condition(raw: str, name: str, key: str | None, op: str, values: tuple[str, ...]) -> Condition:
    low = name.lower()
    if low in ALIASES:
        if key is not None:
            raise _err(raw, f"{name} takes no [key]")
        return Condition("label", ALIASES[low], op, values)
    if low in ("label", "annotation"):
        if key is None and op not in (":", "!:"):
            raise _err(raw, f"{name} without [key] tests for a key and takes only : or !:")
        if key is not None:
            check_map_key("filter", raw, key)
        else:
            for v in values:
                check_map_key("filter", raw, v)
        return Condition(low, key, op, values)
    if low in _SCALAR or low == "services":
        if key is not None:
            raise _err(raw, f"{name} takes no [key]")
        return Condition(low, None, op, values)
    raise _err(raw, f"unknown field {name!r}")


def parse_filter(raw: str | None, condition: ConditionFn | None = None, allowed: str = FILTER_ALLOWED
                 ) -> Node | None:
    """Parse a v2 filter; None for an empty one. `condition` decides the fields (default: the allocation fields;
    the assets endpoints pass their own)."""
    if raw is None or not raw.strip():
        return None
    if len(raw) > MAX_FILTER_CHARS:
        raise QueryError("filter", raw, f"at most {MAX_FILTER_CHARS} characters")
    p = _Parser(raw, condition or _condition, allowed)
    node = p.filter(0)
    if (t := p.peek()) is not None:
        raise _err(raw, f"unexpected {t.text!r} at character {t.pos + 1}", allowed)
    return node


def string_test(op: str, expr: str, ref: str) -> str:
    """One value's test of a condition's operator (negation aside: `matching` applies it)."""
    base = op.lstrip("!")
    if base == ":":
        return f"({expr} = {ref})"
    if base == "~:":
        return f"contains({expr}, {ref})"
    if base == "<~:":
        return f"starts_with({expr}, {ref})"
    return f"ends_with({expr}, {ref})"  # ~>:


def matching(op: str, tests: list[str]) -> str:
    """A condition from its values' tests: positive ops match any of the values, negated ops none of them."""
    any_of = "(" + " OR ".join(tests) + ")"
    return f"(NOT coalesce({any_of}, FALSE))" if op.startswith("!") else f"coalesce({any_of}, FALSE)"


def compile_tree(node: Node | None, condition_sql: Callable[[Condition], str]) -> str:
    """A parsed filter as one boolean expression: groups joined by AND (+) or OR (|), each condition by
    `condition_sql`; TRUE when there is no filter."""
    if node is None:
        return "TRUE"
    if isinstance(node, Condition):
        return condition_sql(node)
    joiner = " AND " if node.op == "+" else " OR "
    return "(" + joiner.join(compile_tree(i, condition_sql) for i in node.items) + ")"


def _compile_condition(c: Condition, params: Params) -> str:
    if c.field in ("label", "annotation") and c.key is None:
        tests = [f"({map_lookup_sql(c.field, v, params)} IS NOT NULL)" for v in c.values]
    elif c.field == "services":
        lst = f"coalesce(from_json({params.col('services')}, '[\"VARCHAR\"]'), CAST([] AS VARCHAR[]))"
        tests = []
        for v in c.values:
            if c.op.lstrip("!") == ":" and v == UNALLOCATED:
                tests.append(f"(len({lst}) = 0)")
            else:
                ref = params.bind(v)
                tests.append(f"(len(list_filter({lst}, lambda s: {string_test(c.op, 's', ref)})) > 0)")
    else:
        if c.field in ("label", "annotation"):
            assert c.key is not None
            col = map_lookup_sql(c.field, c.key, params)
        else:
            col = params.col(_SCALAR[c.field])
        expr = f"coalesce(nullif(CAST({col} AS VARCHAR), ''), '{UNALLOCATED}')"
        fold = c.field == "controllerkind"  # stored lower-case; ACK writes DaemonSet
        if fold:
            expr = f"lower({expr})"
        tests = [string_test(c.op, expr, params.bind(v.lower() if fold else v)) for v in c.values]
    return matching(c.op, tests)


def compile_filter(node: Node | None, params: Params) -> str:
    """A DuckDB boolean expression over fct_allocation_daily columns (TRUE when there is no filter)."""
    return compile_tree(node, lambda c: _compile_condition(c, params))

"""Cloud cost sets over marts.fct_cloud_cost_daily (the FOCUS bill): Kubecost /model/cloudCost, OpenCost /cloudCost.

Properties follow OpenCost's CloudCostProperties: invoiceEntityID (FOCUS BillingAccountId), accountID
(SubAccountId), provider (ProviderName), providerID (ResourceId), category (ChargeCategory), service (ServiceName)
and labels (Tags). The five cost metrics come from the FOCUS columns (docs/API.md "Cloud costs"):

    listCost          ListCost
    netCost           BilledCost        (what is invoiced, credits included, commitment purchases when bought)
    invoicedCost      BilledCost
    amortizedNetCost  EffectiveCost     (commitments amortised over the usage they cover, credits included)
    amortizedCost     EffectiveCost of every category but Credit

kubernetesPercent is the part of each metric on bill lines a cluster's node or volume was reconciled with
(fct_cloud_cost_daily.cluster_scope in_cluster; the rest of the clusters' accounts is out_of_cluster). Every value is
a bound parameter;
field names come from allow-lists; label keys are checked and bound as JSON paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb

from pipelines.serving.query.aggregates import UNALLOCATED, Params
from pipelines.serving.query.coverage import has_column
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.filters import Condition, Node, compile_tree, matching, parse_filter, string_test
from pipelines.serving.query.windows import DaySpan, WindowQuery

MART = "fct_cloud_cost_daily"
# API property (lower case) -> (OpenCost's name, mart column)
PROPERTIES: dict[str, tuple[str, str]] = {
    "invoiceentityid": ("invoiceEntityID", "billing_account_id"),
    "accountid": ("accountID", "sub_account_id"),
    "provider": ("provider", "provider_name"),
    "providerid": ("providerID", "resource_id"),
    "category": ("category", "charge_category"),
    "service": ("service", "service_name"),
}
DEFAULT_KEY = ("provider", "invoiceentityid", "accountid", "category", "service", "providerid")  # OpenCost's order
# costMetric (lower case) -> (name in the answer, summed SQL over the mart's rows)
METRICS: dict[str, tuple[str, str]] = {
    "listcost": ("listCost", "sum(list_cost)"),
    "netcost": ("netCost", "sum(billed_cost)"),
    "amortizednetcost": ("amortizedNetCost", "sum(effective_cost)"),
    "invoicedcost": ("invoicedCost", "sum(billed_cost)"),
    "amortizedcost": ("amortizedCost", "sum(CASE WHEN charge_category <> 'Credit' THEN effective_cost ELSE 0 END)"),
}
MAX_KEYS = 12
AGGREGATE_ALLOWED = ("use a comma list of invoiceEntityID, accountID, provider, providerID, category, service, "
                     "label:<key>; empty for OpenCost's default key")
COST_METRIC_ALLOWED = "use listCost, netCost, amortizedNetCost, invoicedCost or amortizedCost"
FILTER_ALLOWED = ("use field op \"value\"[,\"value\"…] joined by + (and) or | (or), parentheses to mix; fields: "
                  "invoiceEntityID, accountID, provider, providerID, category, service, label[<key>]; "
                  "ops: : !: ~: !~: <~: !<~: ~>: !~>:")


# cloud tag keys are wider than Kubernetes label keys (AWS `user:team`, GCP `goog-k8s-cluster-name`, spaces): any
# printable text but the quote and backslash, which would end the JSON path the key is bound in
TAG_KEY_RE = re.compile(r'^[^"\\\x00-\x1f\x7f]{1,253}$')


def check_tag_key(param: str, raw: str, key: str) -> str:
    if not TAG_KEY_RE.match(key):
        raise QueryError(param, raw, "a tag key is 1-253 printable characters without '\"' or '\\'")
    return key


def _err(raw: str, why: str) -> QueryError:
    return QueryError("filter", raw, f"{why}; {FILTER_ALLOWED}")


def _condition(raw: str, name: str, key: str | None, op: str, values: tuple[str, ...]) -> Condition:
    low = name.lower()
    if low == "label":
        if key is None:
            raise _err(raw, "label takes a [key], e.g. label[team]:\"a\"")
        return Condition("label", check_tag_key("filter", raw, key), op, values)
    if low not in PROPERTIES:
        raise _err(raw, f"unknown field {name!r}")
    if key is not None:
        raise _err(raw, f"{name} takes no [key]")
    return Condition(low, None, op, values)


def _label_sql(key: str, params: Params) -> str:
    path = params.bind('$."' + key + '"')  # the key passed check_tag_key: no quote can end the path
    return f"(CASE WHEN json_valid(tags) THEN json_extract_string(tags, {path}) END)"


def _value_sql(field: str, key: str | None, params: Params) -> str:
    col = _label_sql(key or "", params) if field == "label" else PROPERTIES[field][1]
    return f"coalesce(nullif(CAST({col} AS VARCHAR), ''), '{UNALLOCATED}')"


def compile_cloud_filter(node: Node | None, params: Params) -> str:
    """A DuckDB predicate over the mart's columns (TRUE without a filter)."""
    return compile_tree(node, lambda c: _cloud_condition_sql(c, params))


def _cloud_condition_sql(node: Condition, params: Params) -> str:
    expr = _value_sql(node.field, node.key, params)
    return matching(node.op, [string_test(node.op, expr, params.bind(v or UNALLOCATED)) for v in node.values])


def parse_aggregate(aggregate: str) -> list[tuple[str, str | None]]:
    """(property, label key) per aggregation key, in request order; OpenCost's default key when empty."""
    raw = aggregate
    if not aggregate.strip():
        return [(p, None) for p in DEFAULT_KEY]
    names = [n.strip() for n in aggregate.split(",")]
    if len(names) > MAX_KEYS or any(not n for n in names):
        raise QueryError("aggregate", raw, AGGREGATE_ALLOWED)
    out: list[tuple[str, str | None]] = []
    for n in names:
        if n.lower().startswith("label:") and n[6:].strip():
            out.append(("label", check_tag_key("aggregate", raw, n[6:].strip())))
        elif n.lower() in PROPERTIES:
            out.append((n.lower(), None))
        else:
            raise QueryError("aggregate", raw, AGGREGATE_ALLOWED)
    return out


@dataclass
class CloudCostQuery(WindowQuery):
    """Every parameter of a cloud cost query; `validate()` raises QueryError naming the bad one."""

    cost_metric: str = "amortizedNetCost"

    def validate(self) -> dict[str, Any]:
        if self._checked:
            return self._checked
        if self.format != "json":
            raise QueryError("format", self.format, "the cloud cost endpoints answer json only")
        metric = (self.cost_metric or "amortizedNetCost").strip().lower()
        if metric not in METRICS:
            raise QueryError("costMetric", self.cost_metric, COST_METRIC_ALLOWED)
        _, span, steps = self.checked_window()
        params = Params()
        keys = parse_aggregate(self.aggregate)
        segments = [_value_sql(f, k, params) for f, k in keys]
        key_sql = segments[0] if len(segments) == 1 else "(" + " || '/' || ".join(segments) + ")"
        where = compile_cloud_filter(parse_filter(self.filter, _condition, FILTER_ALLOWED), params)
        label_keys = [(k, _label_sql(k, params)) for f, k in keys if f == "label" and k]
        self._checked = {"span": span, "steps": steps, "params": params, "key_sql": key_sql, "filter_sql": where,
                         "metric": metric, "labels": label_keys,
                         "aggregation": [PROPERTIES[f][0] if f != "label" else f"label:{k}" for f, k in keys]}
        return self._checked


def _sql(c: dict[str, Any], in_cluster: str) -> str:
    """SQL text from allow-listed identifiers and the query's compiled key/filter; values are $-parameters.
    `in_cluster`: the condition of the bill lines inside a cluster (kubernetesPercent's numerator)."""
    props = [f"CASE WHEN count(DISTINCT coalesce({col}, '')) = 1 THEN min({col}) END AS {col}"
             for _, col in PROPERTIES.values()]
    labels = [f"CASE WHEN count(DISTINCT coalesce({expr}, '')) = 1 THEN min({expr}) END AS label_{i}"
              for i, (_, expr) in enumerate(c["labels"])]
    sums = [f"{sql} AS {name}, {sql} FILTER (WHERE {in_cluster}) AS k8s_{name}" for name, sql in METRICS.values()]
    return f"""
    WITH steps AS (SELECT unnest(CAST($steps_s AS TIMESTAMP[])) AS step_start,
                          unnest(CAST($steps_e AS TIMESTAMP[])) AS step_end),
    r AS (SELECT * FROM marts.{MART} WHERE usage_date >= $win_s AND usage_date < $win_e),
    f AS (
        SELECT r.*, st.step_start, st.step_end, {c['key_sql']} AS agg_key
        FROM r JOIN steps AS st
          ON r.usage_date >= CAST(st.step_start AS DATE) AND r.usage_date < CAST(st.step_end AS DATE)
        WHERE {c['filter_sql']}
    )
    SELECT step_start, step_end, agg_key, {', '.join(props + labels + sums)}
    FROM f GROUP BY step_start, step_end, agg_key
    ORDER BY step_start, {METRICS[c['metric']][0]} DESC, agg_key
    """  # noqa: S608


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def to_cloud_cost(r: dict[str, Any], label_keys: list[str]) -> dict[str, Any]:
    """A grouped row → OpenCost's CloudCost JSON (properties, window, five CostMetrics)."""
    props: dict[str, Any] = {name: r[col] for name, col in PROPERTIES.values() if r[col]}
    labels = {k: r[f"label_{i}"] for i, k in enumerate(label_keys) if r[f"label_{i}"]}
    if labels:
        props["labels"] = labels
    out: dict[str, Any] = {"properties": props,
                           "window": {"start": _iso(r["step_start"]), "end": _iso(r["step_end"])}}
    for name, _ in METRICS.values():
        cost, k8s = float(r[name] or 0.0), float(r[f"k8s_{name}"] or 0.0)
        out[name] = {"cost": cost, "kubernetesPercent": k8s / cost if cost else 0.0}
    return out


def _has_mart(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'marts' AND table_name = $t",
                      {"t": MART}).fetchone()
    return bool(row and row[0])


def _coverage_note(con: duckdb.DuckDBPyConnection, span: DaySpan) -> tuple[str | None, bool]:
    """(a note when the bill does not reach the whole window, whether the bill has any rows)."""
    first, last = con.execute(f"SELECT min(usage_date), max(usage_date) FROM marts.{MART}").fetchone()  # noqa: S608
    if first is None:
        return None, False
    start, end = span.start.date(), span.end.date()
    if first <= start and last >= end - timedelta(days=1):
        return None, True
    return (f"the bill (marts.{MART}) has charge days {first}..{last}; days of the window outside them have no "
            "cloud costs (a bill arrives a day or more after its charges)"), True


def answer_cloud_costs(con: duckdb.DuckDBPyConnection, q: CloudCostQuery, no_bill: str
                       ) -> tuple[list[dict[str, Any]], list[str]]:
    """One CloudCostSet per step ({"cloudCosts", "window", "aggregationProperties"}) and the answer's notes.
    `no_bill` is the note when the snapshot holds no bill (the route says whether billing is configured)."""
    c = q.validate()
    span, steps = c["span"], c["steps"]
    warnings = [*q.notes, *span.notes]
    empty = [{"cloudCosts": {}, "window": {"start": _iso(s), "end": _iso(e)},
              "aggregationProperties": c["aggregation"]} for s, e in steps]
    if not _has_mart(con):
        return empty, [*warnings, no_bill]
    note, any_rows = _coverage_note(con, span)
    if not any_rows:
        return empty, [*warnings, no_bill]
    if note and steps:
        warnings.append(note)
    if not steps:
        return empty, warnings
    values = dict(c["params"].values)
    values.update(win_s=span.start.date(), win_e=span.end.date(), steps_s=[s for s, _ in steps],
                  steps_e=[e for _, e in steps])
    # a snapshot published before the reconciliation (issue 28) has no cluster_scope: nothing is in a cluster
    in_cluster = "cluster_scope = 'in_cluster'" if has_column(con, MART, "cluster_scope") else "FALSE"
    cur = con.execute(_sql(c, in_cluster), values)
    cols = [d[0] for d in cur.description]
    by_step: dict[datetime, dict[str, dict[str, Any]]] = {s: {} for s, _ in steps}
    label_keys = [k for k, _ in c["labels"]]
    for row in cur.fetchall():
        r = dict(zip(cols, row, strict=True))
        by_step.setdefault(r["step_start"], {})[r["agg_key"]] = to_cloud_cost(r, label_keys)
    for s, one in zip(steps, empty, strict=True):
        items = list(by_step.get(s[0], {}).items())[q.offset:]
        one["cloudCosts"] = dict(items[:q.limit] if q.limit is not None else items)
    return empty, warnings

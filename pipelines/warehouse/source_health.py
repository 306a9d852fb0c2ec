"""The source-health ledger (raw.source_health): for each source and day, 'ok' or what degraded it.

Every extract asset records its outcome here after landing its rows, in the same warehouse, replacing its own
(source, scope) rows, so the newest attempt at a day is what the day rests on. The CLI's summary, `kubeledger
status` and, through the serving copy (schema `ops`), the API's /healthz read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import duckdb
import pandas as pd

from pipelines.jsonsafe import json_text
from pipelines.redaction import redact
from pipelines.warehouse.landing import replace_partitions

TABLE = "source_health"
SOURCES = ("metrics", "kubernetes", "carbon", "boavizta", "pricing", "billing")  # metrics: Prometheus or the demo
CURRENT = "current"  # the scope of sources that are not per day (price files)
@dataclass
class Problem:
    """One degraded source (or one cluster of it) for the ledger and the console."""

    source: str
    failure: str
    message: str
    hint: str
    affected: list[str] = field(default_factory=list)
    cluster: str = ""

    def __post_init__(self) -> None:
        # the message quotes the source's answer; it is stored (ledger, run storage) and shown (console, /healthz)
        self.message, self.hint = redact(self.message), redact(self.hint)

    def line(self) -> str:
        """The one console line: source, what failed, what the day used instead, what to do."""
        where = f" (cluster {self.cluster})" if self.cluster else ""
        return f"{self.source}{where} degraded: {self.message}. What to do: {self.hint}"


COLUMNS = ["source", "scope", "cluster", "status", "failure", "message", "hint", "affected"]


def scope_of(day: date | str) -> str:
    return day if isinstance(day, str) else day.isoformat()


def record(con: duckdb.DuckDBPyConnection, source: str, scopes: Iterable[date | str],
           problems: Sequence[Problem]) -> int:
    """Replace `source`'s ledger rows for `scopes`: one 'degraded' row per problem, or one 'ok' row."""
    if source not in SOURCES:
        raise ValueError(f"source_health: unknown source {source!r}; one of {', '.join(SOURCES)}")
    keys = sorted({scope_of(s) for s in scopes})
    rows: list[dict[str, Any]] = []
    for scope in keys:
        if not problems:
            rows.append({"source": source, "scope": scope, "cluster": "", "status": "ok", "failure": "",
                         "message": "", "hint": "", "affected": "[]"})
        for p in problems:
            rows.append({"source": source, "scope": scope, "cluster": p.cluster, "status": "degraded",
                         "failure": p.failure, "message": p.message[:2000], "hint": p.hint[:1000],
                         "affected": json_text(p.affected[:200], limit=4000)})
    frame = pd.DataFrame(rows, columns=COLUMNS).astype("string") if rows else pd.DataFrame(columns=COLUMNS)
    written = replace_partitions(con, {TABLE: frame}, [{"source": source, "scope": s} for s in keys])
    return written.get(TABLE, 0)


def degraded(con: duckdb.DuckDBPyConnection, days: Iterable[date | str], schema: str = "raw") -> list[dict[str, Any]]:
    """The 'degraded' rows for `days` (and the price files' current state), oldest day first; [] without the
    table (a warehouse from before the ledger)."""
    scopes = sorted({scope_of(d) for d in days}) + [CURRENT]
    if schema not in ("raw", "ops"):
        raise ValueError(f"source_health: schema {schema!r} is not one of raw, ops")
    try:
        rows = con.execute(
            f"select scope, source, cluster, failure, message, hint, affected from {schema}.{TABLE} "  # noqa: S608
            "where status = 'degraded' and scope in (select unnest(?)) order by scope, source, cluster, failure",
            [scopes]).fetchall()
    except duckdb.CatalogException:
        return []
    return [dict(zip(("day", "source", "cluster", "failure", "message", "hint", "affected"), r, strict=True))
            for r in rows]


def newest_day_health(con: duckdb.DuckDBPyConnection, schema: str = "ops") -> dict[str, Any]:
    """The newest day in marts.fct_cluster_daily and what degraded its sources, for /healthz and status:
    {"newestDay": "2026-12-04", "status": "ok" | "degraded" | "unknown", "degraded": [{source, cluster, ...}]}."""
    try:
        day = con.execute("select max(usage_date) from marts.fct_cluster_daily").fetchone()[0]
    except duckdb.CatalogException:
        day = None
    if day is None:
        return {"newestDay": None, "status": "unknown", "degraded": []}
    rows = degraded(con, [day], schema)
    return {"newestDay": day.isoformat(), "status": "degraded" if rows else "ok",
            "degraded": [{k: r[k] for k in ("source", "cluster", "failure", "message", "hint")} for r in rows]}

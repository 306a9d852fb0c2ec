"""GET /metrics: the Prometheus text exposition format (version 0.0.4) for the cluster's own monitoring (docs/API.md).

Three groups of families:

- the last published day, per cluster (its newest `usage_date` in marts.fct_allocation_daily): cost, kWh and CO2e per
  namespace with bounded cardinality (the `top` namespaces by cost, default 50, the rest summed into
  namespace="__other__"; the API's keys for rows without a namespace, `__idle__`, `__unmounted__`, `__shared__`
  and `__unallocated__`, are always their own series), and the cluster totals, shares and coverage of
  marts.fct_cluster_daily for that day. Check results are not in the serving copy (they live in Dagster's event
  log); what the copy proves instead is exported: hour coverage and whether idle was clamped.
- the snapshot: `kubeledger_serving_up` 1/0, the age of the snapshot file (its mtime, as /healthz), the day.
- the API server's own counters (`kubeledger_api_*`), once the app is attached with `attach_app` (server.make_app
  has to call it: routes are built before the app exists and never see it).

The route is a probe (answered outside the query admission: a scrape takes no query slot and is never a busy 503)
and reads its own snapshot lease (`needs_snapshot=False`), so a server without a readable snapshot still answers
200 with `kubeledger_serving_up 0` (and the API counters when attached): Prometheus drops the body of a non-2xx
scrape.
The marts part is computed once per snapshot (and `top`) and kept; the answer is never put in the app's cache.
The text is written by hand (prometheus-client is only a test dependency): label values and HELP texts are escaped.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.query.coverage import has_mart
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.snapshots import ServingUnavailable, Snapshot, SnapshotPool
from pipelines.settings import Settings
from pipelines.warehouse.publish import NAMESPACE_KEY_SQL

if TYPE_CHECKING:
    from pipelines.serving.http.app import AllocationApp

METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4"
DEFAULT_TOP = 50
MAX_TOP = 1000
OTHER = "__other__"
# the API's namespace keys for rows without a namespace (publish.NAMESPACE_KEY_SQL): never folded into __other__
SPECIAL_NAMESPACES = ("__idle__", "__unmounted__", "__shared__", "__unallocated__")
_CACHED_SNAPSHOTS = 4
# per cluster: its newest day in fct_allocation_daily, and that day's sums per namespace key (fixed SQL text)
_LAST_DAY_SQL = (
    "WITH days AS (SELECT cluster AS day_cluster, max(usage_date) AS day FROM marts.fct_allocation_daily "  # noqa: S608
    "GROUP BY cluster) "
    f"SELECT cluster, day, {NAMESPACE_KEY_SQL} AS ns, sum(coalesce(total_cost, 0)), "
    "sum(coalesce(energy_kwh, 0)), sum(coalesce(co2e_total_g, 0)) "
    "FROM marts.fct_allocation_daily JOIN days ON cluster = day_cluster AND usage_date = day "
    "GROUP BY ALL ORDER BY cluster, ns")


# -- the text format ----------------------------------------------------------------------------------------------


def escape_label(value: str) -> str:
    """A label value inside double quotes: backslash, double quote and line feed escaped (exposition format 0.0.4)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """A HELP text: backslash and line feed escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


@dataclass
class Family:
    """One metric family: name, type (gauge or counter), help and its samples (labels, value)."""

    name: str
    kind: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: Any, **labels: str) -> None:
        if value is None:
            return  # a NULL in the mart is no sample, not a 0
        self.samples.append((labels, float(value)))

    def render(self) -> str:
        sample = f"{self.name}_total" if self.kind == "counter" else self.name
        lines = [f"# HELP {sample} {escape_help(self.help)}", f"# TYPE {sample} {self.kind}"]
        for labels, value in self.samples:
            label_text = ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items())
            lines.append(f"{sample}{{{label_text}}} {format_value(value)}" if label_text else
                         f"{sample} {format_value(value)}")
        return "\n".join(lines) + "\n"


def render(families: list[Family]) -> str:
    return "".join(f.render() for f in families)


# -- the marts ----------------------------------------------------------------------------------------------------


def _day_timestamp(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def bound_namespaces(rows: list[tuple[str, float, float, float]], top: int) -> list[tuple[str, float, float, float]]:
    """(namespace, cost, kWh, CO2e) of one cluster-day → at most `top` namespaces by cost (ties by name), the rest
    summed into __other__ (emitted only when something was folded); the keys without a namespace stay apart."""
    special = [r for r in rows if r[0] in SPECIAL_NAMESPACES]
    regular = sorted((r for r in rows if r[0] not in SPECIAL_NAMESPACES and r[0] != OTHER),
                     key=lambda r: (-r[1], r[0]))
    folded = regular[top:] + [r for r in rows if r[0] == OTHER]  # a namespace really named __other__ joins it
    out = regular[:top]
    if folded:
        out.append((OTHER, sum(r[1] for r in folded), sum(r[2] for r in folded), sum(r[3] for r in folded)))
    return out + sorted(special)


def mart_families(cur: duckdb.DuckDBPyConnection, top: int) -> list[Family]:
    """The last published day of each cluster, from the snapshot's marts."""
    cost = Family("kubeledger_cost_usd", "gauge",
                  f"Cost of the cluster's last published day per namespace, USD (marts.fct_allocation_daily "
                  f"total_cost); at most {top} namespaces per cluster by cost, the rest in namespace=\"{OTHER}\".")
    energy = Family("kubeledger_energy_kwh", "gauge",
                    "Energy of the cluster's last published day per namespace, kWh (same namespaces as "
                    "kubeledger_cost_usd).")
    co2e = Family("kubeledger_co2e_grams", "gauge",
                  "CO2e (operational + embodied) of the cluster's last published day per namespace, grams (same "
                  "namespaces as kubeledger_cost_usd).")
    namespaces = Family("kubeledger_namespaces", "gauge",
                        "Distinct namespaces on the cluster's last published day, before the bound of the "
                        "per-namespace series.")
    day_ts = Family("kubeledger_last_published_day_timestamp_seconds", "gauge",
                    "The cluster's newest usage_date in marts.fct_allocation_daily, as the Unix time of its "
                    "midnight UTC.")
    cluster_cost = Family("kubeledger_cluster_cost_usd", "gauge",
                          "Cluster total cost of the last published day (assets + overhead + network), USD "
                          "(marts.fct_cluster_daily total_cost).")
    cluster_energy = Family("kubeledger_cluster_energy_kwh", "gauge",
                            "Cluster energy of the last published day, kWh (marts.fct_cluster_daily).")
    cluster_co2e = Family("kubeledger_cluster_co2e_grams", "gauge",
                          "Cluster CO2e of the last published day, grams (marts.fct_cluster_daily co2e_total_g).")
    idle = Family("kubeledger_idle_share", "gauge",
                  "Idle cost / node compute cost of the last published day, 0-1 (marts.fct_cluster_daily "
                  "idle_percentage).")
    co2e_est = Family("kubeledger_co2e_estimated_share", "gauge",
                      "Share of the day's CO2e on rows with an energy or carbon fallback, 0-1.")
    cost_est = Family("kubeledger_cost_estimated_share", "gauge",
                      "Share of the day's cost on rows with a cost fallback, 0-1.")
    coverage = Family("kubeledger_hour_coverage", "gauge",
                      "Share of the day's 24 hours with node samples, 0-1 (the publish gate checks it against "
                      "quality.min_hour_coverage).")
    clamped = Family("kubeledger_idle_clamped", "gauge",
                     "1 when idle cost was clamped at 0 on the day (some hour's workloads cost more than their node), "
                     "else 0.")
    families = [cost, energy, co2e, namespaces, day_ts, cluster_cost, cluster_energy, cluster_co2e, idle, co2e_est,
                cost_est, coverage, clamped]
    if not has_mart(cur, "fct_allocation_daily"):
        return families
    # each cluster's newest day, and its rows there per namespace key
    rows = cur.execute(_LAST_DAY_SQL).fetchall()
    days: dict[str, date] = {}
    per_cluster: dict[str, list[tuple[str, float, float, float]]] = {}
    for cluster, day, ns, c, e, g in rows:
        days[cluster] = day
        per_cluster.setdefault(cluster, []).append((str(ns), c, e, g))
    for cluster, day in days.items():
        mine = per_cluster[cluster]
        for ns, c, e, g in bound_namespaces(mine, top):
            cost.add(c, cluster=cluster, namespace=ns)
            energy.add(e, cluster=cluster, namespace=ns)
            co2e.add(g, cluster=cluster, namespace=ns)
        namespaces.add(sum(1 for r in mine if r[0] not in SPECIAL_NAMESPACES), cluster=cluster)
        day_ts.add(_day_timestamp(day), cluster=cluster)
    if not days or not has_mart(cur, "fct_cluster_daily"):
        return families
    cols = {r[0] for r in cur.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'marts' "
        "AND table_name = 'fct_cluster_daily'").fetchall()}
    wanted = [(cluster_cost, "total_cost"), (cluster_energy, "energy_kwh"), (cluster_co2e, "co2e_total_g"),
              (idle, "idle_percentage"), (co2e_est, "co2e_estimated_share"), (cost_est, "cost_estimated_share"),
              (coverage, "hour_coverage"), (clamped, "idle_clamped")]
    present = [(fam, col) for fam, col in wanted if col in cols]  # an older copy may lack a column
    if not present:
        return families
    select = ", ".join(f"CAST({col} AS DOUBLE)" for _fam, col in present)  # allow-listed column names
    found = cur.execute(
        f"SELECT cluster, {select} FROM marts.fct_cluster_daily "  # noqa: S608 - allow-listed column names
        f"JOIN (SELECT unnest($clusters) AS c, unnest($days) AS d) ON cluster = c AND usage_date = d "
        f"ORDER BY cluster", {"clusters": list(days), "days": list(days.values())}).fetchall()
    for cluster, *values in found:
        for (fam, _col), value in zip(present, values, strict=True):
            fam.add(value, cluster=cluster)
    return families


# -- the server ---------------------------------------------------------------------------------------------------


def api_families(app: AllocationApp) -> list[Family]:
    """The API server's counters, as /healthz shows them."""
    out = [
        Family("kubeledger_api_requests_served", "counter",
               "Requests answered on the query path since start: cache hits, shared answers and executed "
               "queries and /metrics scrapes, whatever their status (rejections, 400s, 404s and /healthz not "
               "included)."),
        Family("kubeledger_api_requests_rejected", "counter",
               "Requests answered 503 because every query slot was busy and the queue was full or waited too long."),
        Family("kubeledger_api_query_timeouts", "counter", "Queries stopped at the query deadline."),
        Family("kubeledger_api_client_disconnects", "counter", "Queries stopped because their client went away."),
        Family("kubeledger_api_cache_hits", "counter", "Answers served from the per-snapshot answer cache."),
        Family("kubeledger_api_cache_misses", "counter", "Answer cache lookups that missed."),
        Family("kubeledger_api_queries_running", "gauge", "Queries executing now (a scrape takes no query slot)."),
        Family("kubeledger_api_queries_queued", "gauge", "Queries waiting for a slot now."),
        Family("kubeledger_api_max_running", "gauge", "Limit: queries running at once."),
        Family("kubeledger_api_max_queued", "gauge", "Limit: queries waiting at once."),
    ]
    values = [app.served, app.rejected, app.timeouts, app.disconnects, app.cache.hits, app.cache.misses, app.running,
              app.queued, app.limits.max_running, app.limits.max_queued]
    for fam, value in zip(out, values, strict=True):
        fam.add(value)
    return out


def _top(params: dict[str, str]) -> int:
    raw = params.get("top")
    if raw is None:
        return DEFAULT_TOP
    top = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 6 else -1
    if not 0 <= top <= MAX_TOP:
        raise QueryError("top", raw, f"use a whole number of namespaces per cluster from 0 to {MAX_TOP} "
                                     f"(default {DEFAULT_TOP}); the others are summed into namespace=\"{OTHER}\"")
    return top


def validate(params: dict[str, str]) -> None:
    for name in params:
        if name != "top":
            raise QueryError(name, params[name], "/metrics takes only `top` (namespaces per cluster)")
    _top(params)


class _ScrapePool(SnapshotPool):
    """The app's choice of snapshot, opened for one scrape. No SET: DuckDB shares one instance per file within the
    process, so a SET here would change the settings of the app's own pool; the scrape reads one day's sums."""

    def _open(self, path: Path, stamp: tuple[int, int, int]) -> Snapshot:
        con = duckdb.connect(str(path), read_only=True)
        try:
            con.execute("SELECT 1").fetchone()
        except BaseException:
            con.close()
            raise
        return Snapshot(path=path, stamp=stamp, con=con)


class MetricsEndpoint:
    """The /metrics route. `app` is set by attach_app: the scrape then leases from the app's snapshot pool and adds
    its counters; without it each scrape opens the newest snapshot for itself and closes it after."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app: AllocationApp | None = None
        self._lock = threading.Lock()
        self._marts: OrderedDict[tuple[str, int], str] = OrderedDict()

    def route(self) -> Route:
        return Route(fn=self.run, validate=validate, needs_snapshot=False, probe=True)

    def _marts_text(self, snap: Snapshot, top: int) -> str:
        key = (snap.id, top)
        with self._lock:
            hit = self._marts.get(key)
        if hit is not None:
            return hit
        cur = snap.con.cursor()
        try:
            text = render(mart_families(cur, top))
        finally:
            cur.close()
        with self._lock:
            self._marts[key] = text
            while len(self._marts) > _CACHED_SNAPSHOTS:
                self._marts.popitem(last=False)
        return text

    def _scrape(self, pool: SnapshotPool, top: int) -> tuple[bool, float | None, str]:
        try:
            with pool.lease() as snap:
                return True, max(0.0, time.time() - snap.stamp[2] / 1e9), self._marts_text(snap, top)
        except ServingUnavailable:
            return False, None, ""

    def run(self, _cur: duckdb.DuckDBPyConnection | None, params: dict[str, str]) -> Reply:
        top = _top(params)
        app = self.app
        if app is not None:
            up, age, marts = self._scrape(app.pool, top)
        else:
            pool = _ScrapePool(self.settings.serving_path)
            try:
                up, age, marts = self._scrape(pool, top)
            finally:
                pool.close()
        serving = [Family("kubeledger_serving_up", "gauge",
                          "1 when a serving snapshot can be read, else 0 (then /healthz says why).")]
        serving[0].add(1 if up else 0)
        if age is not None:
            serving.append(Family("kubeledger_last_publish_age_seconds", "gauge",
                                  "Seconds since the serving snapshot being read was written (its file mtime)."))
            serving[-1].add(round(age, 3))
        text = render(serving) + marts + (render(api_families(app)) if app is not None else "")
        return Reply(200, text, CONTENT_TYPE, cacheable=False)


def metrics_routes(settings: Settings) -> dict[str, Route]:
    return {METRICS_PATH: MetricsEndpoint(settings).route()}


def attach_app(app: AllocationApp) -> None:
    """Give the /metrics route of `app` the app's snapshot pool and counters (call once the app exists)."""
    route = app.routes.get(METRICS_PATH)
    endpoint = getattr(route.fn, "__self__", None) if route is not None else None
    if isinstance(endpoint, MetricsEndpoint):
        endpoint.app = app

"""/clusterInfo (OpenCost) and /model/clusterInfo (Kubecost).

clusterInfo is a map of strings upstream; with several clusters in the warehouse the upstream fields describe the
first (alphabetically) and `kubeledgerClusters` lists them all with their materialised days.
"""

from __future__ import annotations

from typing import Any

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.http.replies import ok
from pipelines.serving.query.coverage import has_mart
from pipelines.settings import Settings

CLUSTER_INFO_PATHS = ("/clusterInfo", "/model/clusterInfo")


def _day_sources(con: duckdb.DuckDBPyConnection) -> str | None:
    for table in ("fct_cluster_daily", "fct_allocation_daily", "fct_asset_daily"):
        if has_mart(con, table):
            return table
    return None


def _ranked(con: duckdb.DuckDBPyConnection, column: str) -> dict[str, list[str]]:
    """Per cluster, the distinct values of a node property, most node-hours first."""
    if has_mart(con, "fct_asset_daily"):
        src, hours = "marts.fct_asset_daily WHERE asset_kind = 'node'", "hours"
    elif has_mart(con, "fct_node_energy_daily"):
        src, hours = "marts.fct_node_energy_daily WHERE TRUE", "hours"
    else:
        return {}
    assert column in ("provider", "region")
    rows = con.execute(f"SELECT cluster, {column}, sum(coalesce({hours}, 0)) AS h FROM {src} "  # noqa: S608
                       f"AND nullif({column}, '') IS NOT NULL GROUP BY ALL ORDER BY cluster, h DESC, {column}"
                       ).fetchall()
    out: dict[str, list[str]] = {}
    for cluster, value, _h in rows:
        out.setdefault(cluster, []).append(str(value))
    return out


def clusters(con: duckdb.DuckDBPyConnection, settings: Settings) -> list[dict[str, Any]]:
    """Every cluster of the snapshot: name, provider(s), region(s), first/last materialised day."""
    table = _day_sources(con)
    rows = con.execute(f"SELECT cluster, min(usage_date), max(usage_date), count(DISTINCT usage_date) "  # noqa: S608
                       f"FROM marts.{table} GROUP BY cluster ORDER BY cluster").fetchall() if table else []
    providers, regions = _ranked(con, "provider"), _ranked(con, "region")
    configured = {c.name: c for c in settings.clusters}
    out = []
    for name, first, last, days in rows:
        cfg = configured.get(name)
        provs = providers.get(name) or ([cfg.provider] if cfg and cfg.provider else [])
        regs = regions.get(name) or ([cfg.region] if cfg and cfg.region else [])
        out.append({"name": name, "provider": provs[0] if provs else "", "providers": provs,
                    "region": regs[0] if regs else "", "regions": regs, "firstDay": first.isoformat(),
                    "lastDay": last.isoformat(), "days": int(days)})
    return out


def cluster_info(con: duckdb.DuckDBPyConnection, settings: Settings) -> dict[str, Any]:
    """The clusterInfo map: upstream's fields for the first cluster, plus `kubeledgerClusters` (all of them)."""
    found = clusters(con, settings)
    if found:
        first = found[0]
        name, provider, region = first["name"], first["provider"], first["region"]
    else:  # nothing materialised yet: describe the configured cluster
        cfg = settings.clusters[0] if settings.clusters else None
        name = cfg.name if cfg else "kubeledger"
        provider, region = (cfg.provider or "", cfg.region or "") if cfg else ("", "")
    info: dict[str, Any] = {
        "id": name, "name": name, "provider": provider, "account": "", "project": "", "region": region,
        "provisioner": "", "remoteReadEnabled": "false", "thanosEnabled": "false", "version": "",
        "clusterProfile": "production", "logCollection": "false", "productAnalytics": "false",
        "errorReporting": "false", "valuesReporting": "false",
    }
    info["kubeledgerClusters"] = found
    return info


def _cluster_info_route(settings: Settings) -> Route:
    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        ignored = sorted(params)
        return ok(cluster_info(cur, settings),
                  [f"parameter(s) ignored: {', '.join(ignored)} (clusterInfo takes none)"] if ignored else [])

    return Route(fn=run)


def cluster_info_routes(settings: Settings) -> dict[str, Route]:
    return {path: _cluster_info_route(settings) for path in CLUSTER_INFO_PATHS}

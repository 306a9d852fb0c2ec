"""The asset endpoints: Kubecost /model/assets (sets per step), OpenCost /assets (one set for the window), and
/assets/carbon, /model/assets/carbon (one set of CarbonRows). Their parameters map onto an AssetQuery here; the
query is query/asset_query.py and query/assets.py answers it."""

from __future__ import annotations

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.http.params import legacy_filter, param_int, param_reconcile, tolerance_notes
from pipelines.serving.http.replies import ok, text
from pipelines.serving.query.asset_query import AssetQuery
from pipelines.serving.query.assets import answer_assets, assets_csv
from pipelines.serving.query.errors import QueryError
from pipelines.settings import Settings

# path → flavor: kubecost answers a list of sets, opencost one set (an object), carbon one set of CarbonRows
ASSET_ROUTES = {"/model/assets": "kubecost", "/assets": "opencost", "/assets/carbon": "carbon",
                "/model/assets/carbon": "carbon"}
# Kubecost v1 filter parameters → asset filter fields
LEGACY_FILTERS = {"filterTypes": "assetType", "filterProviders": "provider", "filterClusters": "cluster",
                  "filterCategories": "category", "filterServices": "service", "filterAccounts": "account",
                  "filterProjects": "project", "filterProviderIDs": "providerID", "filterNames": "name"}
IMPLEMENTED = {"window", "aggregate", "accumulate", "accumulateBy", "step", "filter", "offset", "limit", "format",
               "strict", "reconcile", "disableAdjustments", *LEGACY_FILTERS}
IGNORED = {
    "shareIdle": "assets have no idle to share",
    "resolution": "the store is daily; resolution has no effect",
    "details": "every asset already carries its details",
    "external": "kubeledger has no out-of-cluster costs",
    "costMetric": "asset costs are cumulative over each set's window",
}


def asset_query_from_params(params: dict[str, str], flavor: str) -> AssetQuery:
    """flavor: kubecost (/model/assets: sets per step), opencost (/assets: one accumulated set) or carbon."""
    notes = tolerance_notes(params, IMPLEMENTED, IGNORED)
    fmt = params.get("format", "json") or "json"
    if fmt not in ("json", "csv") or (fmt == "csv" and flavor == "carbon"):
        raise QueryError("format", fmt, "use json" + (" or csv" if flavor != "carbon" else ""))
    accumulate = params.get("accumulateBy") or params.get("accumulate")
    if flavor != "kubecost":  # OpenCost's /assets and /assets/carbon answer one AssetSet for the window
        partial = accumulate and accumulate.strip().lower() not in ("true", "all", "1", "t")
        if (partial or params.get("step")) and flavor == "opencost":
            notes.append("accumulate/step: /assets answers one set for the window (use /model/assets for sets)")
        accumulate, step = "all", None
    else:
        step = params.get("step")
    return AssetQuery(window=params.get("window", ""), aggregate=params.get("aggregate", "") or "",
                      filter=legacy_filter(params, LEGACY_FILTERS), step=step, accumulate=accumulate,
                      offset=param_int(params, "offset") or 0, limit=param_int(params, "limit"), format=fmt,
                      notes=tuple(notes), reconcile=param_reconcile(params))


def _asset_route(flavor: str) -> Route:
    def validate(params: dict[str, str]) -> None:
        asset_query_from_params(params, flavor).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        q = asset_query_from_params(params, flavor)
        sets, warnings, _span = answer_assets(cur, q, carbon=flavor == "carbon")
        if q.format == "csv":
            return text(assets_csv(sets), "text/csv", warnings)
        return ok(sets if flavor == "kubecost" else sets[0], warnings)

    return Route(fn=run, validate=validate)


def asset_routes(settings: Settings) -> dict[str, Route]:  # settings unused: every family takes them
    return {path: _asset_route(flavor) for path, flavor in ASSET_ROUTES.items()}

"""The routes beyond allocation (issue 13): assets, asset carbon, allocation summaries and topline, clusterInfo,
and the JSON 404s of upstream endpoints kubeledger does not serve. routes.build_routes adds them."""

from __future__ import annotations

import duckdb

from pipelines.serving.app import Reply, Route
from pipelines.serving.asset_query import asset_query_from_params
from pipelines.serving.assets import answer_assets, assets_csv
from pipelines.serving.cluster_info import cluster_routes
from pipelines.serving.replies import ok, text
from pipelines.serving.summary import summary_routes
from pipelines.settings import Settings

# path → flavor: kubecost answers a list of sets, opencost one set (an object), carbon one set of CarbonRows
ASSET_ROUTES = {"/model/assets": "kubecost", "/assets": "opencost", "/assets/carbon": "carbon",
                "/model/assets/carbon": "carbon"}


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


def extra_routes(settings: Settings) -> dict[str, Route]:
    routes = {path: _asset_route(flavor) for path, flavor in ASSET_ROUTES.items()}
    routes.update(summary_routes(settings))
    routes.update(cluster_routes(settings))
    return routes

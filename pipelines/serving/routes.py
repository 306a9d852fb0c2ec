"""The API's routes: which path answers what, over a cursor on one serving snapshot (docs/API.md)."""

from __future__ import annotations

import duckdb

from pipelines.serving.api import ack_view, query_from_params
from pipelines.serving.app import Reply, Route
from pipelines.serving.engine import answer_allocations, to_csv
from pipelines.serving.extra_routes import extra_routes
from pipelines.serving.metrics import metrics_routes
from pipelines.serving.replies import ok, text
from pipelines.serving.savings import savings_routes
from pipelines.settings import Settings

ALLOCATION_FLAVORS = {"/model/allocation": "kubecost", "/allocation": "opencost", "/allocation/compute": "opencost",
                      "/v2/allocation": "ack"}


def _allocation(flavor: str, settings: Settings) -> Route:
    def validate(params: dict[str, str]) -> None:
        query_from_params(params, flavor, settings).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        q = query_from_params(params, flavor, settings)
        answer = answer_allocations(cur, q)
        if q.format == "csv":
            return text(to_csv(answer.sets), "text/csv", answer.warnings)
        return ok(ack_view(answer.sets) if flavor == "ack" else answer.sets, answer.warnings)

    return Route(fn=run, validate=validate)


def build_routes(settings: Settings) -> dict[str, Route]:
    routes: dict[str, Route] = {}
    for path, flavor in ALLOCATION_FLAVORS.items():
        routes[path] = _allocation(flavor, settings)
    routes.update(extra_routes(settings))  # assets, summaries, clusterInfo, unserved upstream endpoints
    routes.update(savings_routes(settings))  # /model/savings…, /kubeledger/recommendations (issue 16)
    routes.update(metrics_routes(settings))  # /metrics (Prometheus); metrics.attach_app adds API counters
    return routes


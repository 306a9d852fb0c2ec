"""The API's route table: which path answers what, over a cursor on one serving snapshot (docs/API.md).

One module per API family, each with a `<family>_routes(settings) -> {path: Route}`; `build_routes` joins them in
this order (which never matters for an answer: paths are distinct)."""

from __future__ import annotations

from pipelines.serving.http.app import Route
from pipelines.serving.routes.allocation import allocation_routes
from pipelines.serving.routes.assets import asset_routes
from pipelines.serving.routes.cloud_cost import cloud_cost_routes
from pipelines.serving.routes.cluster_info import cluster_info_routes
from pipelines.serving.routes.decisions import decision_routes
from pipelines.serving.routes.metrics import metrics_routes
from pipelines.serving.routes.savings import savings_routes
from pipelines.serving.routes.summary import summary_routes
from pipelines.serving.routes.unserved import unserved_routes
from pipelines.settings import Settings


def build_routes(settings: Settings) -> dict[str, Route]:
    routes: dict[str, Route] = {}
    routes.update(allocation_routes(settings))  # /model/allocation, /allocation, /allocation/compute, /v2/allocation
    routes.update(asset_routes(settings))  # /model/assets, /assets, /assets/carbon
    routes.update(summary_routes(settings))  # allocation summaries and topline
    routes.update(cluster_info_routes(settings))  # /clusterInfo, /model/clusterInfo
    routes.update(cloud_cost_routes(settings))  # /model/cloudCost, /cloudCost (the FOCUS bill)
    routes.update(unserved_routes(settings))  # upstream endpoints kubeledger does not serve: a JSON 404 saying why
    routes.update(savings_routes(settings))  # /model/savings…, /kubeledger/recommendations (issue 16)
    routes.update(decision_routes(settings))  # POST /kubeledger/recommendations/{dismiss,…}: opt-in (api.decisions)
    routes.update(metrics_routes(settings))  # /metrics (Prometheus); metrics.attach_app adds API counters
    return routes

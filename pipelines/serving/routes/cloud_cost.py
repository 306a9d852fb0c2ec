"""The cloud cost endpoints: Kubecost /model/cloudCost and OpenCost /cloudCost, over the FOCUS bill
(marts.fct_cloud_cost_daily). Their parameters map onto a CloudCostQuery here; query/cloud_cost.py answers it.

Without a bill in the snapshot the answer is a 200 with empty sets and a warning saying why (no `billing:` block, or
no bill rows loaded yet), never a 404: a Kubecost client asks this endpoint as part of its normal round."""

from __future__ import annotations

import duckdb

from pipelines.serving.http.app import Reply, Route
from pipelines.serving.http.params import legacy_filter, param_int, tolerance_notes
from pipelines.serving.http.replies import ok
from pipelines.serving.query.cloud_cost import CloudCostQuery, answer_cloud_costs
from pipelines.settings import Settings

CLOUD_COST_ROUTES = ("/model/cloudCost", "/cloudCost")
# Kubecost v1 filter parameters → cloud cost filter fields
LEGACY_FILTERS = {"filterInvoiceEntityIDs": "invoiceEntityID", "filterAccountIDs": "accountID",
                  "filterProviders": "provider", "filterProviderIDs": "providerID", "filterServices": "service",
                  "filterCategories": "category"}
IMPLEMENTED = {"window", "aggregate", "accumulate", "step", "filter", "costMetric", "offset", "limit", "format",
               "strict", *LEGACY_FILTERS}
IGNORED = {"resolution": "the bill is daily; resolution has no effect",
           "includeOutOfCluster": "every bill row is answered; kubernetesPercent is the part inside a cluster"}
NO_BILLING = ("no billing source is configured (kubeledger.yaml `billing.focus_path` or `billing.cur2_path`, docs/API.md "
              "\"Cloud costs\"): kubeledger has no cloud bill to answer from, so every set is empty")
NO_BILL_ROWS = ("no cloud bill is in the serving snapshot yet (a billing path is configured: run the pipeline, "
                "and see `kubeledger status` for the billing source's health)")


def cloud_cost_query_from_params(params: dict[str, str]) -> CloudCostQuery:
    """Kubecost's parameters; without accumulate or step, one set per day (the bill's resolution)."""
    notes = tolerance_notes(params, IMPLEMENTED, IGNORED)
    accumulate = params.get("accumulate")
    step = params.get("step") or (None if accumulate and accumulate.strip() else "day")
    return CloudCostQuery(window=params.get("window", ""), aggregate=params.get("aggregate", "") or "",
                          filter=legacy_filter(params, LEGACY_FILTERS), step=step, accumulate=accumulate,
                          offset=param_int(params, "offset") or 0, limit=param_int(params, "limit"),
                          format=params.get("format", "json") or "json",
                          cost_metric=params.get("costMetric") or "amortizedNetCost", notes=tuple(notes))


def _cloud_cost_route(settings: Settings) -> Route:
    no_bill = NO_BILL_ROWS if settings.billing.focus_path or settings.billing.cur2_path else NO_BILLING

    def validate(params: dict[str, str]) -> None:
        cloud_cost_query_from_params(params).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        sets, warnings = answer_cloud_costs(cur, cloud_cost_query_from_params(params), no_bill)
        return ok({"sets": sets}, warnings, status=False)

    return Route(fn=run, validate=validate)


def cloud_cost_routes(settings: Settings) -> dict[str, Route]:
    return {path: _cloud_cost_route(settings) for path in CLOUD_COST_ROUTES}

"""The JSON 404s of the upstream endpoints kubeledger does not serve (cloud billing and custom-cost plugins), under
OpenCost's paths and Kubecost's /model ones: a client learns why, not just that the path is unknown."""

from __future__ import annotations

from typing import Any

from pipelines.serving.http.app import Reply, Route, error_reply
from pipelines.settings import Settings

_NO_BILLING = ("kubeledger answers the cloud bill at /model/cloudCost and /cloudCost (marts.fct_cloud_cost_daily); "
               "the cloud cost views, status, rebuild and repair endpoints are not served")
_NO_CUSTOM = ("kubeledger has no custom-cost plugins (OpenCost's plugin pipeline for Datadog, OpenAI, …); there are "
              "no custom costs to serve")
# /cloudCost and /model/cloudCost answer from the FOCUS bill (routes/cloud_cost.py); its views are not served yet
UNSERVED = {
    "/cloudCost/view/graph": _NO_BILLING, "/cloudCost/view/totals": _NO_BILLING,
    "/cloudCost/view/table": _NO_BILLING, "/cloudCost/status": _NO_BILLING, "/cloudCost/rebuild": _NO_BILLING,
    "/cloudCost/repair": _NO_BILLING, "/customCost/total": _NO_CUSTOM, "/customCost/timeseries": _NO_CUSTOM,
    "/customCost/status": _NO_CUSTOM,
}


def _unserved_route(path: str, why: str) -> Route:
    def run(_cur: Any, _params: dict[str, str]) -> Reply:
        return error_reply(404, f"{path}: kubeledger does not serve this endpoint; {why} (docs/API.md lists what "
                                "it serves)", reason=why, data=None)

    return Route(fn=run, needs_snapshot=False)


def unserved_routes(settings: Settings) -> dict[str, Route]:  # settings unused: every family takes them
    routes: dict[str, Route] = {}
    for path, why in UNSERVED.items():
        routes[path] = _unserved_route(path, why)
        routes["/model" + path] = _unserved_route("/model" + path, why)
    return routes

"""The API's routes: which path answers what, over a cursor on one serving snapshot (docs/API.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb

from pipelines.serving.api import ack_view, query_from_params
from pipelines.serving.app import Reply, Route
from pipelines.serving.engine import answer_allocations, to_csv
from pipelines.settings import Settings

ALLOCATION_FLAVORS = {"/model/allocation": "kubecost", "/allocation": "opencost", "/allocation/compute": "opencost",
                      "/v2/allocation": "ack"}


def _allocation(flavor: str, settings: Settings) -> Route:
    def validate(params: dict[str, str]) -> None:
        query_from_params(params, flavor, settings).validate()

    def run(cur: duckdb.DuckDBPyConnection, params: dict[str, str]) -> Reply:
        q = query_from_params(params, flavor, settings)
        answer = answer_allocations(cur, q)
        headers = {"X-Kubeledger-Warning": _header_safe(answer.warning)} if answer.warning else {}
        if q.format == "csv":
            return Reply(200, to_csv(answer.sets), "text/csv", headers=headers)
        data: Any = ack_view(answer.sets) if flavor == "ack" else answer.sets
        body: dict[str, Any] = {"code": 200, "status": "success", "data": data}
        if answer.warning:
            body["warning"] = answer.warning
        return Reply(200, body, headers=headers)

    return Route(fn=run, validate=validate)


def _header_safe(text: str | None, limit: int = 1000) -> str:
    """A warning as an HTTP header value: printable ASCII, bounded."""
    out = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in (text or ""))
    return out[:limit]


def build_routes(settings: Settings) -> dict[str, Route]:
    routes: dict[str, Route] = {}
    for path, flavor in ALLOCATION_FLAVORS.items():
        routes[path] = _allocation(flavor, settings)
    return routes


RouteBuilder = Callable[[Settings], dict[str, Route]]

"""Serving: the Kubecost/OpenCost-compatible HTTP API, the `kubeledger allocation` CLI and the queries they share,
all reading the published serving copy (docs/API.md). Where things go:

- routes/  one module per API family (allocation, assets, summary, savings, cluster_info, unserved, metrics): it
           maps its endpoints' parameters onto a query, runs it, shapes the answer, and exports
           `<family>_routes(settings) -> {path: Route}`; routes/__init__.py joins them into the route table.
- query/   what answers a request, without HTTP, shared with the CLI and the report: the engines (allocation.py,
           assets.py, recommendations.py), their parts (windows, filters, aggregates, coverage, csvout), QueryError
           (errors.py, a 400 naming the parameter) and the snapshot pool every reader leases (snapshots.py).
- http/    the server: the ASGI app (admission, deadlines, cache, probes), uvicorn and its connection bounds, the
           success envelopes (replies.py: ok, text) and the query-string helpers (params.py).
- cli.py   `kubeledger allocation`.
The allocation column list, the sharing macros and the allocation rollups sit below, in pipelines/warehouse/: the
publish builds the rollups, and the warehouse never imports serving.

A new endpoint is a module in routes/ (or a route in its family's module), one line in routes/__init__.py, and its
test: a handler over a hand-made mart in tests/unit (as test_savings_api.py), or through the server in
tests/integration (as test_assets_summary_api.py). A query the CLI or the report needs too goes in query/.
"""

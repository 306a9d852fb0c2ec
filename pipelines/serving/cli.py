"""`kubeledger allocation …`: the allocation query from the command line (table, json or csv on stdout).

Defaults come from the configured sharing policy (settings.sharing); bad input exits 2 with the API's message.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pipelines.serving.query.allocation import AllocationQuery, answer_allocations, policy_defaults, to_csv
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.snapshots import ServingUnavailable, read_once
from pipelines.settings import Settings

TABLE_FIELDS = ("cpuCost", "ramCost", "gpuCost", "pvCost", "networkCost", "loadBalancerCost", "sharedCost",
                "totalCost", "totalEfficiency", "co2eTotalG")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit; the caller wants a return code
        raise QueryError("arguments", "", message, message=f"arguments: {message}")


def _bool(text: str) -> bool:
    low = text.lower()
    if low not in ("true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"{text} is not allowed; use true or false")
    return low in ("true", "1")


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    s = policy_defaults(settings.sharing)  # the configured sharing policy, as the Kubecost endpoint's defaults
    p = _Parser(prog="kubeledger allocation", description="Allocation query over the serving copy (docs/API.md).")
    p.add_argument("--window", required=True, help="e.g. yesterday, 7d offset 1d, 2024-03-01T00:00:00Z,2024-03-08T00:00:00Z")
    p.add_argument("--aggregate", default="", help="e.g. namespace, label:app, cluster,namespace")
    p.add_argument("--filter", default="", help='v2 filter, e.g. namespace:"kube-system"+label[app]:"web"')
    p.add_argument("--step", default=None)
    p.add_argument("--accumulate", default=None)
    p.add_argument("--idle", type=_bool, default=True)
    p.add_argument("--share-idle", type=_bool, default=s["share_idle"])
    p.add_argument("--idle-split", default=s["idle_split"])
    p.add_argument("--idle-by-node", type=_bool, default=s["idle_by_node"])
    p.add_argument("--split-idle", type=_bool, default=False)
    p.add_argument("--share-namespaces", default=",".join(s["share_namespaces"]))
    p.add_argument("--share-labels", default=",".join(s["share_labels"]))
    p.add_argument("--share-cost", type=float, default=s["share_cost"], help="$/month")
    p.add_argument("--share-split", default=s["share_split"])
    p.add_argument("--share-scope", default="all", choices=("all", "cluster"),
                   help="pool shared costs over the whole answer (all, as OpenCost) or within each cluster "
                        "(cluster, as marts.fct_allocation_shared_daily)")
    p.add_argument("--reconcile", type=_bool, default=True,
                   help="true: *CostAdjustment from the cloud bill, in totalCost (the API's default); false: list cost")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    return p


def _table(sets: list[dict[str, dict[str, Any]]]) -> str:
    lines = []
    for allocs in sets:
        if not allocs:
            continue
        first = next(iter(allocs.values()))
        lines.append(f"# {first['window']['start']} → {first['window']['end']}")
        width = max(12, *(len(k) for k in allocs))
        lines.append(f"{'name':<{width}} " + " ".join(f"{f:>16}" for f in TABLE_FIELDS))
        for key, a in allocs.items():
            cells = [f"{a[f]:>16.6f}" if isinstance(a[f], float) else f"{'':>16}" for f in TABLE_FIELDS]
            lines.append(f"{key:<{width}} " + " ".join(cells))
    return "\n".join(lines) + "\n" if lines else "(no allocations)\n"


def error_exit(exc: QueryError | ServingUnavailable) -> int:
    """Print a serving command's error; its exit code: 2 bad input, 1 no data or no serving copy."""
    if isinstance(exc, ServingUnavailable):
        print(f"error: {exc.reason}", file=sys.stderr)
        return 1
    print(f"error: {exc.message}", file=sys.stderr)
    return 2 if exc.status == 400 else 1


def run_allocation_cli(argv: list[str], settings: Settings) -> int:
    """Parse `argv` (without the subcommand), query the serving copy, print; 0 ok, 2 bad input, 1 no data."""
    try:
        a = build_parser(settings).parse_args(argv)
        q = AllocationQuery(
            window=a.window, aggregate=a.aggregate, filter=a.filter, step=a.step, accumulate=a.accumulate,
            idle=a.idle, share_idle=a.share_idle, idle_split=a.idle_split, idle_by_node=a.idle_by_node,
            split_idle=a.split_idle, share_namespaces=tuple(x.strip() for x in a.share_namespaces.split(",") if x.strip()),
            share_labels=tuple(x.strip() for x in a.share_labels.split(",") if x.strip()),
            share_cost=a.share_cost, share_split=a.share_split, share_scope=a.share_scope, offset=a.offset, limit=a.limit,
            format="csv" if a.format == "csv" else "json", reconcile=a.reconcile)
        q.validate()
        answer = read_once(settings.serving_path, lambda con: answer_allocations(con, q))
    except (QueryError, ServingUnavailable) as exc:
        return error_exit(exc)
    if answer.warning:
        print(f"warning: {answer.warning}", file=sys.stderr)
    sets = answer.sets
    if a.format == "csv":
        sys.stdout.write(to_csv(sets))
    elif a.format == "json":
        body = {"code": 200, "status": "success", "data": sets, **({"warning": answer.warning} if answer.warning else {})}
        sys.stdout.write(json.dumps(body, indent=2) + "\n")
    else:
        sys.stdout.write(_table(sets))
    return 0

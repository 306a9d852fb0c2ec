"""The allocation rollup (warehouse/allocation_rollup.py) answers exactly as the detail table: a matrix of requests run
through both paths must give equal answers (floats to 1e-9), and the engine must pick the rollup only when the
request can be answered from it."""

from __future__ import annotations

import itertools
import json
import math
import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.serving.query.allocation import AllocationQuery, _on_rollup, answer_allocations, rollups
from pipelines.warehouse.allocation_rollup import build_rollup
from pipelines.warehouse.publish import publish_serving_copy
from tests.fixtures.opencost_fixture import create_allocation_table, idle_row, insert_rows, workload_row

DAYS = [date(2024, 3, 1) + timedelta(days=i) for i in range(4)]
WINDOW = "2024-03-01T00:00:00Z,2024-03-05T00:00:00Z"
LABEL_KEYS = ("app", "app.kubernetes.io/name")


def _rows(rng: random.Random) -> list[dict[str, Any]]:
    """Many pods per (namespace, controller, app) so the rollup merges rows, with properties that sometimes agree
    inside a group and sometimes not (nodes, extra labels, estimation), idle per node, and an unmounted volume."""
    rows: list[dict[str, Any]] = []
    for day in DAYS:
        for cluster in ("c0", "c1"):
            for ni in range(3):
                node = f"{cluster}-n{ni}"
                for pi in range(10):
                    # the group keys follow the pod slot (merged across nodes); other properties vary at random
                    ns = ["default", "kube-system", "team-a"][pi % 3]
                    kind = [None, "deployment", "Deployment", "statefulset", "job"][pi % 5]
                    labels = {"app": ["web", "db", "cache", ""][pi % 4]} if rng.random() < 0.9 else {}
                    if pi % 5 == 0:
                        labels["app.kubernetes.io/name"] = "svc"
                    if rng.random() < 0.2:
                        labels["tier"] = "x"
                    rows.append(workload_row(
                        day, cluster, node, ns, f"p{pi % 4}", f"k{rng.randint(0, 1)}", controller_kind=kind,
                        controller=f"ctl{pi % 2}" if kind else [None, "orphan"][pi % 2], labels=labels,
                        annotations={"team": "t1"} if rng.random() < 0.5 else {},
                        services=["svc1"] if rng.random() < 0.2 else [],
                        cpu=rng.uniform(0, 5), gpu=rng.choice([0.0, rng.uniform(0, 3)]), ram=rng.uniform(0, 4),
                        pv=rng.uniform(0, 1), network=rng.uniform(0, 1), lb=rng.choice([0.0, 0.5]),
                        energy_kwh=rng.uniform(0, 2), co2e_g=rng.uniform(0, 900),
                        is_estimated=rng.random() < 0.2, reasons=rng.choice(["", "", "", "usage_missing"])))
                    r = rows[-1]
                    r["minutes"] = rng.choice([1440.0, 720.0, 60.0])
                    r["cpu_core_request_average"] = rng.uniform(0, 2)
                    r["ram_byte_usage_max"] = rng.uniform(0, 9)
                    r["carbon_intensity_g_per_kwh"] = rng.uniform(100, 500)
                    r["namespace_labels"] = json.dumps({"app": "ns-app"} if ns == "team-a" else {})
                rows.append(idle_row(day, cluster, node, cpu=rng.uniform(0, 6), ram=rng.uniform(0, 6),
                                     energy_kwh=rng.uniform(0, 1), co2e_g=rng.uniform(0, 300)))
    return rows


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    create_allocation_table(c)
    insert_rows(c, _rows(random.Random(11)))
    rows = build_rollup(c, label_keys=LABEL_KEYS)
    detail = c.execute("SELECT count(*) FROM marts.fct_allocation_daily").fetchone()[0]
    assert max(rows.values()) < detail * 0.6  # the fixture must actually merge rows
    return c


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):  # order aside: keys whose costs tie exactly may swap with the summation order
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in _diff(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) else [f"{path}: {a} != {b}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


AGGREGATES = ["namespace", "controller", "cluster", "label:app", "controllerKind", "deployment",
              "namespace,label:app", "label:app.kubernetes.io/name", "all"]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"share_idle": True},
    {"share_idle": True, "idle_split": "even", "share_scope": "cluster"},
    {"idle": False},
    {"split_idle": True},
    {"share_namespaces": ("kube-system",), "share_split": "even", "include_shared_cost_breakdown": True},
    {"share_labels": ("app:cache",), "share_cost": 1000.0, "share_idle": True},
    {"filter": 'namespace:"team-a","default"'},
    {"filter": 'label[app]:"web"|product~:"ca"'},
    {"filter": '(controllerKind:"deployment"+cluster!:"c1")|label:"app"', "share_idle": True},
    {"filter": 'controllerName<~:"ctl"', "step": "1d", "share_idle": True},
    {"window": "2024-03-02T00:00:00Z,2024-03-03T00:00:00Z", "share_idle": True},
    {"window": "2024-03-02T00:00:00Z,2024-03-09T00:00:00Z", "step": "2d"},
    {"cost_metric": "daily", "limit": 3, "offset": 1},
]


@pytest.mark.parametrize(("aggregate", "options"), list(itertools.product(AGGREGATES, OPTIONS)))
def test_rollup_answers_as_the_detail_table(con: duckdb.DuckDBPyConnection, aggregate: str,
                                            options: dict[str, Any]) -> None:
    kw = {"window": WINDOW, **options}
    q = AllocationQuery(aggregate=aggregate, **kw)
    assert _on_rollup(con, q) is not None, "this request should be answered from the rollup"
    rolled = answer_allocations(con, q, rollup=True)
    detail = answer_allocations(con, AllocationQuery(aggregate=aggregate, **kw), rollup=False)
    assert any(rolled.sets), "an empty answer proves nothing"
    assert rolled.warnings == detail.warnings
    diffs = _diff(rolled.sets, detail.sets)
    assert not diffs, diffs[:10]


@pytest.mark.parametrize("request_kw", [
    {"aggregate": "node"}, {"aggregate": "pod"}, {"aggregate": "namespace,container"}, {"aggregate": "service"},
    {"aggregate": "label:tier"}, {"aggregate": "label:app_kubernetes_io_name"}, {"aggregate": "annotation:team"}, {"aggregate": "namespace", "idle_by_node": True},
    {"aggregate": "namespace", "filter": 'node:"c0-n1"'}, {"aggregate": "namespace", "filter": 'services:"svc1"'},
    {"aggregate": "namespace", "filter": 'annotation[team]:"t1"'}, {"aggregate": "namespace", "filter": 'team:"x"'},
    {"aggregate": "namespace", "share_labels": ("tier:x",)}, {"aggregate": "namespace", "aggregated_metadata": True},
])
def test_requests_the_rollup_cannot_answer_read_the_detail_table(con: duckdb.DuckDBPyConnection,
                                                                 request_kw: dict[str, Any]) -> None:
    q = AllocationQuery(window=WINDOW, **request_kw)
    assert _on_rollup(con, q) is None
    assert any(answer_allocations(con, q).sets)


def test_the_smallest_rollup_that_can_answer_is_chosen(con: duckdb.DuckDBPyConnection) -> None:
    def table(**kw: Any) -> str | None:
        chosen = _on_rollup(con, AllocationQuery(window=WINDOW, **kw))
        return chosen[0] if chosen else None

    assert table(aggregate="namespace", share_idle=True) == "api.allocation_rollup_namespace"
    assert table(aggregate="cluster", filter='namespace:"team-a"') == "api.allocation_rollup_namespace"
    assert table(aggregate="label:app", share_idle=True) == "api.allocation_rollup_label"
    assert table(aggregate="namespace,label:app") == "api.allocation_rollup_controller"
    # shared rows are found by namespace: a label rollup without the namespace column must not answer
    assert table(aggregate="label:app", share_namespaces=("kube-system",)) == "api.allocation_rollup_controller"
    assert table(aggregate="label:app", include_shared_cost_breakdown=True) == "api.allocation_rollup_controller"
    assert table(aggregate="controller") == "api.allocation_rollup_controller"
    assert table(aggregate="pod") is None


def test_publish_builds_the_rollups_in_the_serving_copy(tmp_path: Path) -> None:
    working = tmp_path / "working.duckdb"
    c = duckdb.connect(str(working))
    create_allocation_table(c)
    insert_rows(c, _rows(random.Random(3)))
    c.close()
    serving = tmp_path / "serving.duckdb"
    publish_serving_copy(working, serving)
    with duckdb.connect(str(serving), read_only=True) as s:
        found = rollups(s)
        assert [t for t, _ in found] == ["api.allocation_rollup_namespace", "api.allocation_rollup_label",
                                         "api.allocation_rollup_controller"]
        assert found[-1][1].rollup == {"app": "label_0"}
        want = s.execute("SELECT sum(total_cost), count(*) FROM marts.fct_allocation_daily").fetchone()
        for table, _ in found:
            total = s.execute(f"SELECT sum(total_cost), sum(_rows) FROM {table}").fetchone()  # noqa: S608
            assert math.isclose(total[0], want[0], rel_tol=1e-12) and total[1] == want[1]
        q = AllocationQuery(window=WINDOW, aggregate="label:app", share_idle=True)
        assert _on_rollup(s, q) is not None
        assert not _diff(answer_allocations(s, q).sets, answer_allocations(s, q, rollup=False).sets)

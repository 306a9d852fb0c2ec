"""Allocation API end to end over a hand-built serving copy: OpenCost golden cases (METHOD A19), conservation
properties, a hostile-input fuzz, the CLI, and the macro's dbt-compatibility."""

from __future__ import annotations

import hashlib
import json
import random
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.serving.cli import run_allocation_cli
from pipelines.serving.query.allocation import AllocationQuery, query_allocations
from pipelines.settings import Settings, WarehouseSettings
from pipelines.warehouse.allocation_columns import allocation_columns
from pipelines.warehouse.allocation_rollup import build_rollup
from pipelines.warehouse.sharing_macros import MACRO_PATH, sharing_macros
from tests.fixtures.api_client import get_json, serve_api
from tests.fixtures.opencost_fixture import GOLDEN_DAY, build_warehouse, opencost_rows, random_rows

WINDOW = "2024-03-10T00:00:00Z,2024-03-11T00:00:00Z"
TOL = 1e-6


@pytest.fixture(scope="module", params=["detail", "rollup"])
def golden(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
           ) -> Iterator[tuple[str, Path, Settings]]:
    """The golden serving copy without and with the allocation rollups (published copies have them)."""
    path = tmp_path_factory.mktemp("serving") / "serving.duckdb"
    build_warehouse(path, opencost_rows(GOLDEN_DAY))
    if request.param == "rollup":
        with duckdb.connect(str(path)) as con:
            build_rollup(con, label_keys=("app", "env"))
    cfg = Settings(warehouse=WarehouseSettings(serving_path=str(path)))
    with serve_api(path) as base:
        yield base, path, cfg


def get(base: str, route: str, **params: Any) -> tuple[int, Any]:
    return get_json(base, route, **params)


def totals(base: str, route: str = "/model/allocation", **params: Any) -> dict[str, float]:
    status, body = get(base, route, window=WINDOW, **params)
    assert status == 200, body
    assert body["code"] == 200 and body["status"] == "success" and len(body["data"]) == 1
    return {k: v["totalCost"] for k, v in body["data"][0].items()}


def assert_close(got: dict[str, float], want: dict[str, float]) -> None:
    assert set(got) == set(want), (got, want)
    for k, v in want.items():
        assert abs(got[k] - v) < TOL, (k, got[k], v)


def test_golden_1a_cluster(golden: tuple[str, Path, Settings]) -> None:
    assert_close(totals(golden[0], aggregate="cluster"), {"cluster1": 46, "cluster2": 36, "__idle__": 30})


def test_golden_1b_namespace(golden: tuple[str, Path, Settings]) -> None:
    assert_close(totals(golden[0], aggregate="namespace"),
                 {"namespace1": 28, "namespace2": 36, "namespace3": 18, "__idle__": 30})


def test_golden_2d_labels(golden: tuple[str, Path, Settings]) -> None:
    assert_close(totals(golden[0], aggregate="label:app,label:env"),
                 {"app1/env1": 16, "app2/env2": 12, "app2/__unallocated__": 12,
                  "__unallocated__/__unallocated__": 42, "__idle__": 30})


def test_golden_3a_share_idle_weighted(golden: tuple[str, Path, Settings]) -> None:
    got = totals(golden[0], aggregate="namespace", shareIdle="true")
    assert_close(got, {"namespace1": 42.6875, "namespace2": 46.3125, "namespace3": 23.0})
    assert abs(sum(got.values()) - 112) < TOL
    _, body = get(golden[0], "/model/allocation", window=WINDOW, aggregate="namespace", shareIdle="true")
    ns1 = body["data"][0]["namespace1"]
    assert abs(ns1["cpuCost"] - 5.5) < TOL and abs(ns1["ramCost"] - 25.1875) < TOL
    assert abs(ns1["cpuCostIdle"] - 2.5) < TOL and abs(ns1["ramCostIdle"] - 12.1875) < TOL


def test_golden_4a_share_namespace_even(golden: tuple[str, Path, Settings]) -> None:
    got = totals(golden[0], aggregate="namespace", shareNamespaces="namespace3", shareSplit="even")
    assert_close(got, {"namespace1": 37, "namespace2": 45, "__idle__": 30})


def test_golden_4b_share_namespace_weighted(golden: tuple[str, Path, Settings]) -> None:
    base = golden[0]
    _, body = get(base, "/model/allocation", window=WINDOW, aggregate="namespace", shareNamespaces="namespace3",
                  shareSplit="weighted", includeSharedCostBreakdown="true")
    data = body["data"][0]
    assert_close({k: v["totalCost"] for k, v in data.items()},
                 {"namespace1": 35.875, "namespace2": 46.125, "__idle__": 30})
    assert abs(data["namespace1"]["sharedCost"] - 7.875) < TOL
    assert abs(data["namespace2"]["sharedCost"] - 10.125) < TOL
    assert abs(data["namespace1"]["sharedCostBreakdown"]["namespace3"]["totalCost"] - 7.875) < TOL


def test_share_scope_cluster_pools_within_each_cluster(golden: tuple[str, Path, Settings]) -> None:
    """shareScope=cluster (the marts' rule): each cluster's shared namespaces go to that cluster's other namespaces
    only, weighted by their pre-share cost there; the default (all) pools over the whole answer, as OpenCost."""
    rows = [r for r in opencost_rows(GOLDEN_DAY) if r["allocation_kind"] == "workload"]
    want: dict[str, float] = {}
    for cluster in {r["cluster"] for r in rows}:
        mine = [r for r in rows if r["cluster"] == cluster]
        pool = sum(r["total_cost"] for r in mine if r["namespace"] == "namespace3")
        weights: dict[str, float] = {}
        for r in mine:
            if r["namespace"] != "namespace3":
                weights[r["namespace"]] = weights.get(r["namespace"], 0.0) + r["total_cost"]
        for ns, w in weights.items():
            want[ns] = want.get(ns, 0.0) + w + pool * w / sum(weights.values())
    want["__idle__"] = 30
    got = totals(golden[0], aggregate="namespace", shareNamespaces="namespace3", shareScope="cluster")
    assert_close(got, want)
    assert abs(want["namespace2"] - 54) < TOL  # cluster2's namespace3 all goes to cluster2's namespace2
    assert abs(totals(golden[0], aggregate="namespace", shareNamespaces="namespace3")["namespace2"] - 46.125) < TOL
    status, body = get(golden[0], "/model/allocation", window=WINDOW, shareScope="nodes")
    assert status == 400 and "shareScope" in body["message"]


def test_opencost_and_ack_shapes(golden: tuple[str, Path, Settings]) -> None:
    base = golden[0]
    assert_close(totals(base, "/allocation", aggregate="cluster"), {"cluster1": 46, "cluster2": 36})  # includeIdle=false
    assert_close(totals(base, "/allocation/compute", aggregate="cluster", includeIdle="true"),
                 {"cluster1": 46, "cluster2": 36, "__idle__": 30})
    status, body = get(base, "/v2/allocation", window=WINDOW, aggregate="namespace")
    assert status == 200
    ns1 = body["data"][0]["namespace1"]
    assert abs(ns1["cost"] - 28) < TOL and abs(ns1["costRatio"] - 28 / 112) < TOL and ns1["customCost"] == 0
    for f in ("cpuCoreRequestAverage", "cpuCoreUsageAverage", "ramByteRequestAverage", "ramByteUsageAverage",
              "energyKwh", "co2eOperationalG", "co2eEmbodiedG", "co2eTotalG"):
        assert f in ns1
    # Averages are time-weighted: three containers side by side request 3 cores on average (A14).
    assert abs(ns1["cpuCoreRequestAverage"] - 3.0) < TOL


def test_steps_csv_limit_and_errors(golden: tuple[str, Path, Settings]) -> None:
    base = golden[0]
    status, body = get(base, "/model/allocation", window=WINDOW, aggregate="namespace", limit="2", offset="1")
    assert status == 200 and list(body["data"][0]) == ["__idle__", "namespace1"]
    status, text = get(base, "/model/allocation", window=WINDOW, aggregate="cluster", format="csv")
    assert status == 200 and text.splitlines()[0].startswith("name,minutes") and len(text.splitlines()) == 4
    # a day that is not materialised is left out and named in the warning, never a 404
    status, body = get(base, "/model/allocation", window="2024-03-10T00:00:00Z,2024-03-12T00:00:00Z",
                       aggregate="cluster")
    assert status == 200 and "2024-03-11" in body["warning"], body
    assert_close({k: v["totalCost"] for k, v in body["data"][0].items()},
                 {"cluster1": 46, "cluster2": 36, "__idle__": 30})
    # a sub-day window has no complete day: empty set, and the warning says why
    status, body = get(base, "/model/allocation", window="15m")
    assert status == 200 and body["data"] == [{}] and "daily" in body["warning"], body
    status, body = get(base, "/model/allocation", window=WINDOW, step="12h")
    assert status == 400 and body == {"code": 400, "message": body["message"]} and "daily" in body["message"]
    status, body = get(base, "/model/allocation", window=WINDOW, shareSplit="fair")
    assert status == 400 and body["message"].startswith("shareSplit: fair is not allowed; ")
    status, body = get(base, "/nope")
    assert status == 404
    assert get(base, "/healthz")[0] == 200


def test_cli(golden: tuple[str, Path, Settings], capsys: pytest.CaptureFixture[str]) -> None:
    cfg = golden[2]
    assert run_allocation_cli(["--window", WINDOW, "--aggregate", "cluster", "--format", "json"], cfg) == 0
    data = json.loads(capsys.readouterr().out)["data"][0]
    assert abs(data["cluster1"]["totalCost"] - 46) < TOL
    assert run_allocation_cli(["--window", WINDOW, "--aggregate", "namespace"], cfg) == 0
    assert "namespace1" in capsys.readouterr().out
    assert run_allocation_cli(["--window", WINDOW, "--filter", 'namespace:"x'], cfg) == 2
    assert "filter: " in capsys.readouterr().err
    assert run_allocation_cli(["--window", WINDOW, "--idle", "maybe"], cfg) == 2


# --- conservation properties --------------------------------------------------------------------------------

_DAYS = [date(2024, 3, 1) + timedelta(days=i) for i in range(3)]
_WAREHOUSES: dict[int, tuple[duckdb.DuckDBPyConnection, float, float]] = {}


def _warehouse(seed: int) -> tuple[duckdb.DuckDBPyConnection, float, float]:
    if seed not in _WAREHOUSES:
        from tests.fixtures.opencost_fixture import create_allocation_table, insert_rows

        con = duckdb.connect()
        create_allocation_table(con)
        rows = random_rows(random.Random(seed), _DAYS)
        insert_rows(con, rows)
        if seed % 2:  # odd seeds answer from the allocation rollups where a request allows
            build_rollup(con, label_keys=("app",))
        _WAREHOUSES[seed] = (con, sum(r["total_cost"] or 0 for r in rows), sum(r["co2e_total_g"] or 0 for r in rows))
    return _WAREHOUSES[seed]


_KEYS = st.lists(st.sampled_from(["cluster", "node", "namespace", "controllerKind", "controller", "deployment",
                                  "service", "pod", "container", "label:app", "label:app_kubernetes_io_name",
                                  "annotation:team"]), min_size=0, max_size=3, unique=True)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 3), keys=_KEYS, share_idle=st.booleans(), idle_split=st.sampled_from(["weighted", "even"]),
       idle_by_node=st.booleans(), split_idle=st.booleans(), share_split=st.sampled_from(["weighted", "even"]),
       share_ns=st.sampled_from([(), ("kube-system",), ("kube-system", "team-b")]),
       share_labels=st.sampled_from([(), ("app:cache",)]), share_cost=st.sampled_from([0.0, 30.42, 1000.0]),
       step=st.sampled_from([None, "1d"]))
def test_conservation(seed: int, keys: list[str], share_idle: bool, idle_split: str, idle_by_node: bool,
                      split_idle: bool, share_split: str, share_ns: tuple[str, ...], share_labels: tuple[str, ...],
                      share_cost: float, step: str | None) -> None:
    con, total, co2e = _warehouse(seed)
    q = AllocationQuery(window="2024-03-01T00:00:00Z,2024-03-04T00:00:00Z", aggregate=",".join(keys),
                        share_idle=share_idle, idle_split=idle_split, idle_by_node=idle_by_node,
                        split_idle=split_idle, share_split=share_split, share_namespaces=share_ns,
                        share_labels=share_labels, share_cost=share_cost, step=step)
    sets = query_allocations(con, q)
    assert len(sets) == (3 if step else 1)
    got = sum(a["totalCost"] for s in sets for a in s.values())
    got_co2e = sum(a["co2eTotalG"] for s in sets for a in s.values())
    want = total + share_cost / 730 * 72
    assert abs(got - want) < 1e-6 * max(1.0, want)
    assert abs(got_co2e - co2e) < 1e-6 * max(1.0, co2e)
    assert "__filtered__" not in {k for s in sets for k in s}


# --- hostile input ------------------------------------------------------------------------------------------

_HOSTILE = ["'", '"', "\\", "'; DROP TABLE marts.fct_allocation_daily; --", "\" OR 1=1 --", "1; ATTACH 'x.db'",
            "$p0", "?", "%00", "\x00", "label[", "label[]", "label[a", "annotation[\"]", "((((", "))))", "(",
            "ü∂ƒ©˙∆˚¬", "😀", "\u202e", "a" * 5000, "x" * 70000, "namespace:", ":\"\"", "+", "|", ",,,", "-1",
            "1e309", "NaN", "inf", "null", "true", "[]", "{}", "cluster,", "label:", "label:\"x\"", "all,all",
            "7d offset", "1,2,3", "0d", "99999999999999999999d", "2024-02-30T00:00:00Z,2024-03-01T00:00:00Z",
            "lastweek'", "yesterday;--", " ", "\t\n", "%", "%%", "&", "=", "#", "/", "..", "../../etc/passwd"]
_VALID_FILTER_TEMPLATES = ['namespace:"{v}"', 'label[app]:"{v}"', 'pod~:"{v}"', 'services!:"{v}"',
                           'annotation[team]<~:"{v}"']


def _fuzz_cases(rng: random.Random) -> list[dict[str, str]]:
    cases: list[dict[str, str]] = []
    params = ["filter", "aggregate", "window", "step", "accumulate", "idle", "shareIdle", "offset", "limit",
              "shareSplit", "format", "shareLabels", "costMetric", "bogusParam"]
    for value in _HOSTILE:
        for p in params:
            case = {"window": WINDOW, p: value}
            cases.append(case)
    alphabet = list('abcdeilnmopstu[]()"\\,+|:!~<>  \'$?;-_0123456789') + ["namespace", "label", "pod", "ü"]
    while len(cases) < 1000:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        cases.append({"window": WINDOW, rng.choice(["filter", "aggregate", "window"]): text})
    quoted = [v.replace("\\", "\\\\").replace('"', '\\"') for v in _HOSTILE[:12] + ["ü∂ƒ", "😀", "a" * 300]]
    for i, v in enumerate(quoted):  # syntactically valid filters with hostile values: these reach the warehouse
        cases.append({"window": WINDOW, "filter": _VALID_FILTER_TEMPLATES[i % 5].format(v=v)})
    for v in _HOSTILE[:6]:
        cases.append({"window": WINDOW, "shareNamespaces": v, "aggregate": "namespace"})
    return cases


def _checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fuzz_never_500_and_never_writes(golden: tuple[str, Path, Settings]) -> None:
    base, path, _ = golden
    before = _checksum(path)
    cases = _fuzz_cases(random.Random(7))
    assert len(cases) >= 1000
    statuses: dict[int, int] = {}
    for case in cases:
        routes = ["/model/allocation", "/allocation", "/v2/allocation"]
        route = routes[len(statuses) % 3] if "shareNamespaces" not in case else "/model/allocation"
        try:
            status, body = get(base, route, **case)
        except urllib.error.URLError as err:  # the server must answer, whatever the input
            raise AssertionError(f"no answer for {case!r}: {err}") from err
        statuses[status] = statuses.get(status, 0) + 1
        assert status in (200, 400, 404), (case, status, body)
        if status != 200 or isinstance(body, dict):
            assert isinstance(body, dict) and body["code"] == status
            if status == 400:
                assert re.match(r"^[A-Za-z]+: ", body["message"]), body
    assert statuses.get(200, 0) >= 10 and statuses.get(400, 0) >= 800
    assert _checksum(path) == before
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM marts.fct_allocation_daily").fetchone() == (14,)
    finally:
        con.close()


# --- the macro renders outside dbt, and is dbt-shaped -------------------------------------------------------

def test_macro_file_is_plain_jinja_macros_only() -> None:
    text = MACRO_PATH.read_text()
    outside = re.sub(r"{%-?\s*macro\b.*?{%-?\s*endmacro\s*-?%}", "", text, flags=re.S)
    outside = re.sub(r"{#.*?#}", "", outside, flags=re.S)
    assert outside.strip() == "", outside[:200]
    for dbt_only in ("ref(", "source(", "config(", "adapter.", "var(", "exceptions.", "return("):
        assert dbt_only not in re.sub(r"{#.*?#}", "", text, flags=re.S)
    module = sharing_macros()  # plain Jinja, portable.sql's DuckDB forms standing in for the dispatch
    columns = [dict(c) for c in allocation_columns()]  # the row's list (dbt passes allocation_columns())
    sql = str(module.share_allocations("marts.fct_allocation_daily", key_expr="allocation_name",
                                       step_col="usage_date", options={"share_idle": True, "split_idle": "row",
                                                                       "shared_namespaces": ["kube-system"]},
                                       columns=columns))
    con = duckdb.connect()
    from tests.fixtures.opencost_fixture import create_allocation_table, insert_rows

    create_allocation_table(con)
    insert_rows(con, opencost_rows())
    total = con.execute(f"SELECT sum(total_cost), count(*) FROM ({sql})").fetchone()  # noqa: S608
    assert total is not None and abs(total[0] - 112) < TOL and total[1] == 12
    bad = str(module.share_allocations("marts.fct_allocation_daily", key_expr="allocation_name",
                                       options={"share_split": "fair"}, columns=columns))
    with pytest.raises(duckdb.Error, match="invalid options"):
        con.execute(bad).fetchall()


@pytest.mark.parametrize("options", [
    {}, {"share_idle": True}, {"share_idle": True, "idle_split": "even", "split_idle": True},
    {"share_scope": "cluster", "include_idle": False}, {"share_split": "even", "split_idle": "row"},
])
def test_macro_without_shared_rows_leaves_out_only_zeros(options: dict[str, Any]) -> None:
    """shared_rows=false (the engine, when no share rule) drops the shared pool's SQL: the answer is the same."""
    module = sharing_macros()
    columns = [dict(c) for c in allocation_columns()]
    from tests.fixtures.opencost_fixture import create_allocation_table, insert_rows

    con = duckdb.connect()
    create_allocation_table(con)
    insert_rows(con, opencost_rows() + random_rows(random.Random(17), [GOLDEN_DAY, GOLDEN_DAY + timedelta(days=1)]))
    answers = []
    for shared_rows in (True, False):
        sql = str(module.share_allocations("marts.fct_allocation_daily", key_expr="coalesce(namespace, '')",
                                           options={**options, "shared_rows": shared_rows}, columns=columns))
        assert ("_sa_pool" in sql) is shared_rows
        answers.append(con.execute(f"SELECT * FROM ({sql}) ORDER BY ALL").fetchall())  # noqa: S608
    assert answers[0] == answers[1] and answers[0]


def test_windows_relative_to_now(golden: tuple[str, Path, Settings]) -> None:
    con = duckdb.connect(str(golden[1]), read_only=True)
    try:
        sets = query_allocations(con, AllocationQuery(window="yesterday", aggregate="cluster",
                                                      now=datetime(2024, 3, 11, 9)))
        assert abs(sum(a["totalCost"] for a in sets[0].values()) - 112) < TOL
    finally:
        con.close()

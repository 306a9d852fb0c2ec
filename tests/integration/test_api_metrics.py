"""GET /metrics (Prometheus text format 0.0.4) end to end over the real API server on hand-built serving copies
(tests/fixtures/asset_fixture.py): every answer is parsed with prometheus_client's parser, and the values are
compared with sums computed from the marts of the copy."""

from __future__ import annotations

import math
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pipelines.serving.http.server import make_server
from pipelines.serving.routes.metrics import (
    DEFAULT_TOP,
    OTHER,
    SPECIAL_NAMESPACES,
    Family,
    attach_app,
    escape_label,
    format_value,
    render,
)
from pipelines.settings import Settings, WarehouseSettings
from pipelines.warehouse.publish import NAMESPACE_KEY_SQL, api_snapshot_dir
from tests.fixtures.api_client import serve_api
from tests.fixtures.asset_fixture import DAYS, build_asset_warehouse
from tests.fixtures.opencost_fixture import insert_rows, workload_row

TOL = 1e-9
LAST, LAGGING = DAYS[-1], DAYS[-2]  # cluster2 lags a day in the `warehouse` fixture
NAMESPACE_FAMILIES = {"kubeledger_cost_usd": "total_cost", "kubeledger_energy_kwh": "energy_kwh",
                      "kubeledger_co2e_grams": "co2e_total_g"}
CLUSTER_FAMILIES = {"kubeledger_cluster_cost_usd": "total_cost", "kubeledger_cluster_energy_kwh": "energy_kwh",
                    "kubeledger_cluster_co2e_grams": "co2e_total_g", "kubeledger_idle_share": "idle_percentage",
                    "kubeledger_co2e_estimated_share": "co2e_estimated_share",
                    "kubeledger_cost_estimated_share": "cost_estimated_share",
                    "kubeledger_hour_coverage": "hour_coverage", "kubeledger_idle_clamped": "idle_clamped"}
API_COUNTERS = ("kubeledger_api_requests_served", "kubeledger_api_requests_rejected", "kubeledger_api_query_timeouts",
                "kubeledger_api_client_disconnects", "kubeledger_api_cache_hits", "kubeledger_api_cache_misses")
API_GAUGES = ("kubeledger_api_queries_running", "kubeledger_api_queries_queued", "kubeledger_api_max_running",
              "kubeledger_api_max_queued")
WEIRD = 'we"ird\\ns\nline \\n ü'


# -- helpers ------------------------------------------------------------------------------------------------------


def build(path: Path, extra_namespaces: int = 0, weird: bool = False) -> Path:
    """The asset fixture, with energy/CO2e on every allocation row, cluster2 one day behind (its newest day removed
    from fct_allocation_daily), distinct cluster rows, and optionally many namespaces or an odd namespace name on
    cluster1's newest day."""
    build_asset_warehouse(path)
    con = duckdb.connect(str(path))
    try:
        rows = [workload_row(LAST, "cluster1", "c1nodes", f"ns-{i:02d}", f"pod-{i}", "c", cpu=float(i + 1))
                for i in range(extra_namespaces)]
        if weird:
            rows.append(workload_row(LAST, "cluster1", "c1nodes", WEIRD, "pod-weird", "c", cpu=3.25))
        if rows:
            insert_rows(con, rows)
        con.execute("UPDATE marts.fct_allocation_daily SET energy_kwh = total_cost / 8, "
                    "co2e_total_g = total_cost * 30 + 0.5")
        con.execute("DELETE FROM marts.fct_allocation_daily WHERE cluster = 'cluster2' AND usage_date = ?", [LAST])
        con.execute("UPDATE marts.fct_cluster_daily SET energy_kwh = total_cost / 10, co2e_total_g = total_cost * 7, "
                    "hour_coverage = 0.75, idle_clamped = true, idle_percentage = 0.125 "
                    "WHERE cluster = 'cluster2'")
        con.execute("UPDATE marts.fct_cluster_daily SET cost_estimated_share = 0.25 + 0.01 * day(usage_date)")
    finally:
        con.close()
    return path


def newest_days(path: Path) -> dict[str, date]:
    with duckdb.connect(str(path), read_only=True) as con:
        return dict(con.execute("SELECT cluster, max(usage_date) FROM marts.fct_allocation_daily GROUP BY 1"
                                ).fetchall())


def namespace_sums(path: Path, column: str) -> dict[tuple[str, str], float]:
    """(cluster, namespace key) → Σ column on the cluster's newest day, straight from the mart."""
    days = newest_days(path)
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(f"SELECT cluster, usage_date, {NAMESPACE_KEY_SQL}, sum({column}) "  # noqa: S608
                           "FROM marts.fct_allocation_daily GROUP BY ALL").fetchall()
    return {(c, ns): v for c, d, ns, v in rows if days[c] == d}


def cluster_values(path: Path, column: str) -> dict[str, float | None]:
    days = newest_days(path)
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(f"SELECT cluster, usage_date, CAST({column} AS DOUBLE) "  # noqa: S608
                           "FROM marts.fct_cluster_daily").fetchall()
    return {c: v for c, d, v in rows if days.get(c) == d}


@contextmanager
def serve_attached(serving_path: Path) -> Iterator[Any]:
    """Like serve_api, with the app attached to its /metrics route (the API counters); yields the server."""
    server = make_server(Settings(warehouse=WarehouseSettings(serving_path=str(serving_path))), "127.0.0.1", 0)
    attach_app(server.app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def base_of(server: Any) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def scrape(base: str, **params: Any) -> tuple[int, dict[str, str], str]:
    url = f"{base}/metrics" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - local test server
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read().decode()


def parse(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """family name (counters without _total) → {sorted label pairs: value}; a duplicate series fails."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        assert fam.name not in out, f"family {fam.name} given twice"
        series = out.setdefault(fam.name, {})
        for s in fam.samples:
            key = tuple(sorted(s.labels.items()))
            assert key not in series, f"{fam.name}{dict(key)} given twice"
            series[key] = s.value
    return out


def metrics(base: str, **params: Any) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    status, headers, body = scrape(base, **params)
    assert status == 200, body
    ctype = headers["content-type"]
    assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, ctype
    assert "x-kubeledger-cache" not in headers
    return parse(body)


def by_labels(series: dict[tuple[tuple[str, str], ...], float], *names: str) -> dict[Any, float]:
    out = {}
    for key, value in series.items():
        labels = dict(key)
        out[tuple(labels[n] for n in names) if len(names) > 1 else labels[names[0]]] = value
    return out


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


# -- fixtures -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("metrics") / "serving.duckdb")


@pytest.fixture(scope="module")
def api(warehouse: Path) -> Iterator[str]:
    with serve_api(warehouse) as base:
        yield base


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cluster1's newest day has 60 more namespaces than the fixture's, and an odd name: over the default bound."""
    return build(tmp_path_factory.mktemp("metrics-wide") / "serving.duckdb", extra_namespaces=60, weird=True)


# -- the format ---------------------------------------------------------------------------------------------------


def test_label_values_and_numbers_round_trip_through_the_parser() -> None:
    odd = ['a"b', "back\\slash", "new\nline", "literal \\n", 'all "\\\n', "ünïcødé ✓", "", "{}=,"]
    fam = Family("kubeledger_test", "gauge", 'help with \\ and\nnewline and "quotes"')
    for i, value in enumerate(odd):
        fam.add(i + 0.5, cluster="c", namespace=value)
    fam.add(float("nan"), cluster="c", namespace="nan")
    fam.add(float("inf"), cluster="c", namespace="inf")
    fam.add(None, cluster="c", namespace="null")  # a NULL is no sample
    counter = Family("kubeledger_test_things", "counter", "a counter")
    counter.add(3)
    parsed = list(text_string_to_metric_families(render([fam, counter])))
    assert [f.name for f in parsed] == ["kubeledger_test", "kubeledger_test_things"]
    assert parsed[0].documentation == 'help with \\ and\nnewline and "quotes"'
    got = {s.labels["namespace"]: s.value for s in parsed[0].samples}
    assert {k: v for k, v in got.items() if k not in ("nan", "inf")} == {v: i + 0.5 for i, v in enumerate(odd)}
    assert math.isnan(got["nan"]) and got["inf"] == float("inf") and "null" not in got
    assert parsed[1].type == "counter" and parsed[1].samples[0].name == "kubeledger_test_things_total"
    assert escape_label('x"\\\n') == 'x\\"\\\\\\n'
    assert [format_value(v) for v in (1.0, 0.1, -2.5, 1e20, float("-inf"))] == ["1", "0.1", "-2.5", "1e+20", "-Inf"]


# -- the marts ----------------------------------------------------------------------------------------------------


def test_families_and_values_equal_the_marts(warehouse: Path, api: str) -> None:
    m = metrics(api)
    assert m["kubeledger_serving_up"] == {(): 1.0}
    age = m["kubeledger_last_publish_age_seconds"][()]
    assert 0 <= age <= time.time() - warehouse.stat().st_mtime + 5
    days = newest_days(warehouse)
    assert days == {"cluster1": LAST, "cluster2": LAGGING}  # each cluster's own newest day
    assert by_labels(m["kubeledger_last_published_day_timestamp_seconds"], "cluster") == {
        c: datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() for c, d in days.items()}
    for family, column in NAMESPACE_FAMILIES.items():
        expected = namespace_sums(warehouse, column)
        got = by_labels(m[family], "cluster", "namespace")
        assert got.keys() == expected.keys(), family
        assert all(close(got[k], expected[k]) for k in expected), (family, got, expected)
        assert any(v > 0 for v in got.values())
    assert ("cluster1", "__idle__") in by_labels(m["kubeledger_cost_usd"], "cluster", "namespace")
    assert OTHER not in {ns for _c, ns in by_labels(m["kubeledger_cost_usd"], "cluster", "namespace")}
    assert by_labels(m["kubeledger_namespaces"], "cluster") == {"cluster1": 2, "cluster2": 2}
    for family, column in CLUSTER_FAMILIES.items():
        expected = {c: v for c, v in cluster_values(warehouse, column).items() if v is not None}
        got = by_labels(m[family], "cluster")
        assert got.keys() == expected.keys() and all(close(got[c], expected[c]) for c in expected), family
    # the fixture leaves cluster1's energy and CO2e NULL in fct_cluster_daily: no sample rather than a 0
    assert "cluster1" not in by_labels(m["kubeledger_cluster_energy_kwh"], "cluster")
    assert by_labels(m["kubeledger_idle_clamped"], "cluster") == {"cluster1": 0, "cluster2": 1}
    assert by_labels(m["kubeledger_hour_coverage"], "cluster") == {"cluster1": 1, "cluster2": 0.75}
    # cluster2 is read on its own newest day (LAGGING), not the fleet's
    assert close(by_labels(m["kubeledger_cost_estimated_share"], "cluster")["cluster2"], 0.25 + 0.01 * LAGGING.day)


def test_cardinality_is_bounded_and_sums_are_conserved(wide: Path) -> None:
    with serve_api(wide) as base:
        default, five, none = metrics(base), metrics(base, top=5), metrics(base, top=0)
    costs = namespace_sums(wide, "total_cost")
    c1_regular = sorted(((v, ns) for (c, ns), v in costs.items() if c == "cluster1" and ns not in SPECIAL_NAMESPACES),
                        key=lambda t: (-t[0], t[1]))
    assert len(c1_regular) == 63  # namespace1, namespace2, 60 ns-NN and the odd one
    for top, m in ((DEFAULT_TOP, default), (5, five), (0, none)):
        assert by_labels(m["kubeledger_namespaces"], "cluster")["cluster1"] == 63
        for family, column in NAMESPACE_FAMILIES.items():
            expected = namespace_sums(wide, column)
            got = by_labels(m[family], "cluster", "namespace")
            c1 = {ns: v for (c, ns), v in got.items() if c == "cluster1"}
            regular = set(c1) - {OTHER, *SPECIAL_NAMESPACES}
            assert regular == {ns for _v, ns in c1_regular[:top]}, (family, top)  # the top N by cost
            assert OTHER in c1 and len(c1) <= top + 1 + len(SPECIAL_NAMESPACES)
            folded = sum(v for (c, ns), v in expected.items()
                         if c == "cluster1" and ns not in regular and ns not in SPECIAL_NAMESPACES)
            assert close(c1[OTHER], folded), (family, top)
            total = sum(v for (c, _ns), v in expected.items() if c == "cluster1")
            assert close(sum(c1.values()), total), (family, top)  # nothing lost, nothing counted twice
            assert close(c1["__idle__"], expected[("cluster1", "__idle__")])
            # cluster2 has 2 namespaces, under every bound but 0
            c2 = {ns for (c, ns), _v in got.items() if c == "cluster2"}
            assert (OTHER in c2) == (top < 2)
    assert len(default["kubeledger_cost_usd"]) <= 2 * (DEFAULT_TOP + 1 + len(SPECIAL_NAMESPACES))


def test_namespace_names_are_escaped(wide: Path) -> None:
    with serve_api(wide) as base:
        status, _headers, body = scrape(base, top=200)
    assert status == 200
    assert 'namespace="we\\"ird\\\\ns\\nline \\\\n ü"' in body  # the escaped form on the wire
    got = by_labels(parse(body)["kubeledger_cost_usd"], "cluster", "namespace")
    assert close(got[("cluster1", WEIRD)], namespace_sums(wide, "total_cost")[("cluster1", WEIRD)])


# -- the server ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attached", [False, True])
def test_no_serving_copy_answers_serving_up_0(tmp_path: Path, attached: bool) -> None:
    missing = tmp_path / "serving.duckdb"
    ctx = serve_attached(missing) if attached else serve_api(missing)
    with ctx as handle:
        base = base_of(handle) if attached else handle
        m = metrics(base)
    assert m["kubeledger_serving_up"] == {(): 0.0}
    assert "kubeledger_last_publish_age_seconds" not in m and "kubeledger_cost_usd" not in m
    assert "kubeledger_api_requests_served" in m  # make_app always attaches the counters


def test_api_counters_and_never_cached(warehouse: Path) -> None:
    with serve_attached(warehouse) as server:
        base = base_of(server)
        for _ in range(2):  # a miss, then a hit of the answer cache
            with urllib.request.urlopen(f"{base}/clusterInfo", timeout=60) as resp:  # noqa: S310
                assert resp.status == 200
        first = metrics(base)
        second = metrics(base)
        assert server.app.cache.hits >= 1
    for name in API_COUNTERS + API_GAUGES:
        assert () in first[name], name
    assert first["kubeledger_api_requests_served"][()] >= 2
    assert first["kubeledger_api_cache_hits"][()] >= 1 and first["kubeledger_api_cache_misses"][()] >= 1
    assert first["kubeledger_api_queries_running"][()] == 0  # a scrape takes no query slot (it is a probe)
    assert first["kubeledger_api_max_running"][()] == server.limits.max_running
    assert first["kubeledger_api_max_queued"][()] == server.limits.max_queued
    # the scrape is not served from the answer cache: the counters move between two scrapes
    assert second["kubeledger_api_requests_served"][()] > first["kubeledger_api_requests_served"][()]
    assert second["kubeledger_cost_usd"] == first["kubeledger_cost_usd"]


def test_a_new_publish_is_scraped(tmp_path: Path) -> None:
    serving = build(tmp_path / "serving.duckdb")
    with serve_attached(serving) as server:
        base = base_of(server)
        before = by_labels(metrics(base)["kubeledger_last_published_day_timestamp_seconds"], "cluster")
        nxt = tmp_path / "next.duckdb"
        build_asset_warehouse(nxt, days=(*DAYS, date(2024, 3, 14)))
        folder = api_snapshot_dir(serving)  # what a publish does: a new API snapshot, moved in whole
        folder.mkdir()
        os.replace(nxt, folder / "serving-20990101T000000000000000-0badcafe.duckdb")
        deadline, after = time.monotonic() + 20, before
        while after == before and time.monotonic() < deadline:
            time.sleep(0.3)
            after = by_labels(metrics(base)["kubeledger_last_published_day_timestamp_seconds"], "cluster")
    midnight = datetime(2024, 3, 14, tzinfo=UTC).timestamp()
    assert after == {"cluster1": midnight, "cluster2": midnight}, (before, after)


@pytest.mark.parametrize(("params", "param"), [({"top": "abc"}, "top"), ({"top": "-1"}, "top"),
                                               ({"top": "1001"}, "top"), ({"top": "5.0"}, "top"),
                                               ({"window": "1d"}, "window")])
def test_bad_parameters_are_400(api: str, params: dict[str, str], param: str) -> None:
    status, headers, body = scrape(api, **params)
    assert status == 400 and "json" in headers["content-type"]
    assert body.startswith('{"code": 400') and f'"message": "{param}:' in body

"""Issue 11: two clusters scraped into one Prometheus, told apart by a `cluster` label, through the real pipeline.

`kubeledger materialize --date DAY` (both clusters, one run) against the session's backfilled Prometheus
(tests/integration/conftest.py; the clusters fleet-east and fleet-west are built in tests/fixtures/prom_fleet.py):
same namespaces, pod names, node names and pod IPs in both, different pod uids and requests; default sharing
(`sharing.shared_namespaces: [kube-system]`, no overhead); an EKS spot node labelled only through kube-state-metrics
(sanitised `label_eks_amazonaws_com_capacityType="SPOT"`) priced from a user instance sheet with a spot column (the
shipped seeds/instance_prices.csv has no spot prices); a LoadBalancer mapped to its pods by `kube_endpoint_address`.

Expected values come from the scenario's inputs and the price seeds/sheet, never from a run. Money, energy and
CO2e: 1e-9 relative. Allocation = requests exactly (usage stays below them), so no rate() tolerance is needed.
"""

from __future__ import annotations

import math
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.warehouse.publish import PARQUET_MARTS
from tests.fixtures.pipeline_workdir import MART_TABLES, cli_args, cli_env, fingerprint
from tests.fixtures.prom_fleet import (
    EAST,
    LB_NAMESPACE,
    LB_SERVICE,
    SHARED_NAMESPACE,
    SPOT_NODE,
    WEST,
    load_balancer_price,
    load_balancer_split,
    shipped_instance_price,
    unit_prices,
    write_price_sheet,
)
from tests.fixtures.prom_scenario import DAY, GIB, SCRAPE_S

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.slow]

CLUSTERS = (EAST, WEST)
USAGE_DATE: date = DAY.date()
OVERHEAD_MONTHLY_USD = 0.0  # sharing.monthly_overhead_usd in the test's kubeledger.yaml
REL = 1e-9


@dataclass
class Fleet:
    workdir: Path
    proc: subprocess.CompletedProcess
    prices: dict[str, float]            # the user sheet's m5.large: on_demand, spot
    exp: dict[str, dict[str, Any]]      # cluster -> prom_scenario.expected(...) + "spec"

    @property
    def warehouse(self) -> Path:
        return self.workdir / "wh" / "w.duckdb"

    @property
    def serving(self) -> Path:
        return self.workdir / "wh" / "s.duckdb"

    def q(self, sql: str, params: list | None = None, path: Path | None = None) -> list[tuple]:
        con = duckdb.connect(str(path or self.warehouse), read_only=True)
        try:
            return con.execute(sql, params or []).fetchall()
        finally:
            con.close()


@pytest.fixture(scope="module")
def fleet(prometheus_scenario: Any, tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    """One `kubeledger materialize` of DAY for both clusters. The exit code is asserted by its own test, so the
    other tests still read the working warehouse (and name the failing numbers) when a blocking check fails."""
    wd = tmp_path_factory.mktemp("prom-fleet")
    prices = write_price_sheet(wd / "prices.csv")
    clusters = "".join(
        f"""
  - name: {c}
    source: prometheus
    prometheus: {{url: "{prometheus_scenario.url}", cluster_label: cluster, cluster_label_value: {c},
                  scrape_interval_s: {SCRAPE_S}, retries: 1, timeout_s: 60}}""" for c in CLUSTERS)
    (wd / "kubeledger.yaml").write_text(f"""
warehouse: {{path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}}
clusters:{clusters}
carbon: {{provider: none}}
schedule: {{start_date: "2025-01-01"}}  # the scenario's day is older than the default first day
pricing: {{instance_sheet: prices.csv}}
sharing: {{shared_namespaces: [{SHARED_NAMESPACE}], monthly_overhead_usd: {OVERHEAD_MONTHLY_USD}}}
""")
    proc = subprocess.run(cli_args(wd, "materialize", "--date", USAGE_DATE.isoformat()), cwd=wd, env=cli_env(),
                          capture_output=True, text=True, timeout=1200)
    return Fleet(wd, proc, prices, {c: prometheus_scenario.expected[c] for c in CLUSTERS})


def _tail(proc: subprocess.CompletedProcess) -> str:
    """The exit code, the lines naming what failed, then the end of the output."""
    out = proc.stdout + proc.stderr
    failed = [ln.strip() for ln in out.splitlines() if "Failure in" in ln or " FAIL " in ln or ln.startswith("kubeledger:")]
    return "\n".join([f"exit {proc.returncode}", *dict.fromkeys(failed), "--- output tail ---", out[-3000:]])


def _close(got: float | None, want: float) -> bool:
    return got is not None and math.isclose(got, want, rel_tol=REL, abs_tol=1e-12)


def _node_price(fleet: Fleet, cluster: str, node: str) -> tuple[float, bool]:
    """(instance USD/h, is spot) of a node from the inputs: n0 m5.xlarge from the shipped sheet; n1 m5.large from
    the user sheet, at the spot price only for east's SPOT-labelled n1."""
    _first, _pid, itype, _zone, _cpu, _mem = fleet.exp[cluster]["spec"].nodes[node]
    spot = cluster == EAST and node == SPOT_NODE
    if itype == "m5.large":
        return (fleet.prices["spot"] if spot else fleet.prices["on_demand"]), spot
    return shipped_instance_price("aws", "us-east-1", itype)[0], spot


def _expected_containers(fleet: Fleet, cluster: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """{(namespace, pod, container): uid, node, minutes, core/byte-hours and costs for the day} from the inputs."""
    exp, spec = fleet.exp[cluster], fleet.exp[cluster]["spec"]
    run_h: dict[tuple[str, str], float] = defaultdict(float)
    for (_h, uid, name), row in exp["containers"].items():
        run_h[(uid, name)] += row["running_minutes"] / 60.0
    out = {}
    for p in spec.pods:
        _first, _pid, _itype, _zone, vcpus, ram = spec.nodes[p.node]
        price, _spot = _node_price(fleet, cluster, p.node)
        cpu_price, ram_price = unit_prices(price, vcpus, ram)
        for c in p.containers:
            hours = run_h[(p.uid, c.name)]
            core_h, byte_h = c.cpu_request * hours, c.mem_request * hours
            out[(p.namespace, p.name, c.name)] = {
                "uid": p.uid, "node": p.node, "minutes": hours * 60.0, "cpu_core_hours": core_h,
                "ram_byte_hours": byte_h, "cpu_cost": core_h * cpu_price, "ram_cost": byte_h / GIB * ram_price}
    return out


def _workload_rows(fleet: Fleet, table: str = "fct_allocation_daily") -> dict[tuple, dict[str, Any]]:
    cols = ("cluster", "namespace", "pod", "container", "pod_uid", "node", "minutes", "cpu_core_hours",
            "ram_byte_hours", "cpu_cost", "ram_cost", "load_balancer_cost", "shared_cost", "total_cost")
    rows = fleet.q(f"select {', '.join(cols)} from marts.{table} "  # noqa: S608 - fixed names
                   "where usage_date = ? and allocation_kind = 'workload'", [USAGE_DATE])
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        d = dict(zip(cols, r, strict=True))
        key = (d["cluster"], d["namespace"], d["pod"], d["container"])
        assert key not in out, f"two {table} rows for {key}"
        out[key] = d
    return out


def test_materialize_exits_0_and_publishes_both_clusters(fleet: Fleet) -> None:
    assert fleet.proc.returncode == 0, _tail(fleet.proc)
    assert fleet.serving.exists()
    serving = duckdb.connect(str(fleet.serving), read_only=True)
    working = duckdb.connect(str(fleet.warehouse), read_only=True)
    try:
        for table in MART_TABLES:
            clusters = {r[0] for r in serving.execute(
                f"select distinct cluster from marts.{table} where usage_date = ?", [USAGE_DATE]).fetchall()}  # noqa: S608
            assert clusters == set(CLUSTERS), table
        assert fingerprint(serving, USAGE_DATE) == fingerprint(working, USAGE_DATE)
        coverage = dict(serving.execute("select cluster, hour_coverage from marts.fct_cluster_daily "
                                        "where usage_date = ?", [USAGE_DATE]).fetchall())
        assert coverage == {EAST: 1.0, WEST: 1.0}
        # a file per cluster and day that has rows (the outcomes of an empty decision ledger have none)
        filled = {(t, r[0]) for t in PARQUET_MARTS for r in serving.execute(
            f"select distinct cluster from marts.{t} where usage_date = ?", [USAGE_DATE]).fetchall()}  # noqa: S608
    finally:
        serving.close()
        working.close()
    assert {(t, c) for t in MART_TABLES for c in CLUSTERS} <= filled
    for table, c in sorted(filled):
        if c in CLUSTERS:
            assert (fleet.workdir / "wh" / "parquet" / table / f"cluster={c}" / f"date={USAGE_DATE}"
                    / "data.parquet").exists(), (table, c)


def test_sharing_conserves_cost_energy_and_co2e_per_cluster_day(fleet: Fleet) -> None:
    totals = "select cluster, sum(total_cost), sum(energy_kwh), sum(co2e_total_g) from marts.{} " \
             "where usage_date = ? group by cluster"
    before = {r[0]: r[1:] for r in fleet.q(totals.format("fct_allocation_daily"), [USAGE_DATE])}
    after = {r[0]: r[1:] for r in fleet.q(totals.format("fct_allocation_shared_daily"), [USAGE_DATE])}
    assert set(before) == set(CLUSTERS)
    overhead = OVERHEAD_MONTHLY_USD / 730.0 * 24
    problems = []
    for c in CLUSTERS:
        want = (before[c][0] + overhead, before[c][1], before[c][2])
        got = after.get(c, (None, None, None))
        for name, g, w in zip(("total_cost", "energy_kwh", "co2e_total_g"), got, want, strict=True):
            if not _close(g, w):
                problems.append(f"{c} {name}: shared {g!r} != unshared {w!r}")
    assert not problems, "\n".join(problems)


def test_kube_system_is_shared_only_within_its_own_cluster(fleet: Fleet) -> None:
    """Σ shared_cost a cluster's rows receive = that cluster's kube-system total_cost before sharing (share_idle
    off: the shared rows receive nothing first), and each row's share = pool x its pre-share total_cost / Σ of its
    own cluster's non-shared workload rows ('weighted' split)."""
    unshared = _workload_rows(fleet)
    shared = _workload_rows(fleet, "fct_allocation_shared_daily")
    pool = {c: sum(r["total_cost"] for k, r in unshared.items() if k[0] == c and k[1] == SHARED_NAMESPACE)
            for c in CLUSTERS}
    weight = {c: sum(r["total_cost"] for k, r in unshared.items() if k[0] == c and k[1] != SHARED_NAMESPACE)
              for c in CLUSTERS}
    assert pool[EAST] > 0 and pool[WEST] > 0 and not _close(pool[EAST], pool[WEST])
    received = dict(fleet.q("select cluster, sum(shared_cost) from marts.fct_allocation_shared_daily "
                            "where usage_date = ? group by cluster", [USAGE_DATE]))
    problems = [f"{c}: rows received {received.get(c)!r}, own kube-system cost {pool[c]!r}"
                for c in CLUSTERS if not _close(received.get(c), pool[c])]
    for key, row in unshared.items():
        c, ns = key[0], key[1]
        if ns == SHARED_NAMESPACE:
            continue
        want = pool[c] * row["total_cost"] / weight[c]
        got = shared.get(key, {}).get("shared_cost")
        if not _close(got, want):
            problems.append(f"{key}: shared_cost {got!r}, expected {want!r} (own cluster's pool and weights)")
    assert not problems, "\n".join(problems)


def test_same_named_pods_get_their_own_clusters_rows(fleet: Fleet) -> None:
    """One row per cluster for every (namespace, pod, container), with that cluster's uid, node, minutes,
    core/byte-hours and, on on-demand nodes, costs at that cluster's node prices (east's spot node: next test)."""
    rows = _workload_rows(fleet)
    expected = {(c, *k): v for c in CLUSTERS for k, v in _expected_containers(fleet, c).items()}
    assert set(rows) == set(expected)
    problems = []
    for key, want in expected.items():
        got = rows[key]
        if (got["pod_uid"], got["node"]) != (want["uid"], want["node"]):
            problems.append(f"{key}: uid/node {got['pod_uid']}/{got['node']}, expected {want['uid']}/{want['node']}")
        checked = ["minutes", "cpu_core_hours", "ram_byte_hours"]
        if not (key[0] == EAST and want["node"] == SPOT_NODE):
            checked += ["cpu_cost", "ram_cost"]
        problems += [f"{key} {col}: {got[col]!r} != {want[col]!r}" for col in checked if not _close(got[col], want[col])]
    assert not problems, "\n".join(problems)
    web_east, web_west = rows[(EAST, "team-a", "web-1", "app")], rows[(WEST, "team-a", "web-1", "app")]
    assert web_east["pod_uid"] != web_west["pod_uid"]
    assert web_west["cpu_core_hours"] == pytest.approx(2 * web_east["cpu_core_hours"], rel=REL)


def test_spot_node_is_priced_at_the_sheet_spot_price(fleet: Fleet) -> None:
    """East n1 is spot only through KSM's sanitised label: fct_asset_daily says is_spot, its hourly price is the
    sheet's spot price and its cost spot x hours (never on-demand x hours); the containers on it are charged at
    the spot node's unit prices. Every other node is on-demand at its sheet price."""
    assets = {(r[0], r[1]): r[2:] for r in fleet.q(
        "select cluster, asset_name, is_spot, hourly_price_usd, price_source, cpu_cost + ram_cost, hours "
        "from marts.fct_asset_daily where usage_date = ? and asset_kind = 'node'", [USAGE_DATE])}
    hours: dict[tuple[str, str], float] = defaultdict(float)
    for c in CLUSTERS:
        for (_h, node), e in fleet.exp[c]["nodes"].items():
            hours[(c, node)] += e["running_minutes"] / 60.0
    assert set(assets) == set(hours)
    assert fleet.prices["spot"] < fleet.prices["on_demand"]
    problems = []
    for key, (is_spot, hourly, source, cost, got_hours) in sorted(assets.items()):
        price, spot = _node_price(fleet, *key)
        if (is_spot, source) != (spot, "sheet"):
            problems.append(f"{key}: is_spot={is_spot} price_source={source}, expected is_spot={spot} sheet")
        if not _close(got_hours, hours[key]):
            problems.append(f"{key}: hours {got_hours!r} != {hours[key]!r}")
        if not _close(hourly, price) or not _close(cost, price * hours[key]):
            problems.append(f"{key}: hourly price {hourly!r}, cost {cost!r}; expected {price!r}/h, "
                            f"{price * hours[key]!r}" + (f" (on-demand would be {fleet.prices['on_demand']!r}/h)"
                                                        if spot else ""))
    rows = _workload_rows(fleet)
    for (ns, pod, cont), want in _expected_containers(fleet, EAST).items():
        if want["node"] != SPOT_NODE:
            continue
        got = rows.get((EAST, ns, pod, cont), {})
        problems += [f"{EAST}/{ns}/{pod}/{cont} on spot {SPOT_NODE} {col}: {got.get(col)!r} != {want[col]!r}"
                     for col in ("cpu_cost", "ram_cost") if not _close(got.get(col), want[col])]
    assert not problems, "\n".join(problems)


def test_load_balancer_cost_is_split_over_its_pods(fleet: Fleet) -> None:
    """East's team-a/web-lb costs the LB price x the hours its service series has samples, split per hour over
    web-1 and web-2 (the pods behind its endpoint IPs) by their running hours; nothing goes to `__unmounted__`.
    West's same-named ClusterIP service and every other pod cost nothing."""
    price = load_balancer_price("aws")  # the nodes' provider id is aws://
    split = load_balancer_split(fleet.exp[EAST]["spec"], fleet.exp[EAST], price)
    uids = {p.uid: p.name for p in fleet.exp[EAST]["spec"].pods}
    want_pods = {uids[uid]: v for (_ns, _svc, uid), v in split.items()}
    assert set(want_pods) == {"web-1", "web-2"} and want_pods["web-2"] < want_pods["web-1"]
    lb_total = sum(want_pods.values())

    per_pod: dict[tuple[str, str, str], float] = defaultdict(float)
    for (c, ns, pod, _cont), r in _workload_rows(fleet).items():
        per_pod[(c, ns, pod)] += r["load_balancer_cost"] or 0.0
    problems = []
    for (c, ns, pod), got in sorted(per_pod.items()):
        want = want_pods.get(pod, 0.0) if (c, ns) == (EAST, LB_NAMESPACE) else 0.0
        if not _close(got, want):
            problems.append(f"{c}/{ns}/{pod}: load_balancer_cost {got!r}, expected {want!r}")
    unmounted = fleet.q("select cluster, namespace, load_balancer_cost from marts.fct_allocation_daily "
                        "where usage_date = ? and allocation_kind = 'unmounted' and load_balancer_cost <> 0",
                        [USAGE_DATE])
    if unmounted:
        problems.append(f"LoadBalancer cost on __unmounted__ rows: {unmounted}")
    assets = fleet.q("select cluster, asset_name, load_balancer_cost from marts.fct_asset_daily "
                     "where usage_date = ? and asset_kind = 'load_balancer'", [USAGE_DATE])
    if [(c, n) for c, n, _ in assets] != [(EAST, f"{LB_NAMESPACE}/{LB_SERVICE}")] \
            or not _close(assets[0][2], lb_total):
        problems.append(f"load balancer assets {assets}, expected only {EAST} {LB_NAMESPACE}/{LB_SERVICE} at "
                        f"{lb_total!r}")
    # kube_endpoint_address is present all day: the pods come from it, so no LoadBalancer fallback is flagged
    flagged = fleet.q("select cluster, namespace, pod, estimation_reasons from marts.fct_allocation_daily "
                      "where usage_date = ? and estimation_reasons like '%lb\\_%' escape '\\'", [USAGE_DATE])
    if flagged:
        problems.append(f"LoadBalancer fallback flagged although its endpoints are there: {flagged}")
    assert not problems, "\n".join(problems)

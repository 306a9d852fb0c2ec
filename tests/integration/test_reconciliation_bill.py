"""The cloud bill reconciled into assets and allocations (issue 28), through the real CLI and API.

The demo cluster's day D1 is built once without a bill (the shared published workdir rebuilt list-priced,
tests/fixtures/pipeline_workdir.list_priced_workdir: the demo's own generated bill replaced by a bill without
lines). A FOCUS bill is then written
here from that day's own nodes: each node but one billed at 70 % of its list cost (a 30 % savings plan), the ids in
the forms the providers' exports use (an EC2 ARN, bare instance ids, the GCP full resource name, an upper-case Azure
VM path), a credit on one instance, one EBS volume at half its list cost, the ELB behind the checkout-web Service
(its ARN, the name from the Service's ingress hostname) at 125 % of its list cost (load-balancer capacity units),
and two lines outside the cluster; one more instance is billed in an AWS CUR 2.0 export instead (covered by the
savings plan, with its negation). The day
is rebuilt with `billing.focus_path` and `billing.cur2_path` set (a configured bill replaces the demo's generated
one), and the two warehouses are compared: the billed nodes cost what the bill
says, the adjustments reach the allocations whole, and no energy or carbon number moves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.fixtures.api_client import get_json, serve_api
from tests.fixtures.cur2 import effective_cost, write_cur2
from tests.fixtures.focus_spec_rules import check_dataset
from tests.fixtures.pipeline_workdir import D1, list_priced_workdir, published_workdir, run_cli
from tests.fixtures.warehouse_rows import warehouse_rows

pytestmark = pytest.mark.integration

ACCOUNT = "111122223333"
SAVINGS = 0.30
LB_MARKUP = 1.25
CREDIT = -0.01
TOL = {"rel": 1e-9, "abs": 1e-9}
WINDOW = f"{D1}T00:00:00Z,{D1 + timedelta(days=1)}T00:00:00Z"
HEAD = ("BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,"
        "ProviderName,BillingAccountId,SubAccountId,ServiceName,RegionId,ResourceId,ListCost,BilledCost,"
        "EffectiveCost,ContractedCost,BillingCurrency,CommitmentDiscountId,CommitmentDiscountStatus,Tags")


@dataclass
class Reconciled:
    before: Path  # the day built without a bill
    after: Path  # the same day rebuilt with the bill
    billed: dict[str, float]  # node, volume or load balancer asset name -> its effective cost in the bill
    load_balancer: str  # the billed load balancer's asset name (namespace/service)
    unbilled_node: str
    cur2_node: str  # the node billed in the CUR 2.0 export (by its bare instance id)
    base: str  # the API over the rebuilt day's serving copy




def _bill_id(provider_id: str, first_aws: bool) -> str:
    """The providerID as the provider's FOCUS export names the resource."""
    if provider_id.startswith("aws://"):
        instance = provider_id.rsplit("/", 1)[1]
        return f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/{instance}" if first_aws else instance
    if provider_id.startswith("gce://"):
        project, zone, name = provider_id[len("gce://"):].split("/")
        return f"//compute.googleapis.com/projects/{project}/zones/{zone}/instances/{name}"
    assert provider_id.startswith("azure://"), provider_id
    return provider_id[len("azure://"):].upper()


def _line(resource: str, list_cost: float, effective: float, category: str = "Usage",
          service: str = "Amazon Elastic Compute Cloud", account: str = ACCOUNT) -> str:
    day = f"{D1}T00:00:00Z,{D1 + timedelta(days=1)}T00:00:00Z"
    commitment = "sp-1,Used" if category == "Usage" and effective < list_cost else ","
    return (f"{day},{day},{category},,Amazon Web Services,payer-1,{account},{service},us-east-1,{resource},"
            f"{list_cost!r},{0.0 if commitment != ',' else effective!r},{effective!r},{list_cost!r},USD,"
            f"{commitment},")


def _cur2_lines(instance: str, list_cost: float) -> list[dict[str, Any]]:
    """The CUR 2.0 line items of an instance-day under the savings plan: the usage at on-demand price, its
    negation, and the plan's effective cost (30 % off)."""
    day = datetime(D1.year, D1.month, D1.day)
    common = {"bill_payer_account_id": "payer-1", "line_item_usage_account_id": ACCOUNT,
              "line_item_usage_start_date": day, "line_item_usage_end_date": day + timedelta(days=1),
              "line_item_product_code": "AmazonEC2", "product_region_code": "us-east-1",
              "line_item_resource_id": instance, "line_item_currency_code": "USD",
              "savings_plan_savings_plan_a_r_n": f"arn:aws:savingsplans::{ACCOUNT}:savingsplan/sp-1"}
    return [{**common, "line_item_line_item_type": "SavingsPlanCoveredUsage", "line_item_unblended_cost": list_cost,
             "pricing_public_on_demand_cost": list_cost,
             "savings_plan_savings_plan_effective_cost": (1 - SAVINGS) * list_cost},
            {**common, "line_item_line_item_type": "SavingsPlanNegation", "line_item_unblended_cost": -list_cost,
             "pricing_public_on_demand_cost": 0.0}]


def _load_balancer_line(before: Path) -> tuple[str, str, float]:
    """(asset name, the bill's line, effective cost) of the demo's one load balancer with an AWS ELB hostname: the
    bill names it by its classic-ELB ARN, arn:...:loadbalancer/<name>, the name being the hostname's first label
    without its last '-' part (<name>-<dns id>.<region>.elb.amazonaws.com)."""
    (lb,) = warehouse_rows(before, "select distinct s.namespace || '/' || s.service as asset_name, s.ingress, "
                  "a.load_balancer_cost from raw.service_hours s join marts.fct_asset_daily a "
                  "on a.asset_kind = 'load_balancer' and a.asset_name = s.namespace || '/' || s.service "
                  "and a.usage_date = ? where s.ingress like '%.elb.amazonaws.com'", D1)
    name = lb["ingress"].split(".", 1)[0].rsplit("-", 1)[0]
    effective = LB_MARKUP * lb["load_balancer_cost"]
    arn = f"arn:aws:elasticloadbalancing:us-east-1:{ACCOUNT}:loadbalancer/{name}"
    return lb["asset_name"], _line(arn, lb["load_balancer_cost"], effective,
                                   service="Elastic Load Balancing"), effective


def _write_bill(before: Path, path: Path, cur2: Path) -> tuple[dict[str, float], str, str, str]:
    nodes = warehouse_rows(before, "select a.asset_name, a.total_cost, m.provider_id from marts.fct_asset_daily a "
                  "join (select distinct node, provider_id from marts.fct_allocation_daily "
                  "      where allocation_kind = 'idle' and usage_date = ?) m on m.node = a.asset_name "
                  "where a.asset_kind = 'node' and a.usage_date = ? and m.provider_id is not null "
                  "order by a.asset_name", D1, D1)
    aws = [n for n in nodes if n["provider_id"].startswith("aws://")]
    assert len(aws) >= 3 and any(n["provider_id"].startswith(("gce://", "azure://")) for n in nodes), nodes
    unbilled = aws[-1]["asset_name"]  # stays list-priced
    in_cur2 = aws[1]  # billed in the CUR 2.0 export, by its bare instance id
    cur2_rows = _cur2_lines(in_cur2["provider_id"].rsplit("/", 1)[1], in_cur2["total_cost"])
    write_cur2(cur2, cur2_rows)
    billed: dict[str, float] = {in_cur2["asset_name"]: sum(effective_cost(r) for r in cur2_rows)}
    lines = [HEAD]
    for n in nodes:
        if n["asset_name"] in (unbilled, in_cur2["asset_name"]):
            continue
        effective = (1 - SAVINGS) * n["total_cost"]
        lines.append(_line(_bill_id(n["provider_id"], n is aws[0]), n["total_cost"], effective))
        billed[n["asset_name"]] = effective
    # a credit on the first instance counts in its day's effective cost
    lines.append(_line(aws[0]["provider_id"].rsplit("/", 1)[1].upper(), 0.0, CREDIT, category="Credit"))
    billed[aws[0]["asset_name"]] += CREDIT
    volume = warehouse_rows(before, "select asset_name, pv_cost, resource_key from marts.fct_asset_daily "
                   "where asset_kind = 'volume' and usage_date = ? and resource_key like 'vol-%' "
                   "order by asset_name limit 1", D1)[0]
    lines.append(_line(volume["resource_key"], volume["pv_cost"], volume["pv_cost"] / 2,
                       service="Amazon Elastic Block Store"))
    billed[volume["asset_name"]] = volume["pv_cost"] / 2
    load_balancer, line, effective = _load_balancer_line(before)
    lines.append(line)
    billed[load_balancer] = effective
    # outside the cluster: the cluster's account's S3 bucket, and another account's instance
    lines.append(_line("my-bucket", 3.0, 3.0, service="Amazon Simple Storage Service"))
    lines.append(_line("i-0elsewhere", 5.0, 5.0, account="999900001111"))
    path.write_text("\n".join(lines) + "\n")
    return billed, unbilled, in_cur2["asset_name"], load_balancer


@pytest.fixture(scope="module")
def reconciled(tmp_path_factory) -> Iterator[Reconciled]:
    before = list_priced_workdir(tmp_path_factory, "recon-before")
    work = published_workdir(tmp_path_factory, "recon-after")
    bill, cur2 = work / "bill.csv", work / "cur2.parquet"
    billed, unbilled, cur2_node, load_balancer = _write_bill(before / "wh" / "kubeledger.duckdb", bill, cur2)
    config = work / "kubeledger.yaml"
    config.write_text(config.read_text() + f"billing:\n  focus_path: {bill}\n  cur2_path: {cur2}\n"
                      "  reread_days: 0\n")
    run_cli(work, "backfill", "--start", D1.isoformat(), "--end", D1.isoformat())
    with serve_api(work / "wh" / "serving.duckdb") as base:
        yield Reconciled(before / "wh" / "kubeledger.duckdb", work / "wh" / "kubeledger.duckdb", billed,
                         load_balancer, unbilled, cur2_node, base)


def test_billed_assets_cost_what_the_bill_says_and_the_rest_stays_list_priced(reconciled: Reconciled) -> None:
    assets = {r["asset_name"]: r for r in warehouse_rows(reconciled.after, "select * from marts.fct_asset_daily "
                                                                  "where usage_date = ?", D1)}
    for name, effective in reconciled.billed.items():
        a = assets[name]
        assert a["reconciliation_status"] == "reconciled", a
        assert a["billed_cost"] == pytest.approx(effective, **TOL)
        assert a["total_cost"] + a["cost_adjustment"] == pytest.approx(effective, **TOL)
        if a["asset_kind"] == "node":  # spread over CPU, RAM and GPU in proportion to their list cost
            for r in ("cpu", "ram", "gpu"):
                assert a[f"{r}_cost_adjustment"] == pytest.approx(
                    a["cost_adjustment"] * a[f"{r}_cost"] / a["total_cost"], **TOL)
    unbilled = assets[reconciled.unbilled_node]
    assert (unbilled["reconciliation_status"], unbilled["cost_adjustment"], unbilled["billed_cost"]) == (
        "unmatched", 0.0, None)
    on_prem = [a for a in assets.values() if a["asset_kind"] == "node" and a["resource_key"] is None]
    assert on_prem and all(a["reconciliation_status"] == "no_resource_id" and a["cost_adjustment"] == 0
                           for a in on_prem)
    # the ELB: billed - list on its load-balancer cost; the IP-fronted one has no id the bill carries
    lb = assets[reconciled.load_balancer]
    assert lb["load_balancer_cost_adjustment"] == pytest.approx(
        reconciled.billed[reconciled.load_balancer] - lb["load_balancer_cost"], **TOL)
    assert lb["load_balancer_cost_adjustment"] > 0 and lb["cost_adjustment"] == lb["load_balancer_cost_adjustment"]
    others = [a for a in assets.values() if a["asset_kind"] == "load_balancer" and a is not lb]
    assert others and {(a["reconciliation_status"], a["cost_adjustment"]) for a in others} == {("no_resource_id", 0)}


def test_a_node_billed_in_the_cur2_export_is_reconciled_by_its_instance_id(reconciled: Reconciled) -> None:
    """The CUR 2.0 line items reach the same staging model as the FOCUS rows: the instance's usage and negation
    are one in-cluster bill line whose effective cost is the savings plan's, and the node costs that."""
    (node,) = warehouse_rows(reconciled.after, "select * from marts.fct_asset_daily where usage_date = ? and asset_name = ?",
                    D1, reconciled.cur2_node)
    listed = warehouse_rows(reconciled.before, "select total_cost from marts.fct_asset_daily where usage_date = ? "
                   "and asset_name = ?", D1, reconciled.cur2_node)[0]["total_cost"]
    assert node["reconciliation_status"] == "reconciled"
    assert node["billed_cost"] == pytest.approx((1 - SAVINGS) * listed, **TOL)
    assert node["cost_adjustment"] == pytest.approx(-SAVINGS * listed, **TOL)
    (line,) = warehouse_rows(reconciled.after, "select * from marts.fct_cloud_cost_daily where usage_date = ? "
                    "and resource_key = ?", D1, node["resource_key"])
    assert (line["provider_name"], line["charge_category"], line["charge_rows"], line["cluster_scope"],
            line["matched_cluster"]) == ("AWS", "Usage", 2, "in_cluster", "demo")
    assert (line["list_cost"], line["billed_cost"]) == (pytest.approx(listed, **TOL), pytest.approx(0, abs=1e-9))


def test_allocation_adjustments_add_up_to_each_node_adjustment(reconciled: Reconciled) -> None:
    nodes = {r["asset_name"]: r for r in warehouse_rows(
        reconciled.after, "select * from marts.fct_asset_daily where usage_date = ? and asset_kind = 'node'", D1)}
    per_node = warehouse_rows(reconciled.after, """
        select node, sum(cpu_cost_adjustment) as cpu, sum(ram_cost_adjustment) as ram,
               sum(gpu_cost_adjustment) as gpu, sum(case when allocation_kind = 'idle'
                   then cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment end) as idle
        from marts.fct_allocation_daily where usage_date = ? and node is not null group by node""", D1)
    checked = 0
    for row in per_node:
        node = nodes[row["node"]]
        for r in ("cpu", "ram", "gpu"):  # Σ workload + idle adjustments = the node's, per resource
            assert row[r] == pytest.approx(node[f"{r}_cost_adjustment"], **TOL), row
        if node["reconciliation_status"] == "reconciled":
            checked += 1
            assert node["cost_adjustment"] < 0 and row["idle"] is not None
    assert checked == sum(1 for n in reconciled.billed if n in nodes)
    volumes = warehouse_rows(reconciled.after, "select sum(pv_cost_adjustment) as asset from marts.fct_asset_daily "
                    "where usage_date = ? and asset_kind = 'volume'", D1)[0]["asset"]
    allocated = warehouse_rows(reconciled.after, "select sum(pv_cost_adjustment) as a from marts.fct_allocation_daily "
                      "where usage_date = ?", D1)[0]["a"]
    assert volumes < 0 and allocated == pytest.approx(volumes, **TOL)
    # the load balancer's adjustment reaches its pods (and any unmounted part) whole
    (lb,) = warehouse_rows(reconciled.after, "select load_balancer_cost_adjustment as asset from marts.fct_asset_daily "
                  "where usage_date = ? and asset_name = ?", D1, reconciled.load_balancer)
    allocated = warehouse_rows(reconciled.after, "select sum(load_balancer_cost_adjustment) as a, "
                      "count(*) filter (where load_balancer_cost_adjustment <> 0) as n "
                      "from marts.fct_allocation_daily where usage_date = ?", D1)[0]
    assert lb["asset"] > 0 and allocated["n"] > 0
    assert allocated["a"] == pytest.approx(lb["asset"], rel=1e-9, abs=1e-9)


# the columns the reconciliation adds; every other column keeps its value
RECONCILIATION_COLUMNS = {"resource_key", "billed_cost", "cpu_cost_adjustment", "ram_cost_adjustment",
                          "gpu_cost_adjustment", "pv_cost_adjustment", "load_balancer_cost_adjustment",
                          "cost_adjustment", "reconciliation_status"}


def test_without_a_bill_nothing_is_adjusted_and_the_status_says_why(reconciled: Reconciled) -> None:
    statuses = warehouse_rows(reconciled.before, "select asset_kind, reconciliation_status as s, "
                     "sum(abs(cost_adjustment)) as adj from marts.fct_asset_daily group by all")
    assert {(r["asset_kind"], r["s"]) for r in statuses} >= {("node", "no_bill"), ("volume", "no_bill")}
    assert {r["s"] for r in statuses} <= {"no_bill", "no_resource_id"} and all(r["adj"] == 0 for r in statuses)
    rows = warehouse_rows(reconciled.before, "select count(*) as n from marts.fct_allocation_daily where "
                 "cpu_cost_adjustment <> 0 or ram_cost_adjustment <> 0 or gpu_cost_adjustment <> 0 "
                 "or pv_cost_adjustment <> 0 or reconciliation_status not in ('no_bill', 'no_resource_id')")
    assert rows[0]["n"] == 0


def test_energy_carbon_and_list_costs_do_not_move(reconciled: Reconciled) -> None:
    """A discount changes dollars, not joules: every other column of the marts is the same row for row."""
    for table, key in (("fct_allocation_daily", "allocation_name"), ("fct_asset_daily", "asset_kind, asset_name"),
                       ("fct_node_energy_daily", "node"), ("fct_allocation_shared_daily", "allocation_name")):
        cols = [r["column_name"] for r in warehouse_rows(
            reconciled.before, "select column_name from duckdb_columns() where schema_name = 'marts' "
            "and table_name = ? order by column_index", table) if r["column_name"] not in RECONCILIATION_COLUMNS]
        assert {"energy_kwh", "co2e_total_g"} & set(cols) or table == "fct_asset_daily", table
        sql = f"select {', '.join(cols)} from marts.{table} where usage_date = ? order by {key}"  # noqa: S608
        before, after = warehouse_rows(reconciled.before, sql, D1), warehouse_rows(reconciled.after, sql, D1)
        assert len(before) == len(after) > 0, table
        for b, a in zip(before, after, strict=True):
            for c in cols:
                if isinstance(b[c], float):
                    assert a[c] == pytest.approx(b[c], rel=1e-12, abs=1e-15), (table, c, b)
                else:
                    assert a[c] == b[c], (table, c)


def test_the_bill_shows_in_and_out_of_cluster_cost(reconciled: Reconciled) -> None:
    lines = warehouse_rows(reconciled.after, "select resource_id, sub_account_id, charge_category, matched_cluster, "
                  "cluster_scope from marts.fct_cloud_cost_daily where usage_date = ?", D1)
    scope = {r["resource_id"]: r["cluster_scope"] for r in lines}
    assert scope["my-bucket"] == "out_of_cluster" and scope["i-0elsewhere"] == "other_account"
    in_cluster = [r for r in lines if r["cluster_scope"] == "in_cluster"]
    assert len(in_cluster) == len(reconciled.billed) + 1  # every billed asset, and the credit line
    assert {r["matched_cluster"] for r in in_cluster} == {"demo"}
    status, body = get_json(reconciled.base, "/model/cloudCost", window=WINDOW, aggregate="accountID",
                            accumulate="true")
    assert status == 200, body
    (costs,) = [s["cloudCosts"] for s in body["data"]["sets"]]
    billed_total = sum(reconciled.billed.values())
    ours = costs[ACCOUNT]["amortizedNetCost"]
    assert ours["cost"] == pytest.approx(billed_total + 3.0, **TOL)
    assert ours["kubernetesPercent"] == pytest.approx(billed_total / (billed_total + 3.0), **TOL)
    assert costs["999900001111"]["amortizedNetCost"]["kubernetesPercent"] == 0.0


def _allocations(base: str, **params: str) -> dict[str, dict[str, Any]]:
    status, body = get_json(base, "/model/allocation", window=WINDOW, accumulate="true", **params)
    assert status == 200, body
    return body["data"][0]


ADJ = ("cpuCostAdjustment", "ramCostAdjustment", "gpuCostAdjustment", "pvCostAdjustment",
       "loadBalancerCostAdjustment")


def test_the_api_adds_the_adjustments_with_reconcile_and_not_without(reconciled: Reconciled) -> None:
    nodes = {r["asset_name"]: r for r in warehouse_rows(
        reconciled.after, "select * from marts.fct_asset_daily where usage_date = ?", D1)}
    total_adjustment = sum(a["cost_adjustment"] for a in nodes.values())
    default = _allocations(reconciled.base, aggregate="node")
    plain = _allocations(reconciled.base, aggregate="node", reconcile="false")
    assert default.keys() == plain.keys()
    assert sum(a[f] for a in default.values() for f in ADJ) == pytest.approx(total_adjustment, **TOL)
    assert all(a[f] == 0.0 for a in plain.values() for f in ADJ)
    # Kubecost's totalCost includes the adjustments; without reconcile it is the list cost (the mart's total_cost)
    list_total = warehouse_rows(reconciled.after, "select sum(total_cost) as t from marts.fct_allocation_daily "
                       "where usage_date = ?", D1)[0]["t"]
    assert sum(a["totalCost"] for a in plain.values()) == pytest.approx(list_total, **TOL)
    assert sum(a["totalCost"] for a in default.values()) == pytest.approx(list_total + total_adjustment, **TOL)
    for key, a in default.items():  # per key: totalCost = list total + its adjustments; list fields unchanged
        assert a["totalCost"] == pytest.approx(plain[key]["totalCost"] + sum(a[f] for f in ADJ), **TOL)
        for f in ("cpuCost", "ramCost", "energyKwh", "co2eTotalG"):
            assert a[f] == pytest.approx(plain[key][f], **TOL), (key, f)
    node = max((n for n in reconciled.billed if n in default), key=lambda n: default[n]["cpuCost"])
    assert default[node]["cpuCostAdjustment"] < 0  # the node's workloads (its idle is the __idle__ key)
    # idle shared to the workloads carries its adjustment along: the total is conserved
    shared = _allocations(reconciled.base, aggregate="namespace", shareIdle="true")
    assert "__idle__" not in shared
    assert sum(a[f] for a in shared.values() for f in ADJ) == pytest.approx(total_adjustment, **TOL)
    # the asset endpoint: a billed node's totalCost is the bill's, its list cost without reconcile
    for reconcile, expected in (("true", reconciled.billed[node]), ("false", nodes[node]["total_cost"])):
        status, body = get_json(reconciled.base, "/model/assets", window=WINDOW, accumulate="true",
                                filter=f'name:"{node}"', reconcile=reconcile)
        assert status == 200, body
        (asset,) = body["data"][0].values()
        assert asset["totalCost"] == pytest.approx(expected, **TOL)
    for route in ("/model/allocation", "/allocation", "/model/assets"):
        status, body = get_json(reconciled.base, route, window=WINDOW, reconcile="maybe")
        assert status == 400 and body["message"].startswith("reconcile:"), body


def _report_numbers(html: str) -> dict[tuple[str, str], float]:
    """{(data-metric, data-cluster): data-value} of the report's bill table and sentence."""
    out: dict[tuple[str, str], float] = {}
    for tag in re.findall(r'<span class="num"[^>]*data-metric="bill_[^"]*"[^>]*>', html):
        attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag))
        out[(attrs["metric"], attrs["cluster"])] = float(attrs["value"])
    return out


def test_the_report_sets_the_bill_against_list_prices(reconciled: Reconciled) -> None:
    """The day's report: the billed cost is the bill's own lines for the matched assets (written by this test),
    their list cost is the day built without a bill, and the difference is the adjustments; without a bill the
    page says costs are list prices."""
    after = (reconciled.after.parent / "reports" / "daily" / f"{D1}.html").read_text()
    got = _report_numbers(after)
    names = list(reconciled.billed)
    listed = warehouse_rows(reconciled.before, "select sum(total_cost) as c, count(*) as n from marts.fct_asset_daily "
                   "where usage_date = ? and asset_name in (select unnest(?))", D1, names)[0]
    assert listed["n"] == len(names)
    assert got[("bill_billed_cost", "__all__")] == pytest.approx(sum(reconciled.billed.values()), **TOL)
    assert got[("bill_list_cost", "__all__")] == pytest.approx(listed["c"], **TOL)
    assert got[("bill_cost_adjustment", "__all__")] == pytest.approx(
        sum(reconciled.billed.values()) - listed["c"], **TOL)
    assert got[("bill_reconciled_asset_days", "__all__")] == len(names)
    counts = warehouse_rows(reconciled.after, "select reconciliation_status as s, count(*) as n from marts.fct_asset_daily "
                   "where usage_date = ? group by all", D1)
    by = {r["s"]: r["n"] for r in counts}
    assert got[("bill_unmatched_asset_days", "__all__")] == by.get("unmatched", 0) >= 1  # the unbilled node
    assert got[("bill_no_resource_id_asset_days", "__all__")] == by.get("no_resource_id", 0) >= 1  # on-premises
    assert 'id="bill-none"' not in after
    before = (reconciled.before.parent / "reports" / "daily" / f"{D1}.html").read_text()
    assert 'id="bill-none"' in before and not _report_numbers(before)


# --- FOCUS out: `kubeledger export focus` of the same day, with and without the bill --------------------------

def _export(warehouse: Path, name: str, fmt: str) -> Path:
    """`kubeledger export focus` of D1 from the workdir of `warehouse` (its serving copy), as `fmt`."""
    workdir = warehouse.parent.parent
    out = workdir / "exports" / f"{name}.{fmt}"
    proc = run_cli(workdir, "export", "focus", "--start", D1.isoformat(), "--end", D1.isoformat(),
                   "--out", str(out), "--format", fmt)
    assert out.is_file() and "wrote" in proc.stdout, proc.stdout + proc.stderr
    assert not list(out.parent.glob(".*.tmp")), "the temporary file is renamed into place"
    return out


def _read_back(path: Path, text: bool = False) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The export read back with DuckDB: ({column: type}, rows); a CSV as text (every column VARCHAR)."""
    con = duckdb.connect()
    try:
        source = (f"read_csv('{path}', all_varchar = true, header = true)" if text else f"read_parquet('{path}')")
        cur = con.execute(f"select * from {source}")  # noqa: S608 - a path this test wrote
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
        describe = f"select column_name, column_type from (describe select * from {source})"  # noqa: S608
        types = dict(con.execute(describe).fetchall())
    finally:
        con.close()
    return {c: types[c] for c in cols}, rows


@pytest.fixture(scope="module")
def focus_exports(reconciled: Reconciled) -> dict[str, Path]:
    return {"after": _export(reconciled.after, "after", "parquet"),
            "before": _export(reconciled.before, "before", "csv")}


def test_the_focus_export_keeps_the_specifications_column_rules(reconciled: Reconciled,
                                                               focus_exports: dict[str, Path]) -> None:
    """Both exports against FOCUS 1.2's rules (tests/fixtures/focus_spec_rules.py, from the specification's text):
    mandatory columns, types, nullability, allowed values, Key-Value Tags, x_ custom columns after the FOCUS ones;
    the CSV also against the Date/Time and Numeric text formats. The day with the bill names the billing account on
    the rows of every billed node and of the unbilled AWS node, and on no row it cannot attribute; without a bill
    BillingAccountId is NULL exactly where x_BillingAccountSource says unknown."""
    types, rows = _read_back(focus_exports["after"])
    # BillingAccountId is mandatory in FOCUS; ours is NULL only where no bill or setting names the account
    unknown = {"BillingAccountId": lambda r: r["x_BillingAccountSource"] == "unknown"}
    assert rows and check_dataset(types, rows, nullable_where=unknown) == []
    # a node's own bill line names its rows' account (node_bill); the unbilled AWS node's rows take the one account
    # billing the cluster's other AWS nodes (cluster_bill); the on-premises node's rows and the nodeless rows of this
    # cluster of four providers name none (unknown): no bill line is theirs and no provider's account can be
    providers = {r["asset_name"]: r["provider"] for r in warehouse_rows(
        reconciled.after, "select asset_name, provider from marts.fct_asset_daily where usage_date = ? "
        "and asset_kind = 'node'", D1)}
    source = {"node_bill": [], "cluster_bill": [], "unknown": []}
    for r in rows:
        source[r["x_BillingAccountSource"]].append(r)
    assert {r["x_NodeName"] for r in source["node_bill"]} == set(reconciled.billed) & set(providers)
    assert {r["x_NodeName"] for r in source["cluster_bill"]} == {reconciled.unbilled_node}
    assert {providers.get(r["x_NodeName"]) for r in source["unknown"]} == {"onprem", None}
    assert {(r["BillingAccountId"], r["SubAccountId"]) for r in source["node_bill"] + source["cluster_bill"]} == {
        ("payer-1", ACCOUNT)}
    assert {r["BillingAccountId"] for r in source["unknown"]} == {None}
    assert {(r["ChargeCategory"], r["ServiceName"], r["BillingCurrency"]) for r in rows} == {
        ("Usage", "Kubernetes", "USD")}
    assert [c for c in types if c.startswith("x_")] and all(c.startswith("x_") or c[0].isupper() for c in types)
    text_types, text_rows = _read_back(focus_exports["before"], text=True)
    assert list(text_types) == list(types)
    assert check_dataset(text_types, text_rows, text=True, nullable_where=unknown) == []
    assert {r["x_BillingAccountSource"] for r in text_rows} == {"unknown"}
    tags = json.loads(next(r["Tags"] for r in rows if r["x_AllocationKind"] == "workload"))
    assert {"kubeledger.io/namespace", "kubeledger.io/controller"} <= set(tags)


def test_the_focus_export_read_back_gives_the_allocation_totals(reconciled: Reconciled,
                                                               focus_exports: dict[str, Path]) -> None:
    """Σ ListCost = Σ total_cost, Σ EffectiveCost = Σ (total_cost + the *_cost_adjustment columns), and the kWh and
    CO2e totals of fct_allocation_daily for the same day and clusters, from the files read back with DuckDB."""
    adjustments = " + ".join(f"{r}_cost_adjustment" for r in ("cpu", "ram", "gpu", "pv", "load_balancer"))
    for warehouse, path, text in ((reconciled.after, focus_exports["after"], False),
                                  (reconciled.before, focus_exports["before"], True)):
        _, rows = _read_back(path, text=text)
        num = (lambda v: float(v)) if text else (lambda v: v)
        clusters = sorted({r["x_ClusterName"] for r in rows})
        sql = (f"select count(*) as n, sum(total_cost) as list, sum(total_cost + {adjustments}) as effective, "  # noqa: S608
               "sum(energy_kwh) as kwh, sum(co2e_total_g) as co2e from marts.fct_allocation_daily "
               "where usage_date = ? and cluster in (select unnest(?))")
        mart = warehouse_rows(warehouse, sql, D1, clusters)[0]
        assert len(rows) == mart["n"] > 0
        got = {k: sum(num(r[c]) for r in rows) for k, c in (("list", "ListCost"), ("effective", "EffectiveCost"),
                                                             ("kwh", "x_EnergyKwh"), ("co2e", "x_Co2eGrams"))}
        for k, v in got.items():
            assert v == pytest.approx(mart[k], rel=1e-9, abs=1e-9), (path.name, k)
        for r in rows:  # EffectiveCost = ListCost + adjustments, row by row
            assert num(r["EffectiveCost"]) == pytest.approx(num(r["ListCost"]) + num(r["x_CostAdjustment"]),
                                                            rel=1e-12, abs=1e-12)
    _, after = _read_back(focus_exports["after"])
    billed_adjustment = sum(a["cost_adjustment"] for a in warehouse_rows(
        reconciled.after, "select cost_adjustment from marts.fct_asset_daily where usage_date = ?", D1))
    assert billed_adjustment < 0  # the bill's discounts reach the export whole
    assert sum(r["x_CostAdjustment"] for r in after) == pytest.approx(billed_adjustment, **TOL)

"""The demo cluster's generated FOCUS bill through the real job (issue 28, Build 6): the shared published demo day D1
(tests/fixtures/pipeline_workdir.published_workdir, its config's clusters all demo clusters and no `billing:`) is
billed by pipelines/sources/demo_bill.py, landed by the FOCUS loader and reconciled like any bill. It is compared
with the same day rebuilt list-priced (list_priced_workdir). Every expected number is computed here from the
generated bill file and the marts, none copied.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.fixtures.pipeline_workdir import D1, list_priced_workdir, published_workdir
from tests.fixtures.warehouse_rows import warehouse_rows

pytestmark = pytest.mark.integration

TOL = {"rel": 1e-9, "abs": 1e-9}


@dataclass
class Demo:
    billed: Path  # the published demo day, with its generated bill
    listed: Path  # the same day list-priced
    bill: Path  # the generated FOCUS file
    lines: list[dict[str, Any]]  # its rows, read back with DuckDB




@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Iterator[Demo]:
    billed = published_workdir(tmp_path_factory, "demo-bill")
    listed = list_priced_workdir(tmp_path_factory, "demo-bill-list")
    (bill,) = (billed / "wh" / "state" / "demo-bill").glob("*.csv")
    con = duckdb.connect()
    try:
        cur = con.execute("select * from read_csv(?, header = true)", [str(bill)])
        cols = [d[0] for d in cur.description]
        lines = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()
    yield Demo(billed / "wh" / "kubeledger.duckdb", listed / "wh" / "kubeledger.duckdb", bill, lines)


def _usage(demo: Demo) -> dict[str, dict[str, Any]]:
    """The bill's EC2 instance-days by ResourceId (one line each)."""
    out = {r["ResourceId"]: r for r in demo.lines
           if r["ChargeCategory"] == "Usage" and r["ServiceName"] == "Amazon Elastic Compute Cloud"}
    assert len(out) == sum(1 for r in demo.lines if r["ServiceName"] == "Amazon Elastic Compute Cloud")
    return out


def test_the_generated_bill_is_landed_by_the_focus_loader_and_labelled_demo(demo: Demo) -> None:
    raw = warehouse_rows(demo.billed, "select * from raw.focus_charges where charge_date = ?", D1)
    assert len(raw) == len(demo.lines) > 0
    assert {Path(r["source_file"]).name for r in raw} == {demo.bill.name}  # the template's path, copied here
    assert {(r["billing_account_name"], r["provider_name"]) for r in raw} == {("kubeledger demo", "AWS")}
    assert {r["sub_account_name"] for r in raw} == {"kubeledger demo (demo)"}
    assert sum(r["billed_cost"] for r in raw) == pytest.approx(sum(r["BilledCost"] for r in demo.lines), **TOL)
    (health,) = warehouse_rows(demo.billed, "select status from raw.source_health where source = 'billing' and scope = ?",
                      D1.isoformat())
    assert health["status"] == "ok"
    # the list-priced reference: a configured bill without lines replaced the demo's, nothing is reconciled
    assert warehouse_rows(demo.listed, "select count(*) as n from raw.focus_charges")[0]["n"] == 0
    statuses = {r["s"] for r in warehouse_rows(demo.listed, "select distinct reconciliation_status as s "
                                                   "from marts.fct_asset_daily where usage_date = ?", D1)}
    assert statuses <= {"no_bill", "no_resource_id"}


def test_each_billed_node_costs_what_the_bill_says_and_the_plan_covers_part_of_them(demo: Demo) -> None:
    usage = _usage(demo)
    nodes = {r["resource_key"]: r for r in warehouse_rows(
        demo.billed, "select * from marts.fct_asset_daily where usage_date = ? and asset_kind = 'node'", D1)}
    covered = {k for k, r in usage.items() if r["CommitmentDiscountStatus"] == "Used"}
    for key, line in usage.items():
        node = nodes[key]
        assert node["reconciliation_status"] == "reconciled", node
        assert node["billed_cost"] == pytest.approx(line["EffectiveCost"], **TOL)
        assert node["total_cost"] + node["cost_adjustment"] == pytest.approx(line["EffectiveCost"], **TOL)
        if key in covered:  # node-day effective = the plan's amortised cost, below list
            assert line["BilledCost"] == 0 and line["CommitmentDiscountId"]
            assert node["cost_adjustment"] == pytest.approx(line["EffectiveCost"] - node["total_cost"], **TOL)
            assert node["cost_adjustment"] < 0
        else:
            assert node["cost_adjustment"] == pytest.approx(0, abs=1e-9)
    # the savings plan's coverage, from the bill: part of the AWS instance-days' list cost, the rest at list
    aws_list = sum(r["ListCost"] for r in usage.values())
    covered_list = sum(usage[k]["ListCost"] for k in covered)
    assert 0 < covered_list / aws_list < 1
    (fee,) = [r for r in demo.lines if r["ChargeCategory"] == "Purchase"]
    amortised = sum(usage[k]["EffectiveCost"] for k in covered) + sum(
        r["EffectiveCost"] for r in demo.lines if r["CommitmentDiscountStatus"] == "Unused")
    assert fee["BilledCost"] == pytest.approx(amortised, **TOL) and fee["EffectiveCost"] == 0
    assert sum(n["cost_adjustment"] for n in nodes.values()) == pytest.approx(
        sum(usage[k]["EffectiveCost"] - nodes[k]["total_cost"] for k in covered), **TOL)
    # GCP and Azure nodes are another provider's bill; the on-premises node has no provider id
    others = [n for k, n in nodes.items() if k not in usage]
    assert others and {n["provider"] for n in others} <= {"gcp", "azure", "onprem"}
    for n in others:
        assert n["reconciliation_status"] == ("no_resource_id" if n["resource_key"] is None else "unmatched"), n


def test_allocation_adjustments_and_idle_add_up_to_each_node_adjustment(demo: Demo) -> None:
    nodes = {r["asset_name"]: r for r in warehouse_rows(
        demo.billed, "select * from marts.fct_asset_daily where usage_date = ? and asset_kind = 'node'", D1)}
    per_node = warehouse_rows(demo.billed, """
        select node, sum(cpu_cost_adjustment) as cpu, sum(ram_cost_adjustment) as ram,
               sum(gpu_cost_adjustment) as gpu,
               sum(cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment)
                   filter (where allocation_kind = 'idle') as idle
        from marts.fct_allocation_daily where usage_date = ? and node is not null group by node""", D1)
    assert {r["node"] for r in per_node} == set(nodes)
    adjusted = 0
    for row in per_node:
        node = nodes[row["node"]]
        for r in ("cpu", "ram", "gpu"):  # Σ workload rows + the idle row = the node's, per resource
            assert row[r] == pytest.approx(node[f"{r}_cost_adjustment"], **TOL), row
        assert row["cpu"] + row["ram"] + row["gpu"] == pytest.approx(node["cost_adjustment"], **TOL)
        if node["cost_adjustment"] < -1e-9:
            adjusted += 1
            assert row["idle"] is not None and row["idle"] < 0  # the idle row carries its share
    assert adjusted == sum(1 for r in _usage(demo).values() if r["CommitmentDiscountStatus"] == "Used") > 0


def test_energy_carbon_and_list_costs_are_the_list_priced_days(demo: Demo) -> None:
    """The bill changes dollars, not joules: against the list-priced reference, every node's and allocation's
    energy, CO2e and list cost are the same, and only the reconciliation columns moved."""
    sql = "select * from marts.fct_node_energy_daily where usage_date = ? order by node"
    before, after = warehouse_rows(demo.listed, sql, D1), warehouse_rows(demo.billed, sql, D1)
    assert len(before) == len(after) > 0
    for b, a in zip(before, after, strict=True):
        assert a.keys() == b.keys()
        for c, v in b.items():
            assert a[c] == (pytest.approx(v, rel=1e-12, abs=1e-15) if isinstance(v, float) else v), (b["node"], c)
    alloc = ("select allocation_name, pod_uid, sum(energy_kwh) as kwh, sum(co2e_total_g) as co2e, "
             "sum(total_cost) as list, sum(cpu_cost) as cpu, sum(ram_cost) as ram, sum(gpu_cost) as gpu, "
             "sum(cpu_cost_adjustment + ram_cost_adjustment + gpu_cost_adjustment) as adj "
             "from marts.fct_allocation_daily where usage_date = ? group by all order by all")
    before, after = warehouse_rows(demo.listed, alloc, D1), warehouse_rows(demo.billed, alloc, D1)
    assert len(before) == len(after) > 0
    for b, a in zip(before, after, strict=True):
        assert (a["allocation_name"], a["pod_uid"]) == (b["allocation_name"], b["pod_uid"])
        for c in ("kwh", "co2e", "list", "cpu", "ram", "gpu"):
            assert a[c] == pytest.approx(b[c], rel=1e-12, abs=1e-15), (b["allocation_name"], c)
        assert b["adj"] == 0
    assert sum(a["adj"] for a in after) < 0


def _report_numbers(html: str) -> dict[str, float]:
    """{data-metric: data-value} of the report's bill figures for all clusters."""
    out: dict[str, float] = {}
    for tag in re.findall(r'<span class="num"[^>]*data-metric="bill_[^"]*"[^>]*>', html):
        attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag))
        if attrs["cluster"] == "__all__":
            out[attrs["metric"]] = float(attrs["value"])
    return out


def test_the_report_sets_the_demo_bill_against_list_prices(demo: Demo) -> None:
    got = _report_numbers((demo.billed.parent / "reports" / "daily" / f"{D1}.html").read_text())
    (mart,) = warehouse_rows(demo.billed, "select sum(total_cost) as list, sum(billed_cost) as billed, count(*) as n "
                    "from marts.fct_asset_daily where usage_date = ? and reconciliation_status = 'reconciled'", D1)
    usage = _usage(demo)
    assert got["bill_reconciled_asset_days"] == mart["n"] == len(usage)
    assert got["bill_billed_cost"] == pytest.approx(sum(r["EffectiveCost"] for r in usage.values()), **TOL)
    assert got["bill_list_cost"] == pytest.approx(mart["list"], **TOL)
    assert got["bill_cost_adjustment"] == pytest.approx(mart["billed"] - mart["list"], **TOL) and got[
        "bill_cost_adjustment"] < 0
    listed = (demo.listed.parent / "reports" / "daily" / f"{D1}.html").read_text()
    assert 'id="bill-none"' in listed and not _report_numbers(listed)

"""The savings endpoints over a hand-made marts.fct_recommendation_daily: Kubecost's requestSizingV2 shape field by
field, its tuning parameters checked against the settings, the /model/savings summary and /kubeledger/recommendations."""

from __future__ import annotations

import json
from datetime import date

import duckdb
import pytest

from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.recommendations import COLUMNS
from pipelines.serving.routes.savings import savings_routes
from pipelines.settings import Settings

D1, D2 = date(2026, 3, 6), date(2026, 3, 7)
WINDOW = "2026-03-01T00:00:00Z,2026-03-08T00:00:00Z"
TYPES = {"usage_date": "DATE", "window_days": "INTEGER", "days_of_data": "INTEGER", "hours_covered": "INTEGER",
         "is_estimated": "BOOLEAN", "stage": "INTEGER"}
QUANTITIES = ("usd", "kwh", "co2e_g")
DOUBLES = ("current_cpu_request_cores", "recommended_cpu_request_cores", "current_ram_request_bytes",
           "recommended_ram_request_bytes", "saving_usd_per_month", "saving_kwh_per_month", "saving_co2e_g_per_month",
           *(f"{p}_{q}_per_month" for p in ("counted", "risk_fix") for q in QUANTITIES))
STAGES = {"abandoned_workload": 1, "container_rightsizing": 2, "carbon_shift_time": 4}
EVIDENCE = {"saving_cpu_usd_per_month": 30.0, "saving_ram_usd_per_month": 5.5, "cpu_efficiency": 0.05,
            "ram_efficiency": 0.1, "total_efficiency": 0.06, "cpu_quantile": 0.95}


def _row(day, rid, kind, **kw):
    base = dict.fromkeys(COLUMNS)
    base.update(usage_date=day, cluster="c1", recommendation_id=rid, kind=kind, target=rid.split("/", 1)[-1],
                action="do it", window_days=7, days_of_data=7, hours_covered=168, evidence="{}", confidence="high",
                saving_usd_per_month=0.0, saving_kwh_per_month=0.0, saving_co2e_g_per_month=0.0,
                is_estimated=False, estimation_reasons="")
    base.update(kw)
    # counted as int_recommendations_counted counts rows that overlap nothing: the saving, the increase apart
    for q in QUANTITIES:
        saving = base[f"saving_{q}_per_month"]
        base[f"counted_{q}_per_month"], base[f"risk_fix_{q}_per_month"] = max(saving, 0.0), max(-saving, 0.0)
    base["stage"] = STAGES[kind]
    base["saving_class"] = "risk_fix" if base["risk_fix_usd_per_month"] > 0 else "saving"
    return base


ROWS = [
    _row(D2, "container_rightsizing:c1/shop/deployment/api:app", "container_rightsizing", namespace="shop",
         controller_kind="Deployment", controller="api", container="app", current_cpu_request_cores=2.0,
         recommended_cpu_request_cores=0.2345, current_ram_request_bytes=4 * 2**30,
         recommended_ram_request_bytes=520 * 2**20, saving_usd_per_month=35.5, saving_kwh_per_month=0.25,
         saving_co2e_g_per_month=900.0, evidence=json.dumps(EVIDENCE)),
    _row(D2, "container_rightsizing:c1/shop/deployment/tiny:app", "container_rightsizing", namespace="shop",
         controller_kind="Deployment", controller="tiny", container="app", current_cpu_request_cores=0.01,
         recommended_cpu_request_cores=0.05, current_ram_request_bytes=32 * 2**20,
         recommended_ram_request_bytes=64 * 2**20, saving_usd_per_month=-1.25, saving_kwh_per_month=-0.01,
         saving_co2e_g_per_month=-20.0, is_estimated=True, estimation_reasons="default_price"),
    # an older day of the same cluster: never answered when a later day is in the window
    _row(D1, "container_rightsizing:c1/shop/deployment/api:app", "container_rightsizing", namespace="shop",
         controller_kind="Deployment", controller="api", container="app", saving_usd_per_month=99.0),
    _row(D2, "abandoned_workload:c1/ops/deployment/old", "abandoned_workload", namespace="ops",
         controller_kind="Deployment", controller="old", saving_usd_per_month=12.0, saving_kwh_per_month=3.0,
         saving_co2e_g_per_month=1500.0),
    _row(D2, "carbon_shift_time:c1/batch/cronjob/etl", "carbon_shift_time", namespace="batch",
         controller_kind="CronJob", controller="etl", saving_co2e_g_per_month=700.0,
         evidence='{"typical_best_start_hour": 13}'),
]


@pytest.fixture
def cur():
    con = duckdb.connect()
    con.execute("create schema marts")
    cols = ", ".join(f"{c} {TYPES.get(c, 'DOUBLE' if c in DOUBLES else 'VARCHAR')}" for c in COLUMNS)
    con.execute(f"create table marts.fct_recommendation_daily ({cols})")
    marks = ", ".join("?" * len(COLUMNS))
    for r in ROWS:
        con.execute(f"insert into marts.fct_recommendation_daily values ({marks})",  # noqa: S608
                    [r[c] for c in COLUMNS])
    yield con.cursor()
    con.close()


ROUTES = savings_routes(Settings())


def test_request_sizing_v2_shape_field_by_field(cur):
    reply = ROUTES["/model/savings/requestSizingV2"].fn(cur, {"window": WINDOW})
    assert reply.status == 200
    assert reply.payload == [
        {"clusterID": "c1", "namespace": "shop", "controllerKind": "deployment", "controllerName": "api",
         "containerName": "app", "recommendedRequest": {"cpu": "235m", "memory": "520Mi"},
         "monthlySavings": {"cpu": 30.0, "memory": 5.5}, "latestKnownRequest": {"cpu": "2000m", "memory": "4096Mi"},
         "currentEfficiency": {"cpu": 0.05, "memory": 0.1, "total": 0.06}},
        {"clusterID": "c1", "namespace": "shop", "controllerKind": "deployment", "controllerName": "tiny",
         "containerName": "app", "recommendedRequest": {"cpu": "50m", "memory": "64Mi"},
         "monthlySavings": {"cpu": None, "memory": None}, "latestKnownRequest": {"cpu": "10m", "memory": "32Mi"},
         "currentEfficiency": {"cpu": None, "memory": None, "total": None}},
    ]
    assert "7-day look-back" not in reply.headers.get("X-Kubeledger-Warning", "")


def test_request_sizing_v2_sort_filter_and_window_note(cur):
    route = ROUTES["/model/savings/requestSizingV2"]
    asc = route.fn(cur, {"window": WINDOW, "sortBy": "cpuRecommended", "sortByOrder": "ascending"})
    assert [x["controllerName"] for x in asc.payload] == ["tiny", "api"]
    only = route.fn(cur, {"window": WINDOW, "filter": 'controllerName:"tiny"'})
    assert [x["controllerName"] for x in only.payload] == ["tiny"]
    short = route.fn(cur, {"window": "2026-03-06T00:00:00Z,2026-03-08T00:00:00Z"})
    assert "configured 7-day look-back" in short.headers["X-Kubeledger-Warning"]
    older = route.fn(cur, {"window": "2026-03-06T00:00:00Z,2026-03-07T00:00:00Z"})
    assert older.payload[0]["clusterID"] == "c1" and len(older.payload) == 1  # the D1 row


@pytest.mark.parametrize("params", [
    {"algorithmCPU": "quantile", "qCPU": "0.95"}, {"algorithmRAM": "max"}, {"qRAM": "1"},
    {"targetCPUUtilization": str(1 / 1.2)}, {"targetRAMUtilization": str(1 / 1.3)},
    {"minRecCPUMillicores": "10"}, {"minRecRAMBytes": str(32 * 2**20)},
])
def test_request_sizing_v2_accepts_the_configured_tuning(cur, params):
    assert ROUTES["/model/savings/requestSizingV2"].fn(cur, {"window": WINDOW, **params}).status == 200


@pytest.mark.parametrize(("params", "setting"), [
    ({"algorithmCPU": "max"}, "cpu_quantile"), ({"qCPU": "0.9"}, "cpu_quantile"),
    ({"targetCPUUtilization": "0.7"}, "cpu_headroom"), ({"targetRAMUtilization": "0.8"}, "memory_headroom"),
    ({"minRecCPUMillicores": "20"}, "min_cpu_cores"), ({"minRecRAMBytes": "1"}, "min_memory_mib"),
])
def test_request_sizing_v2_refuses_other_tuning(cur, params, setting):
    with pytest.raises(QueryError) as err:
        ROUTES["/model/savings/requestSizingV2"].validate({"window": WINDOW, **params})
    assert err.value.status == 400 and f"recommendations.{setting}" in err.value.message


@pytest.mark.parametrize("params", [{}, {"window": WINDOW, "sortBy": "name"}, {"window": WINDOW, "qCPU": "2"},
                                    {"window": WINDOW, "filter": 'pod:"x"'}, {"window": WINDOW, "algorithmCPU": "avg"}])
def test_request_sizing_v2_bad_input(params):
    with pytest.raises(QueryError):
        ROUTES["/model/savings/requestSizingV2"].validate(params)


def test_savings_summary(cur):
    reply = ROUTES["/model/savings"].fn(cur, {"window": WINDOW})
    data = reply.payload["data"]
    assert data["requestSizing"] == pytest.approx(35.5)  # the increase (-1.25) is not a saving
    assert data["abandonedWorkloads"] == pytest.approx(12.0)
    assert data["clusterSizing"] == 0.0 and data["unclaimedVolumes"] == 0.0
    kinds = data["kubeledger"]["kinds"]
    rightsizing = kinds["container_rightsizing"]
    assert {k: rightsizing[k] for k in ("count", "savingUsdPerMonth", "savingKwhPerMonth", "savingCo2eGPerMonth",
                                        "countedUsdPerMonth", "riskFixUsdPerMonth")} == {
        "count": 2, "savingUsdPerMonth": pytest.approx(34.25), "savingKwhPerMonth": pytest.approx(0.24),
        "savingCo2eGPerMonth": pytest.approx(880.0), "countedUsdPerMonth": pytest.approx(35.5),
        "riskFixUsdPerMonth": pytest.approx(1.25)}
    # Kubecost's name and our kind say the same figure: what the kind adds to the total, counted once
    assert data["requestSizing"] == rightsizing["countedUsdPerMonth"]
    total = data["kubeledger"]["total"]
    assert total["countedUsdPerMonth"] == pytest.approx(35.5 + 12.0)
    assert total["countedCo2eGPerMonth"] == pytest.approx(900.0 + 1500.0 + 700.0)
    assert (total["riskFixes"], total["riskFixUsdPerMonth"]) == (1, pytest.approx(1.25))
    assert (total["recommendations"], total["superseded"], total["uncounted"]) == (4, 0, 0)
    assert kinds["carbon_shift_time"]["savingCo2eGPerMonth"] == pytest.approx(700.0)
    assert data["kubeledger"]["days"] == [{"cluster": "c1", "date": "2026-03-07"}]


def test_kubeledger_recommendations(cur):
    reply = ROUTES["/kubeledger/recommendations"].fn(cur, {"sortBy": "savingCo2e", "kind": "carbon_shift_time,"
                                                                                           "abandoned_workload"})
    rows = reply.payload["data"]
    assert [r["kind"] for r in rows] == ["abandoned_workload", "carbon_shift_time"]
    first = rows[0]
    assert first == {
        "date": "2026-03-07", "cluster": "c1", "id": "abandoned_workload:c1/ops/deployment/old",
        "kind": "abandoned_workload", "namespace": "ops", "controllerKind": "Deployment", "controller": "old",
        "container": None, "target": "ops/deployment/old", "action": "do it", "windowDays": 7, "daysOfData": 7,
        "hoursCovered": 168, "confidence": "high", "currentCpuRequestCores": None,
        "recommendedCpuRequestCores": None, "currentRamRequestBytes": None, "recommendedRamRequestBytes": None,
        "cpuLatest": None, "cpuRecommended": None, "memoryLatest": None, "memoryRecommended": None,
        "savingUsdPerMonth": 12.0, "savingKwhPerMonth": 3.0, "savingCo2eGPerMonth": 1500.0, "isEstimated": False,
        "estimationReasons": "", "evidence": {}, "stage": 1, "savingClass": "saving", "supersededBy": None,
        "dependsOn": None, "countedUsdPerMonth": 12.0, "countedKwhPerMonth": 3.0, "countedCo2eGPerMonth": 1500.0,
        "riskFixUsdPerMonth": 0.0, "riskFixKwhPerMonth": 0.0, "riskFixCo2eGPerMonth": 0.0,
        # the ledger (`kubeledger recommend --dismiss/--applied`): nothing decided, no outcome mart
        "status": "open", "statusReason": None, "appliedDate": None, "outcome": None}
    assert rows[1]["evidence"] == {"typical_best_start_hour": 13}
    with pytest.raises(QueryError):
        ROUTES["/kubeledger/recommendations"].validate({"kind": "bogus"})

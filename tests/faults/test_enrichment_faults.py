"""The fault matrix for the enrichment sources, through the real job: `kubeledger materialize` with carbon
intensity (Electricity Maps or Wattnet), the Boavizta API and the Kubernetes API behind fault-injecting proxies, and
a price file and a FOCUS bill broken in the same run for the modes a file can share (an HTML page, a wrong header, a
cut-off file).

Expected in every cell: the day publishes (exit 0, no traceback); one warning line per failing source names it,
the failure and what to do; the ledger, `kubeledger status` and /healthz show the day with degraded sources; the
rows the fallback touched carry its reason; what the failure cannot touch is identical to the no-fault run.
Each test runs the pipeline itself (that is where the fault broke), on a copy of the session's warm workdir.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, time
from pathlib import Path
from typing import Any

import pytest

from pipelines.serving.query.snapshots import SnapshotPool
from tests.faults.conftest import DAY, Sources, config_text, materialize, query
from tests.fixtures.pipeline_workdir import cli_args, cli_env

pytestmark = [pytest.mark.faults, pytest.mark.integration]

DROPPED = {datetime.combine(DAY, time(h)) for h in (3, 4, 5)}
COST_COLS = "cluster, node, namespace, pod, container, allocation_kind, total_cost, cpu_cost, ram_cost, gpu_cost"


@dataclass
class Cell:
    mode: str
    fault: tuple[str, dict[str, Any]] | None  # applied to every proxy (unless `only` says otherwise)
    carbon_kind: str | None  # the ledger's failure for carbon; None: carbon answers
    boavizta_kind: str | None
    k8s_kind: str | None
    provider: str = "electricitymaps"
    per_source: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # proxy name -> fault
    price_file: str | None = None  # the price sheet's broken content
    failed_zones: set[str] = field(default_factory=lambda: {"BE", "FR", "US-MIDA-PJM"})


CELLS = [
    Cell("refused", ("refused", {}), "connection_refused", "connection_refused", "connection_refused"),
    Cell("timeout", ("timeout", {}), "timeout", "timeout", "timeout", provider="wattnet",
         failed_zones={"BE", "FR"}),
    Cell("http_500", ("status", {"status": 500}), "http_5xx", "http_5xx", "http_5xx"),
    Cell("http_503", ("status", {"status": 503}), "http_5xx", "http_5xx", "http_5xx", provider="wattnet",
         failed_zones={"BE", "FR"}),
    Cell("http_429", ("status", {"status": 429, "headers": {"Retry-After": "1"}}), "http_429", "http_429",
         "http_429"),
    Cell("http_401", ("status", {"status": 401}), "http_401", "http_401", "http_401"),
    Cell("http_403", ("status", {"status": 403}), "http_403", "http_403", "http_403", provider="wattnet",
         failed_zones={"BE", "FR"}),
    Cell("not_found_one", None, "http_404", None, None, failed_zones={"FR"}, per_source={
        "em": ("status", {"status": 404, "match": "zone=FR"}),
        "boavizta": ("status", {"status": 404, "match": "instance_type=m5.large"}),
        "k8s": ("status", {"status": 404, "match": "/api/v1/persistentvolumes"}),  # a kind not served: warning
    }),
    Cell("html", ("html", {}), "not_json", "not_json", "not_json",
         price_file="<html><body><h1>502 Bad Gateway</h1></body></html>\n"),
    Cell("wrong_shape", ("wrong_shape", {}), "wrong_shape", "wrong_shape", "wrong_shape",
         price_file="a,b,c\n1,2,3\n"),
    Cell("truncated", ("truncated", {}), "truncated", "truncated", "connection_error",
         price_file="provider,region,instance_type,hourly_usd\naws,us-east-1,m5.la\n", provider="wattnet",
         failed_zones={"BE", "FR"}),
    Cell("partial_hours", None, "partial", None, None, failed_zones={"BE", "FR", "US-MIDA-PJM"},
         per_source={"em": ("drop_hours", {"hours": DROPPED})}),
]


def _apply(sources: Sources, cell: Cell) -> None:
    proxies = {"em": sources.em, "wattnet": sources.wattnet, "boavizta": sources.boavizta, "k8s": sources.k8s}
    for name, proxy in proxies.items():
        fault = cell.per_source.get(name, cell.fault if not cell.per_source else None)
        if fault is not None:
            mode, opts = fault
            proxy.set_fault(mode, **opts)


def _ledger(workdir: Path) -> dict[str, tuple[str, str, str]]:
    rows = query(workdir / "wh" / "kubeledger.duckdb",
                 "select source, status, failure, message from raw.source_health where scope in (?, 'current')",
                 [DAY.isoformat()])
    return {r[0]: r[1:] for r in rows}


def _node_rows(path: Path) -> dict[str, tuple]:
    return {r[0]: r for r in query(path, "select node, carbon_zone, instance_type, intensity_source, "
                                         "estimation_reasons, co2e_operational_g, co2e_embodied_g, energy_kwh "
                                         "from marts.fct_node_energy_daily where usage_date = ?", [DAY])}


@pytest.mark.parametrize("cell", CELLS, ids=[c.mode for c in CELLS])
def test_enrichment_fault_publishes_the_day_flagged(cell: Cell, sources: Sources, workdir: Path,
                                                   warm_template: Path) -> None:
    (workdir / "kubeledger.yaml").write_text(config_text(sources, cell.provider))
    # fresh carbon and Boavizta caches, as on a first run of the day: the template's values would stay in use
    # where a refresh fails (a failed refresh keeps what was landed; the message says so)
    query_rw(workdir / "wh" / "kubeledger.duckdb", "delete from raw.boavizta_impacts; "
                                                     "delete from raw.carbon_intensity_hours")
    if cell.price_file is not None:  # the price sheet and the cloud bill, both files, broken alike
        (workdir / "prices.csv").write_text(cell.price_file)
        (workdir / "bill.csv").write_text(cell.price_file)
    _apply(sources, cell)
    proc = materialize(workdir)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "Traceback" not in out, out[-5000:]
    assert "1 day published" in out, out[-3000:]

    ledger = _ledger(workdir)
    expected = {"carbon": cell.carbon_kind, "boavizta": cell.boavizta_kind, "kubernetes": cell.k8s_kind}
    if cell.provider == "wattnet" and cell.carbon_kind is None:
        expected.pop("carbon")  # Wattnet has no zone for US-MIDA-PJM: degraded even on a good day
    for source, kind in expected.items():
        status, failure, message = ledger.get(source, ("missing", "", ""))
        label = "kubernetes (cluster demo)" if source == "kubernetes" else source
        lines = [ln for ln in out.splitlines() if f"{label} degraded:" in ln]
        if kind is None:
            assert status == "ok", (source, ledger)
            assert not lines, lines
            continue
        assert (status, failure) == ("degraded", kind), (source, ledger.get(source))
        assert len(lines) == 1, (source, lines)  # one line a source, naming what to do
        assert "What to do:" in lines[0] and len(lines[0]) < 700, lines[0]
    if cell.price_file is not None:
        assert ledger["pricing"][:2] == ("degraded", "file"), ledger
        assert "last good load" in ledger["pricing"][2], ledger["pricing"]
        assert len([ln for ln in out.splitlines() if "pricing degraded:" in ln]) == 1
        assert ledger["billing"][:2] == ("degraded", "file"), ledger
        assert len([ln for ln in out.splitlines() if "billing degraded:" in ln]) == 1
    else:
        assert ledger["billing"][0] == "ok", ledger

    before = _node_rows(warm_template / "wh" / "kubeledger.duckdb")
    after = _node_rows(workdir / "wh" / "kubeledger.duckdb")
    assert before.keys() == after.keys()
    for node, row in after.items():
        zone, instance_type, source, reasons = row[1], row[2], row[3], row[4].split(",")
        if cell.carbon_kind and zone in cell.failed_zones:
            assert source != "provider_hourly" or cell.carbon_kind == "partial", row
            assert {"zone_default_intensity", "region_default_intensity",
                    "global_default_intensity"} & set(reasons), row
        elif cell.provider == "electricitymaps" and not cell.carbon_kind:
            assert row[3:6] == before[node][3:6], (row, before[node])  # carbon untouched: identical
        fell_back = bool(cell.boavizta_kind) or (cell.mode == "not_found_one" and instance_type == "m5.large")
        if fell_back:
            assert "embodied_fallback" in reasons, row
        elif cell.mode == "not_found_one":
            assert row[6] == before[node][6], (row, before[node])  # other types: the same embodied CO2e
    if cell.mode == "not_found_one":  # what answered (other zones, other types): identical to the no-fault run
        for node, row in after.items():
            if row[1] != "FR" and row[2] != "m5.large":
                assert row == before[node], (row, before[node])

    # cost never rests on these sources (the broken price file keeps its last good load): identical
    sql = f"select {COST_COLS} from marts.fct_allocation_daily where usage_date = ? order by all"  # noqa: S608
    assert query(workdir / "wh" / "kubeledger.duckdb", sql, [DAY]) == \
        query(warm_template / "wh" / "kubeledger.duckdb", sql, [DAY])

    _status_and_healthz_say_degraded(workdir, [s for s, k in expected.items() if k])


def _status_and_healthz_say_degraded(workdir: Path, sources: list[str]) -> None:
    status = subprocess.run(cli_args(workdir, "status"), cwd=workdir, env=cli_env(), capture_output=True,
                            text=True, timeout=120)
    assert status.returncode == 0, status.stderr[-2000:]
    if sources:
        assert "degraded sources" in status.stdout, status.stdout
        for source in sources:
            assert re.search(rf"{DAY} {source}\b", status.stdout), (source, status.stdout)
    pool = SnapshotPool(workdir / "wh" / "serving.duckdb")
    try:
        health = pool.health()["sources"]
    finally:
        pool.close()
    assert health["newestDay"] == DAY.isoformat()
    assert health["status"] == ("degraded" if sources else "ok"), health
    assert {d["source"] for d in health["degraded"]} >= set(sources), health


def query_rw(path: Path, sql: str) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    try:
        con.execute(sql)
    finally:
        con.close()


def test_no_fault_day_says_every_source_answered(warm_template: Path) -> None:
    """The warm template is the no-fault run: every source 'ok' in the ledger, /healthz 'ok'."""
    ledger = _ledger(warm_template)
    assert {s: v[0] for s, v in ledger.items()} == {"metrics": "ok", "kubernetes": "ok", "carbon": "ok",
                                                    "boavizta": "ok", "pricing": "ok", "billing": "ok"}, ledger
    rows = query(warm_template / "wh" / "kubeledger.duckdb",
                 "select intensity_source, count(*) from marts.fct_node_energy_daily group by 1")
    assert dict(rows) == {"provider_hourly": 6}, rows
    pool = SnapshotPool(warm_template / "wh" / "serving.duckdb")
    try:
        assert pool.health()["sources"]["status"] == "ok"
    finally:
        pool.close()


def test_a_dead_provider_holds_the_run_for_one_request_not_one_per_zone(sources: Sources, workdir: Path) -> None:
    """A refused provider is asked once (then the source is tripped), and the run still publishes."""
    (workdir / "kubeledger.yaml").write_text(config_text(sources))
    query_rw(workdir / "wh" / "kubeledger.duckdb", "delete from raw.carbon_intensity_hours")
    sources.em.set_fault("status", status=401)
    before = len(sources.em.requests)
    proc = materialize(workdir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    asked = sources.em.requests[before:]
    assert len(asked) == 1, asked  # 3 zones, one request: the 401 tripped the source

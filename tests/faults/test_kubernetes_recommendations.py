"""The recommendations that read the Kubernetes API, through the real job (issue 27): `kubeledger materialize` of the
fault matrix's day with the API on the local stand-in (tests/fixtures/k8s_standin.py), which lists the demo's
checkout-web as its metrics know it (the same pod uids) and a PodDisruptionBudget on it.

spot_eligible: with a PDB that leaves a disruption the workload is eligible and says its PDBs were checked; with one
that blocks every eviction (minAvailable 100 %) the same workload, on the same day, gets no row, and nothing else
changes. The no-fault template is the first case (no extra run); the second is one run on a copy of it.

hpa_candidate is not covered here: the 6-node demo's one Deployment with 2 or more replicas (checkout-web) needs all
3 replicas for its summed memory peaks every hour, so an HPA would save nothing and no row is made with or without an
HorizontalPodAutoscaler. The HPA listing itself is in test_kubernetes_extract.py, the exclusion in the dbt unit tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.faults.conftest import DAY, PDB_PATH, SPOT_WORKLOAD, Sources, materialize, query, spot_pdb

pytestmark = [pytest.mark.faults, pytest.mark.integration]

TARGET = f"{SPOT_WORKLOAD[0]}/deployment/{SPOT_WORKLOAD[1]}"
REC_COLUMNS = ("recommendation_id, kind, saving_usd_per_month, counted_usd_per_month, counted_co2e_g_per_month, "
               "superseded_by, estimation_reasons")


def _spot_rows(warehouse: Path) -> dict[str, tuple]:
    return {r[0]: r for r in query(warehouse, "select target, estimation_reasons, evidence, saving_usd_per_month "
                                              "from marts.fct_recommendation_daily where usage_date = ? "
                                              "and kind = 'spot_eligible'", [DAY])}


def _other_rows(warehouse: Path) -> list[tuple]:
    return query(warehouse, f"select {REC_COLUMNS} from marts.fct_recommendation_daily "  # noqa: S608
                            "where usage_date = ? and kind <> 'spot_eligible' order by recommendation_id", [DAY])


def _pdbs(warehouse: Path) -> list[tuple]:
    return query(warehouse, "select namespace, name, spec from staging.stg_kubernetes__objects "
                            "where kind = 'PodDisruptionBudget' and namespace = ?", [SPOT_WORKLOAD[0]])


def test_a_pdb_that_allows_a_disruption_keeps_the_workload_spot_eligible(warm_template: Path) -> None:
    warehouse = warm_template / "wh" / "kubeledger.duckdb"
    assert [(ns, name, json.loads(spec)["maxUnavailable"]) for ns, name, spec in _pdbs(warehouse)] == \
        [(*SPOT_WORKLOAD, 1)]
    _, reasons, evidence, saving = _spot_rows(warehouse)[TARGET]
    ev = json.loads(evidence)
    # checked against the API's listing: its pods matched by uid, one PDB selecting them, one disruption left
    assert (ev["pdb_checked"], ev["pdbs_matching"], ev["disruptions_allowed"]) == (True, 1, 1), ev
    assert "pdb_not_checked" not in reasons.split(","), reasons
    assert ev["replicas_min"] >= 2 and 0 < ev["on_demand_share_of_hours"] and saving > 0


def test_a_pdb_that_blocks_eviction_leaves_the_workload_off_spot(sources: Sources, workdir: Path,
                                                                 warm_template: Path) -> None:
    objects = sources.k8s_api.objects
    kept = objects[PDB_PATH]
    objects[PDB_PATH] = [p for p in kept if p["metadata"]["name"] != SPOT_WORKLOAD[1]] + [spot_pdb(blocks=True)]
    try:
        proc = materialize(workdir)
    finally:
        objects[PDB_PATH] = kept
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "kubernetes (cluster demo) degraded" not in proc.stdout + proc.stderr

    warehouse = workdir / "wh" / "kubeledger.duckdb"
    assert [(ns, name, json.loads(spec)["minAvailable"]) for ns, name, spec in _pdbs(warehouse)] == \
        [(*SPOT_WORKLOAD, "100%")]
    template = warm_template / "wh" / "kubeledger.duckdb"
    assert TARGET in _spot_rows(template)
    assert TARGET not in _spot_rows(warehouse)
    # the PDB moves nothing else: spot is counted last (stage 5), so every other row counts what it counted
    before, after = _other_rows(template), _other_rows(warehouse)
    assert [r[:2] for r in after] == [r[:2] for r in before]
    for a, b in zip(after, before, strict=True):
        assert a[2:5] == pytest.approx(b[2:5], rel=1e-9, abs=1e-9) and a[5:] == b[5:], (a, b)

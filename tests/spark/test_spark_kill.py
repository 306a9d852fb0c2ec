"""The spark engine end to end through the real CLI, and killed mid-build.

- A first `materialize` of DAY with `engine: spark`, SIGKILLed (with its JVM) while Spark writes the marts, leaves
  no half-written partition visible: every lake Parquet file DuckDB can see is whole, and each mart partition is
  either absent or already holds the rows the finished build holds;
- `kubeledger demo` of the same day then recovers from the kill on a Spark standalone cluster (a Master and one
  Worker of 2 cores on 127.0.0.1, started from the pyspark distribution: tests/fixtures/spark_standalone.py; the
  workdir's kubeledger.yaml switched to `lake.spark.master: spark://127.0.0.1:<port>`), and gives the marts
  `engine: duckdb` gives for the same day (1e-9), and the rest of the product (serving copy, Parquet export) is
  built from them as usual; the marts Spark wrote to the lake equal the DuckDB engine's row for row
  (tests/fixtures/spark_compare.py) and hold the contract's types. This is the group's parity check of the two
  engines on a built day, and its one day on a cluster: the executors are separate JVMs the Worker launched, they
  reach the driver on 127.0.0.1 (the product binds it there for a loopback master) and write the same lake and
  state folders. The demo day has on-demand, spot and GPU nodes on two providers and on-premises, load balancers
  and volumes; both engines' workdirs also set a user price sheet with a spot column and shared namespaces with a
  monthly overhead, so the price sheet's and the sharing policy's SQL run on Spark too. The same comparison at
  scale is `python -m bench --engine spark`.

Each CLI run starts its own JVM (a subprocess is what the kill needs). The killed run is the workdir's first, so
the parity is checked on a build that had to clean up after a kill (left by local mode, recovered by a cluster),
and the group builds the demo day on Spark twice (the killed run, the recovery), not three times. The cluster's
JVMs start while the killed run builds and are killed (their process groups) right after the recovery.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines import PROJECT_ROOT
from pipelines.engines.spark_metastore import check_metastore_home, configured_home, read_home
from pipelines.settings import load_settings
from pipelines.settings_models import SettingsError
from scripts.compare_marts import main as compare_marts
from tests.fixtures.parquet_contract import parquet_contract_mismatches
from tests.fixtures.pipeline_workdir import CONFIG, cli_args, cli_env, group_alive, run_cli
from tests.fixtures.prom_fleet import SHARED_NAMESPACE, write_price_sheet
from tests.fixtures.spark_compare import assert_lake_marts_equal
from tests.fixtures.spark_standalone import StandaloneCluster, spark_home

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DAY = date(2026, 11, 28)
# the policy both engines' workdirs set (tests/fixtures/prom_fleet.py's sheet: m5.large in us-east-1, a demo type)
POLICY = ("pricing: {instance_sheet: prices.csv}\n"
          f"sharing: {{shared_namespaces: [{SHARED_NAMESPACE}], monthly_overhead_usd: 120.0}}\n")
DUCKDB_CONFIG = CONFIG + POLICY
SPARK_CONFIG = "engine: spark\n" + DUCKDB_CONFIG
RUN_TIMEOUT_S = 1800
# lines only the JVM writes: the JDK's incubator warning, log4j's banner and its timestamped WARN/ERROR lines
JVM_NOISE = re.compile(r"incubator modules|log4j|^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|ERROR|INFO) ")


def spark_config(master: str | None = None, root: str | None = None) -> str:
    """SPARK_CONFIG with its one `lake` section (the Spark master, the lake's root) when either is given."""
    lake = {**({"root": root} if root else {}), **({"spark": {"master": master}} if master else {})}
    return SPARK_CONFIG + (f"lake: {json.dumps(lake)}\n" if lake else "")


def _workdir(tmp_path_factory, name: str, config: str) -> Path:
    wd = tmp_path_factory.mktemp(name)
    (wd / "kubeledger.yaml").write_text(config)
    write_price_sheet(wd / "prices.csv")
    return wd


# left out of the row comparison: the energy-weighted intensity and PUE of idle rows whose energy is float residue
# (ill-conditioned on either engine; compare.sh and the before/after mart comparisons leave them out too), and the
# recommendations' evidence JSON, compared below as JSON values (Spark and DuckDB print doubles differently)
SKIPPED = "carbon_intensity_g_per_kwh,pue,evidence"


def _evidence_equal(a: Path, b: Path) -> bool:
    con = duckdb.connect()
    con.execute("attach ? as a (read_only)", [str(a)])
    con.execute("attach ? as b (read_only)", [str(b)])
    pairs = con.execute("select x.evidence, y.evidence from a.marts.fct_recommendation_daily x full join "
                        "b.marts.fct_recommendation_daily y using (recommendation_id)").fetchall()
    for x, y in pairs:
        jx, jy = json.loads(x or "null"), json.loads(y or "null")
        if not isinstance(jx, dict) or not isinstance(jy, dict) or jx.keys() != jy.keys():
            return False
        for key, vx in jx.items():
            vy = jy[key]
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (vx, vy))
            if not (math.isclose(vx, vy, rel_tol=1e-9, abs_tol=1e-9) if numbers else vx == vy):
                return False
    return True


def _marts_equal(a: Path, b: Path) -> bool:
    rows_equal = compare_marts([str(a), str(b), "--rel", "1e-9", "--abs", "1e-9", "--skip", SKIPPED]) == 0
    return rows_equal and _evidence_equal(a, b)


def lake_partitions(lake: Path) -> dict[tuple[str, str, str], int]:
    """{(mart, cluster, usage_date): rows} of every mart partition a reader sees in the lake; reading every
    visible file whole (a truncated Parquet file fails here)."""
    out: dict[tuple[str, str, str], int] = {}
    con = duckdb.connect()
    for part in sorted((lake / "marts").glob("*/cluster=*/usage_date=*")):
        files = sorted(str(f) for f in part.glob("*.parquet"))
        rows = con.execute("select count(*) from read_parquet(?)", [files]).fetchone()[0] if files else 0
        out[(part.parent.parent.name, part.parent.name, part.name)] = rows
    return out


def raw_partitions_readable(lake: Path) -> int:
    """Every visible raw partition file of the lake reads whole; returns how many there are."""
    con = duckdb.connect()
    files = sorted(str(f) for f in (lake / "raw").glob("*/cluster=*/date=*/hour=*/*.parquet"))
    for f in files:
        con.execute("select count(*) from read_parquet(?)", [f]).fetchone()
    return len(files)


@dataclass
class KilledThenRecovered:
    """The Spark workdir after its first `materialize` was SIGKILLed mid-marts and `kubeledger demo` re-ran the day."""

    workdir: Path
    visible_after_kill: dict[tuple[str, str, str], int]  # the mart partitions a reader saw right after the kill
    raw_files_after_kill: int
    master: str  # the standalone cluster's URL the recovery ran on
    apps: list[dict]  # the applications its master knew after the recovery (its JSON)
    executor_logs: dict[str, str]  # the Worker's work dir after the recovery: <app>/<executor>/stderr -> text


# what Spark would write into its distribution or the code tree if the daemons or the driver fell back to defaults
NOT_WRITTEN = (spark_home() / "work", spark_home() / "logs", PROJECT_ROOT / "work", PROJECT_ROOT / "metastore_db",
               PROJECT_ROOT / "spark-warehouse", PROJECT_ROOT / "derby.log")


@pytest.fixture(scope="module")
def spark_demo(tmp_path_factory) -> KilledThenRecovered:
    """A fresh Spark workdir: its first `materialize` of DAY (local mode) killed while Spark writes the marts (what a
    reader sees is recorded at once), then `kubeledger demo` of DAY on the standalone cluster, the recovery the
    parity tests check. The cluster starts with the killed run and is stopped after the recovery, on failure too."""
    there_before = {p for p in NOT_WRITTEN if p.exists()}
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        cluster.start()
        demo = _kill_then_recover(tmp_path_factory, cluster)
    finally:
        cluster.stop()  # its JVMs' memory back before the other tests of the module
    assert {p for p in NOT_WRITTEN if p.exists()} == there_before
    return demo


def _kill_then_recover(tmp_path_factory, cluster: StandaloneCluster) -> KilledThenRecovered:
    wd = _workdir(tmp_path_factory, "spark-demo", SPARK_CONFIG)
    lake = wd / "wh" / "lake"
    proc = subprocess.Popen(cli_args(wd, "materialize", "--date", DAY.isoformat()), cwd=wd, env=cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while not _writing_marts(lake):
            assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before Spark wrote a mart"
            assert time.monotonic() < deadline, "Spark never started writing the marts"
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its JVM together
        proc.wait(timeout=30)
        end = time.monotonic() + 10
        while group_alive(proc.pid) and time.monotonic() < end:
            time.sleep(0.05)
        assert not group_alive(proc.pid)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    # what a reader sees now: whole files only (reading each visible file whole fails on a truncated one)
    visible, raw_files = lake_partitions(lake), raw_partitions_readable(lake)
    # the recovery on the standalone cluster: the same workdir, its one `lake` section naming the master
    cluster.wait_ready()
    (wd / "kubeledger.yaml").write_text(spark_config(master=cluster.master_url))
    settings = load_settings(wd / "kubeledger.yaml")
    assert settings.lake.spark.master == cluster.master_url and settings.lake_root == str(lake)
    recovered = run_cli(wd, "demo", "--date", DAY.isoformat(), timeout=RUN_TIMEOUT_S)
    # quiet: the JVM's own output (its start-up warnings, log4j) goes to state/spark/jvm.log, not to the console
    console = recovered.stdout + recovered.stderr
    assert not [ln for ln in console.splitlines() if JVM_NOISE.search(ln)], console[-3000:]
    assert JVM_NOISE.search((wd / "wh" / "state" / "spark" / "jvm.log").read_text(errors="replace"))
    logs = {str(f.relative_to(cluster.work_dir)): f.read_text(errors="replace")
            for f in sorted(cluster.work_dir.glob("app-*/*/stderr"))}
    return KilledThenRecovered(wd, visible, raw_files, cluster.master_url, cluster.apps_once_finished(), logs)


@pytest.fixture(scope="module")
def duckdb_demo(tmp_path_factory) -> Path:
    """The same `kubeledger demo` of DAY on the DuckDB engine."""
    wd = _workdir(tmp_path_factory, "duckdb-demo", DUCKDB_CONFIG)
    run_cli(wd, "demo", "--date", DAY.isoformat(), timeout=RUN_TIMEOUT_S)
    return wd


def test_demo_on_spark_gives_the_duckdb_marts(spark_demo: KilledThenRecovered, duckdb_demo: Path) -> None:
    spark_wd = spark_demo.workdir
    assert _marts_equal(duckdb_demo / "wh" / "kubeledger.duckdb", spark_wd / "wh" / "kubeledger.duckdb")
    # published and exported as with DuckDB: the serving copy and the Parquet export hold the Spark-built day
    with duckdb.connect(str(spark_wd / "wh" / "serving.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from marts.fct_allocation_daily where usage_date = ?",
                           [DAY]).fetchone()[0] > 0
    assert list((spark_wd / "wh" / "parquet").rglob("*.parquet"))
    # the lake holds the day's raw partitions and the marts' partitions; Spark's state stays under wh/state/spark
    lake = spark_wd / "wh" / "lake"
    assert raw_partitions_readable(lake) > 0
    assert {(m, d) for m, _c, d in lake_partitions(lake)} >= {("fct_allocation_daily", f"usage_date={DAY}")}
    assert (spark_wd / "wh" / "state" / "spark" / "metastore_db").is_dir()
    assert not (spark_wd / "metastore_db").exists() and not (spark_wd / "spark-warehouse").exists()


def test_the_recovery_ran_on_the_standalone_cluster(spark_demo: KilledThenRecovered) -> None:
    assert load_settings(spark_demo.workdir / "kubeledger.yaml").lake.spark.master == spark_demo.master
    # the recovery's application (the killed run was local mode), finished; its executors were the Worker's
    assert spark_demo.apps and {(a["name"], a["state"]) for a in spark_demo.apps} == {("kubeledger", "FINISHED")}, \
        spark_demo.apps
    assert spark_demo.executor_logs, "the Worker launched no executor"
    # they reached the driver on 127.0.0.1: a loopback master binds it there (Spark's default, the host's external
    # address, is where a firewall or a missing DNS entry stalls the executors)
    drivers = {m for text in spark_demo.executor_logs.values()
               for m in re.findall(r"CoarseGrainedScheduler@([^:\s\"]+):\d+", text)}
    assert drivers == {"127.0.0.1"}, drivers
    # every mart partition of the day is in the lake the driver's side reads (the executors wrote the same folders)
    assert {m for m, _c, d in lake_partitions(spark_demo.workdir / "wh" / "lake") if d == f"usage_date={DAY}"} >= {
        "fct_allocation_daily", "fct_node_energy_daily", "fct_cluster_daily"}


def test_the_lake_marts_equal_the_duckdb_marts_row_for_row(spark_demo: KilledThenRecovered,
                                                            duckdb_demo: Path) -> None:
    # what Spark wrote, before the warehouse load: every column, idle intensities included where energy is real
    print("\n".join(assert_lake_marts_equal(duckdb_demo / "wh" / "kubeledger.duckdb",
                                          spark_demo.workdir / "wh" / "lake")))


def _writing_marts(lake: Path) -> bool:
    """Spark is writing a mart: its staging folder (dynamic partition overwrite) or job folder exists."""
    root = lake / "marts"
    if not root.is_dir():
        return False
    return any(p.name.startswith((".spark-staging", "_temporary")) for mart in root.iterdir() if mart.is_dir()
               for p in mart.iterdir())


def test_sigkill_while_spark_writes_the_marts_then_rerun(spark_demo: KilledThenRecovered) -> None:
    assert spark_demo.raw_files_after_kill > 0
    final = lake_partitions(spark_demo.workdir / "wh" / "lake")
    assert {m for m, _c, _d in final} >= {"fct_allocation_daily", "fct_node_energy_daily", "fct_cluster_daily"}
    # each partition visible right after the kill was whole and final: absent or complete, never half-written
    for key, rows in spark_demo.visible_after_kill.items():
        assert key in final and rows == final[key], f"{key}: {rows} rows visible after the kill, {final.get(key)} built"
    # the recovery removed what the kill left (it failed before: CTAS refused the non-empty folder), and the common
    # reader's glob over a mart reads whole files only (it failed on the 0-byte staging files)
    lake = spark_demo.workdir / "wh" / "lake"
    assert not [p for p in (lake / "marts").rglob("*") if p.name.startswith(("_temporary", ".spark-staging-"))]
    con = duckdb.connect()
    for mart in sorted({m for m, _c, _d in final}):
        assert con.execute("select count(*) from read_parquet(?)", [f"{lake}/marts/{mart}/**/*.parquet"]).fetchone()[0] > 0


def test_the_lake_and_the_export_hold_the_contract_types(spark_demo: KilledThenRecovered) -> None:
    # every mart file Spark wrote, and the Parquet export of the Spark-built day: the contract's type per column
    # (fct_cluster_daily.hour_coverage was DECIMAL(27,6) in the lake: an integer divided by 24.0 on Spark)
    wh = spark_demo.workdir / "wh"
    for root in (wh / "lake" / "marts", wh / "parquet"):
        read, problems = parquet_contract_mismatches(root)
        assert read > 0 and not problems, "\n".join(problems)


def test_a_copied_workdir_writes_nowhere_until_relocated(spark_demo: KilledThenRecovered, tmp_path: Path) -> None:
    """The copy's run fails at its start naming the original's lake (it wrote its marts there before); `kubeledger
    lake relocate` re-registers every location in the copy, and again after its lake moved to another root. The
    one JVM of this test is relocate's own (Derby over JDBC, no Spark session): a few seconds."""
    original = spark_demo.workdir
    copy = tmp_path / "copy"
    shutil.copytree(original, copy, ignore=shutil.ignore_patterns("scratch"))
    run = subprocess.run(cli_args(copy, "materialize", "--date", DAY.isoformat()), cwd=copy, env=cli_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert (f"lake.root is {copy / 'wh' / 'lake'} but the Spark metastore" in run.stderr
            and f"holds tables at {original / 'wh' / 'lake'}; run `kubeledger lake relocate`" in run.stderr), run.stderr

    relocated = run_cli(copy, "lake", "relocate", timeout=300).stdout
    assert "re-registered" in relocated and "elsewhere" not in relocated, relocated
    settings = load_settings(copy / "kubeledger.yaml")
    assert check_metastore_home(settings) == configured_home(settings) == read_home(settings.spark_state_dir)

    # then the lake moves to another root: refused until relocated, and relocate finds nothing left at the old one
    (copy / "wh" / "lake").rename(copy / "moved-lake")
    (copy / "kubeledger.yaml").write_text(spark_config(root="moved-lake"))
    moved = load_settings(copy / "kubeledger.yaml")
    with pytest.raises(SettingsError, match=re.escape(f"holds tables at {copy / 'wh' / 'lake'}; run `kubeledger lake")):
        check_metastore_home(moved)
    again = run_cli(copy, "lake", "relocate", timeout=300).stdout
    assert "marts at " + str(copy / "moved-lake") in again and "elsewhere" not in again, again
    assert read_home(moved.spark_state_dir) == configured_home(moved)
    assert "nothing to change" in run_cli(copy, "lake", "relocate", timeout=300).stdout

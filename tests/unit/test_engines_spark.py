"""The spark engine's plumbing without a JVM: the session's settings, the per-call environment, dbt's command
line, and bringing the marts' Parquet back into DuckDB (window partitions replaced, contract types and order)."""

from __future__ import annotations

import json
import os
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.engines.marts_load import load_marts, mart_contracts
from pipelines.engines.spark import dbt_spark_args, spark_env
from pipelines.engines.spark_session import spark_conf
from pipelines.settings import load_settings


@pytest.fixture
def settings(tmp_path: Path):
    path = tmp_path / "kubeledger.yaml"
    path.write_text("engine: spark\nwarehouse: {path: wh/k.duckdb}\n"
                    "lake: {spark: {conf: {spark.sql.shuffle.partitions: 8}}}\nclusters: [{name: a}, {name: b}]\n")
    return load_settings(path)


def test_session_settings_stay_local_and_under_the_state_folder(settings, tmp_path: Path) -> None:
    conf = spark_conf(settings)
    state = tmp_path / "wh" / "state" / "spark"
    assert conf["spark.master"] == "local[2]" and conf["spark.driver.memory"] == "2g"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.sql.warehouse.dir"] == str(state / "warehouse")
    assert conf["spark.local.dir"] == str(state / "scratch")
    assert f"databaseName={state / 'metastore_db'};" in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert f"-Dderby.stream.error.file={state / 'derby.log'}" in conf["spark.driver.extraJavaOptions"]
    assert conf["spark.sql.shuffle.partitions"] == "8"  # the user's setting wins over the engine's default
    assert conf["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"


def test_a_cluster_master_does_not_bind_to_loopback(tmp_path: Path) -> None:
    path = tmp_path / "kubeledger.yaml"
    path.write_text("engine: spark\nlake: {spark: {master: yarn}}\n")
    conf = spark_conf(load_settings(path))
    assert conf["spark.master"] == "yarn" and "spark.driver.host" not in conf
    # a remote standalone master: Spark's default address, or the user's (the interface the executors reach)
    path.write_text("engine: spark\nlake: {spark: {master: 'spark://10.0.0.5:7077', "
                    "conf: {spark.driver.host: 10.0.0.9, spark.driver.bindAddress: 0.0.0.0}}}\n")
    conf = spark_conf(load_settings(path))
    assert (conf["spark.driver.host"], conf["spark.driver.bindAddress"]) == ("10.0.0.9", "0.0.0.0")


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "spark://localhost:7077"])
def test_a_standalone_master_on_loopback_binds_the_driver_to_loopback(tmp_path: Path, master: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Its executors run on this machine: the driver tells them 127.0.0.1. Before, only local masters were bound
    there and the driver offered the host's external address (192.0.2.2 here; tests/spark/test_spark_kill.py reads
    the address the executors were given)."""
    path = tmp_path / "kubeledger.yaml"
    path.write_text(f"engine: spark\nlake: {{spark: {{master: '{master}'}}}}\n")
    settings = load_settings(path)
    conf = spark_conf(settings)
    assert conf["spark.master"] == master
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    # the JVM starts with SPARK_LOCAL_IP=127.0.0.1, and the process's own environment is put back after
    pytest.importorskip("pyspark")
    from pipelines.engines import spark_session

    seen: dict[str, str | None] = {}

    def launch(conf: dict[str, str], jvm_log: Path) -> None:
        seen["SPARK_LOCAL_IP"] = os.environ.get("SPARK_LOCAL_IP")
        raise RuntimeError("no JVM in a unit test")

    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    monkeypatch.setattr(spark_session, "_launch_jvm", launch)
    monkeypatch.setattr(spark_session, "_SESSION", None)
    with pytest.raises(RuntimeError, match="no JVM"):
        spark_session.get_session(settings)
    assert seen == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert "SPARK_LOCAL_IP" not in os.environ


def test_dbt_call_environment_and_command_line(settings, tmp_path: Path) -> None:
    env = spark_env(settings)
    assert env["KUBELEDGER_LAKE"] == str(tmp_path / "wh" / "lake")
    assert env["KUBELEDGER_SPARK_DIR"] == str(tmp_path / "wh" / "state" / "spark")
    assert env["KUBELEDGER_SPARK_SHUFFLE_PARTITIONS"] == "8" and env["KUBELEDGER_SPARK_MASTER"] == "local[2]"
    args = dbt_spark_args(["build", "--vars", "{}"], tmp_path / "run")
    assert args[:3] == ["build", "--vars", "{}"]
    assert args[args.index("--target") + 1] == "spark"
    assert args[args.index("--target-path") + 1] == args[args.index("--log-path") + 1] == str(tmp_path / "run")


CONTRACT = [("usage_date", "date"), ("cluster", "varchar"), ("node", "varchar"), ("pods", "bigint"),
            ("cost", "double"), ("window_start", "timestamp")]


def _manifest(path: Path) -> Path:
    nodes = {
        "model.kubeledger.fct_x_daily": {
            "resource_type": "model", "fqn": ["kubeledger", "marts", "fct_x_daily"], "name": "fct_x_daily",
            "alias": "fct_x_daily", "columns": {n: {"name": n, "data_type": t} for n, t in CONTRACT}},
        "model.kubeledger.int_y": {
            "resource_type": "model", "fqn": ["kubeledger", "intermediate", "int_y"], "name": "int_y", "alias": "int_y",
            "columns": {"a": {"name": "a", "data_type": "int"}}},
    }
    path.write_text(json.dumps({"nodes": nodes}))
    return path


def _write_spark_like_parquet(lake: Path, rows: list[tuple]) -> None:
    """Parquet as Spark writes a partitioned table: cluster/usage_date in the path, other columns in Spark's
    types (int for bigint, columns in the model's select order minus the partition columns)."""
    (lake / "marts").mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("create table t (node varchar, pods integer, cost double, window_start timestamp, "
                "cluster varchar, usage_date date)")
    con.executemany("insert into t values (?, ?, ?, ?, ?, ?)", rows)
    con.execute(f"copy t to '{lake / 'marts' / 'fct_x_daily'}' (format parquet, partition_by (cluster, usage_date), "
                "overwrite_or_ignore true)")


def test_marts_come_back_by_contract_replacing_only_the_window(settings, tmp_path: Path) -> None:
    lake = Path(settings.lake_root)
    day, other = date(2026, 11, 28), date(2026, 11, 27)
    ts = datetime(2026, 11, 28)
    _write_spark_like_parquet(lake, [("n1", 3, 1.5, ts, "a", day), ("n2", 4, 2.5, ts, "a", day),
                                     ("n9", 9, 9.0, ts, "b", day), ("old", 1, 7.0, ts, "a", other)])
    manifest = _manifest(tmp_path / "manifest.json")
    assert list(mart_contracts(manifest)) == ["fct_x_daily"]
    with duckdb.connect(str(settings.warehouse_path)) as con:
        con.execute("create schema marts")
        con.execute("create table marts.fct_x_daily (usage_date date, cluster varchar, node varchar, pods bigint, "
                    "cost double, window_start timestamp)")
        con.execute("insert into marts.fct_x_daily values (?, 'a', 'stale', 1, 100, ?), (?, 'a', 'kept', 1, 5, ?), "
                    "(?, 'b', 'stale-b', 1, 1, ?)", [day, ts, other, ts, day, ts])

    loaded = load_marts(settings, manifest, datetime(2026, 11, 28), datetime(2026, 11, 29), cluster="a")

    assert loaded == {"fct_x_daily": 2}
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as con:
        cols = con.execute("select column_name, data_type from information_schema.columns where table_schema = "
                           "'marts' and table_name = 'fct_x_daily' order by ordinal_position").fetchall()
        rows = con.execute("select * from marts.fct_x_daily order by cluster, usage_date, node").fetchall()
    assert cols == [(n, t.upper()) for n, t in CONTRACT]
    assert rows == [(other, "a", "kept", 1, 5.0, ts), (day, "a", "n1", 3, 1.5, ts), (day, "a", "n2", 4, 2.5, ts),
                    (day, "b", "stale-b", 1, 1.0, ts)]  # cluster b was not built: left alone


def test_a_new_warehouse_gets_the_mart_tables_from_the_contract(settings, tmp_path: Path) -> None:
    day, ts = date(2026, 11, 28), datetime(2026, 11, 28)
    _write_spark_like_parquet(Path(settings.lake_root), [("n1", 3, 1.5, ts, "a", day), ("n9", 9, 9.0, ts, "b", day)])
    loaded = load_marts(settings, _manifest(tmp_path / "manifest.json"), ts, datetime(2026, 11, 29))
    assert loaded == {"fct_x_daily": 2}
    # a day with no Parquet empties the warehouse's partitions of it
    assert load_marts(settings, _manifest(tmp_path / "manifest.json"), datetime(2026, 11, 27), ts) == \
        {"fct_x_daily": 0}
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as con:
        assert con.execute("select count(*) from marts.fct_x_daily").fetchone()[0] == 2


def test_raw_lake_keeps_the_configured_days_and_every_mart(tmp_path: Path) -> None:
    from pipelines.engines.spark import prune_lake_raw

    path = tmp_path / "kubeledger.yaml"
    path.write_text("lake: {keep_raw_days: 2}\n")
    settings = load_settings(path)
    lake = Path(settings.lake_root)
    for d in ("2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28"):
        (lake / "raw" / "node_hours" / "cluster=a" / f"date={d}" / "hour=00").mkdir(parents=True)
        (lake / "marts" / "fct_x_daily" / "cluster=a" / f"usage_date={d}").mkdir(parents=True)
    removed = prune_lake_raw(settings, date(2026, 11, 28))
    assert [p.name for p in removed] == ["date=2026-11-25"]
    assert sorted(p.name for p in (lake / "raw" / "node_hours" / "cluster=a").iterdir()) == \
        ["date=2026-11-26", "date=2026-11-27", "date=2026-11-28"]
    assert len(list((lake / "marts" / "fct_x_daily" / "cluster=a").iterdir())) == 4


def test_a_contract_that_gained_columns_adds_them_to_the_warehouse_table(settings, tmp_path: Path) -> None:
    """A mart whose contract gained a column since the warehouse's table was made (an upgrade): the load adds it
    (NULL on the older days it keeps), as `append_new_columns` does on the duckdb engine, instead of failing on
    '24 columns but 34 values'."""
    day, other, ts = date(2026, 11, 28), date(2026, 11, 27), datetime(2026, 11, 28)
    _write_spark_like_parquet(Path(settings.lake_root), [("n1", 3, 1.5, ts, "a", day)])
    old = [c for c in CONTRACT if c[0] != "window_start"]
    with duckdb.connect(str(settings.warehouse_path)) as con:
        con.execute("create schema marts")
        con.execute(f"create table marts.fct_x_daily ({', '.join(f'{n} {t}' for n, t in old)})")  # noqa: S608
        con.execute("insert into marts.fct_x_daily (usage_date, cluster, node, pods, cost) "
                    "values (?, 'a', 'kept', 1, 5)", [other])
    assert load_marts(settings, _manifest(tmp_path / "manifest.json"), ts, datetime(2026, 11, 29)) == \
        {"fct_x_daily": 1}
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as con:
        rows = con.execute("select node, window_start from marts.fct_x_daily order by usage_date").fetchall()
    assert rows == [("kept", None), ("n1", ts)]


def test_a_mart_without_cluster_comes_back_whole(settings, tmp_path: Path) -> None:
    """The cloud bill (fct_cloud_cost_daily) has no cluster: Spark rebuilds it whole, and it is brought back whole,
    whatever the window and the cluster of the run."""
    lake = Path(settings.lake_root) / "marts" / "fct_bill_daily"
    lake.mkdir(parents=True)
    bill = duckdb.connect()
    bill.execute("create table t as select * from (values (date '2026-02-01', 'Usage', 7.0), "
                 "(date '2026-11-28', 'Tax', 1.0)) v(usage_date, charge_category, billed_cost)")
    bill.execute(f"copy t to '{lake / 'part-0.parquet'}' (format parquet)")
    contract = [("usage_date", "date"), ("charge_category", "varchar"), ("billed_cost", "double")]
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"nodes": {"model.kubeledger.fct_bill_daily": {
        "resource_type": "model", "fqn": ["kubeledger", "marts", "fct_bill_daily"], "name": "fct_bill_daily",
        "alias": "fct_bill_daily", "columns": {n: {"name": n, "data_type": t} for n, t in contract}}}}))
    with duckdb.connect(str(settings.warehouse_path)) as wh:
        wh.execute("create schema marts")
        wh.execute("create table marts.fct_bill_daily (usage_date date, charge_category varchar, billed_cost double)")
        wh.execute("insert into marts.fct_bill_daily values (date '2025-01-01', 'Usage', 99)")  # restated away

    assert load_marts(settings, manifest, datetime(2026, 11, 28), datetime(2026, 11, 29), cluster="a") == \
        {"fct_bill_daily": 2}
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as wh:
        assert wh.execute("select * from marts.fct_bill_daily order by usage_date").fetchall() == [
            (date(2026, 2, 1), "Usage", 7.0), (date(2026, 11, 28), "Tax", 1.0)]

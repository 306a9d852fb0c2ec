"""The Parquet lake: hive layout, idempotent re-export, atomic partition replacement, schema-only empty hours."""

from datetime import date, datetime

import duckdb
import pytest

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources.demo import extract_demo_hours
from pipelines.warehouse import lake
from pipelines.warehouse.landing import replace_partitions

DAY = date(2026, 11, 27)
H0 = datetime(2026, 11, 27, 10)
H1 = datetime(2026, 11, 27, 11)


@pytest.fixture()
def con(raw_warehouse):
    return raw_warehouse


def land(con, name, hours, nodes=4):
    batch = extract_demo_hours(ClusterSettings(name=name, demo=DemoSettings(nodes=nodes, pods_per_node=3)), hours)
    replace_partitions(con, batch.batches, batch.partitions)


def read_lake(root, table):
    """Rows of a lake table as DuckDB reads the hive layout (cluster from the path), sorted."""
    files = f"{root}/raw/{table}/*/*/*/*.parquet"
    return duckdb.connect().execute(
        "select * exclude (date, hour) from read_parquet(?, hive_partitioning = true, "
        "hive_types = {'cluster': varchar, 'date': varchar, 'hour': varchar}) order by all", [files]).fetchall()


def file_columns(path):
    return [r[0] for r in duckdb.connect().execute(
        f"describe select * from read_parquet('{path}', hive_partitioning = false)").fetchall()]  # noqa: S608


def warehouse_rows(con, table, columns):
    return con.execute(f"select {', '.join(columns)} from raw.{table} order by all").fetchall()  # noqa: S608


def test_layout_and_round_trip(con, tmp_path):
    land(con, "c1", [H0, H1])
    root = tmp_path / "lake"
    rows = lake.export_raw_day(con, root, DAY)
    part = root / "raw" / "container_hours" / "cluster=c1" / "date=2026-11-27" / "hour=10" / "part-0.parquet"
    assert part.is_file()
    assert (root / "raw" / "carbon_intensity_hours" / "part-0.parquet").is_file()
    # cluster is in the path only: the file's columns never collide with the partition columns
    file_cols = file_columns(part)
    assert "cluster" not in file_cols and "hour_ts" in file_cols
    columns = [*file_cols, "cluster"]
    assert read_lake(root, "container_hours") == warehouse_rows(con, "container_hours", columns)
    assert rows["container_hours"] == con.execute("select count(*) from raw.container_hours").fetchone()[0] > 0
    # every hour of the day exists, the hours without data as schema-only files
    hours = sorted(p.name for p in (part.parent.parent).iterdir())
    assert hours == [f"hour={h:02d}" for h in range(24)]
    empty = part.parent.parent / "hour=03" / "part-0.parquet"
    assert duckdb.connect().execute(f"select count(*) from '{empty}'").fetchone()[0] == 0  # noqa: S608
    assert file_columns(empty) == file_cols


def test_reexport_is_idempotent_and_replaces_only_its_partitions(con, tmp_path):
    land(con, "c1", [H0])
    land(con, "c2", [H0])
    root = tmp_path / "lake"
    lake.export_raw_day(con, root, DAY)
    before = {t: read_lake(root, t) for t in ("container_hours", "node_hours")}
    lake.export_raw_day(con, root, DAY)
    assert {t: read_lake(root, t) for t in before} == before
    # fewer rows for c1 at H0 in the warehouse: the lake's c1 hour shrinks, c2 stays
    con.execute("delete from raw.container_hours where cluster = 'c1' and pod_uid in "
                "(select pod_uid from raw.container_hours where cluster = 'c1' limit 2)")
    lake.write_raw_partitions(con, root, "container_hours", [{"cluster": "c1", "hour_ts": H0}])
    assert read_lake(root, "container_hours") == [r for r in before["container_hours"]
                                                  if r[-1] == "c2" or r in read_lake(root, "container_hours")]
    assert sum(1 for r in read_lake(root, "container_hours") if r[-1] == "c2") == \
        sum(1 for r in before["container_hours"] if r[-1] == "c2")
    assert len(read_lake(root, "container_hours")) < len(before["container_hours"])
    assert not [p for p in (root / "raw" / "container_hours").iterdir() if p.name.startswith("_tmp")]


def test_a_failure_mid_write_leaves_the_old_partition(con, tmp_path, monkeypatch):
    land(con, "c1", [H0, H1])
    root = tmp_path / "lake"
    lake.export_raw_day(con, root, DAY)
    before = read_lake(root, "container_hours")
    con.execute("delete from raw.container_hours")
    real_copy = lake._copy
    calls = []

    def failing_copy(c, query, params, target):
        calls.append(target)
        if len(calls) == 2:  # the second partition: the first is already swapped in, this one dies half-written
            target.write_bytes(b"PAR1 half a file")
            raise OSError("disk full")
        return real_copy(c, query, params, target)

    monkeypatch.setattr(lake, "_copy", failing_copy)
    with pytest.raises(OSError, match="disk full"):
        lake.write_raw_partitions(con, root, "container_hours",
                                  [{"cluster": "c1", "hour_ts": H0}, {"cluster": "c1", "hour_ts": H1}])
    after = read_lake(root, "container_hours")  # every file still reads: nothing half-written is visible
    hour_col = file_columns(lake.partition_dir(root, "container_hours", "c1", H0) / "part-0.parquet").index("hour_ts")
    emptied = {r[hour_col] for r in before} - {r[hour_col] for r in after}
    assert len(emptied) == 1  # the first partition was replaced (with nothing), the failed one kept its old rows
    assert [r for r in before if r[hour_col] not in emptied] == after
    assert not [p for p in (root / "raw" / "container_hours").iterdir() if p.name.startswith("_tmp")]


def test_cluster_names_are_escaped_in_paths(con, tmp_path):
    land(con, "prod/eu=1", [H0])
    root = tmp_path / "lake"
    lake.export_raw_day(con, root, DAY)
    assert (root / "raw" / "node_hours" / "cluster=prod%2Feu%3D1").is_dir()
    assert {r[-1] for r in read_lake(root, "node_hours")} == {"prod/eu=1"}  # readers undo the escaping


def test_snapshot_tables_are_replaced_whole(con, tmp_path):
    root = tmp_path / "lake"
    con.execute("insert into raw.price_custom values ('f.json', 'CPU', 0.03, 'hourly', 0.03, now()::timestamp)")
    assert lake.write_raw_snapshot(con, root, "price_custom") == 1
    con.execute("delete from raw.price_custom")
    assert lake.write_raw_snapshot(con, root, "price_custom") == 0
    snapshot = root / "raw" / "price_custom" / "part-0.parquet"
    assert duckdb.connect().execute(f"select count(*) from '{snapshot}'").fetchone()[0] == 0  # noqa: S608
    assert sorted(p.name for p in (root / "raw" / "price_custom").iterdir()) == ["part-0.parquet"]


def test_unknown_tables_are_refused(con, tmp_path):
    with pytest.raises(lake.LandingError):
        lake.write_raw_snapshot(con, tmp_path, "nope")
    with pytest.raises(lake.LandingError):
        lake.write_raw_partitions(con, tmp_path, "price_custom", [])

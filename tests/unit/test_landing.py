"""Landing: every write replaces exactly its partitions in one transaction; a failure leaves the old rows."""

from datetime import datetime

import pandas as pd
import pytest

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources.demo import extract_demo_hours
from pipelines.warehouse.connection import connect, ensure_raw_schema
from pipelines.warehouse.landing import LandingError, replace_partitions

H0 = datetime(2026, 11, 27, 10)
H1 = datetime(2026, 11, 27, 11)


@pytest.fixture()
def con(tmp_path):
    c = connect(tmp_path / "w.duckdb")
    ensure_raw_schema(c)
    yield c
    c.close()


def snapshot(con, table):
    return con.execute(f"select * exclude (_extracted_at) from raw.{table} order by all").fetchall()  # noqa: S608


def test_rerunning_an_hour_gives_the_same_rows(con):
    cluster = ClusterSettings(name="c1", demo=DemoSettings(nodes=6, pods_per_node=4))
    first = extract_demo_hours(cluster, [H0, H1])
    replace_partitions(con, first.batches, first.partitions)
    before = {t: snapshot(con, t) for t in first.batches}
    again = extract_demo_hours(cluster, [H0])
    replace_partitions(con, again.batches, again.partitions)
    after = {t: snapshot(con, t) for t in first.batches}
    assert before == after
    assert con.execute("select count(distinct hour_ts) from raw.node_hours").fetchone()[0] == 2


def test_other_clusters_and_hours_are_untouched(con):
    a = extract_demo_hours(ClusterSettings(name="a", demo=DemoSettings(nodes=4, pods_per_node=3)), [H0])
    b = extract_demo_hours(ClusterSettings(name="b", demo=DemoSettings(nodes=4, pods_per_node=3)), [H0])
    replace_partitions(con, a.batches, a.partitions)
    replace_partitions(con, b.batches, b.partitions)
    n_b = con.execute("select count(*) from raw.container_hours where cluster = 'b'").fetchone()[0]
    replace_partitions(con, {"container_hours": a.batches["container_hours"].head(3)}, a.partitions)
    assert con.execute("select count(*) from raw.container_hours where cluster = 'a'").fetchone()[0] == 3
    assert con.execute("select count(*) from raw.container_hours where cluster = 'b'").fetchone()[0] == n_b


def test_a_failed_write_leaves_the_previous_rows(con):
    cluster = ClusterSettings(name="c1", demo=DemoSettings(nodes=4, pods_per_node=3))
    good = extract_demo_hours(cluster, [H0])
    replace_partitions(con, good.batches, good.partitions)
    before = {t: snapshot(con, t) for t in good.batches}
    broken = dict(good.batches)
    # the second table's batch fails half-way through the transaction (NOT NULL violated)
    bad_nodes = good.batches["node_hours"].copy()
    bad_nodes.loc[0, "node"] = None
    broken["node_hours"] = bad_nodes
    with pytest.raises(Exception):  # noqa: B017 - DuckDB's constraint error class varies by version
        replace_partitions(con, broken, good.partitions)
    assert {t: snapshot(con, t) for t in good.batches} == before


def test_rows_outside_the_named_partitions_are_rejected(con):
    cluster = ClusterSettings(name="c1", demo=DemoSettings(nodes=4, pods_per_node=3))
    r = extract_demo_hours(cluster, [H0, H1])
    with pytest.raises(LandingError, match="outside the partitions"):
        replace_partitions(con, r.batches, [{"cluster": "c1", "hour_ts": H0}])
    assert con.execute("select count(*) from raw.container_hours").fetchone()[0] == 0


def test_unknown_tables_and_columns_are_refused(con):
    with pytest.raises(LandingError, match="not a landing table"):
        replace_partitions(con, {"users; drop table x": pd.DataFrame()}, [{"cluster": "c", "hour_ts": H0}])
    frame = pd.DataFrame([{"cluster": "c", "hour_ts": H0, "namespace": "n", "evil": 1}])
    with pytest.raises(LandingError, match="unknown column"):
        replace_partitions(con, {"namespace_hours": frame}, [{"cluster": "c", "hour_ts": H0}])

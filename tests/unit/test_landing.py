"""Landing: every write replaces exactly its partitions in one transaction; a failure leaves the old rows."""

from datetime import UTC, datetime

import pandas as pd
import pytest

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources.demo import extract_demo_hours
from pipelines.warehouse.landing import LandingError, replace_partitions

H0 = datetime(2026, 11, 27, 10)
H1 = datetime(2026, 11, 27, 11)


@pytest.fixture()
def con(raw_warehouse):
    return raw_warehouse


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


def test_one_delete_replaces_partitions_across_clusters_and_hours(con):
    """The partition set spans two clusters and two hours (one delete per table); a third hour and a third
    cluster stay; a batch with one row outside the set is refused before anything is touched."""
    H2 = datetime(2026, 11, 27, 12)
    small = DemoSettings(nodes=4, pods_per_node=3)
    runs = {name: extract_demo_hours(ClusterSettings(name=name, demo=small), [H0, H1, H2]) for name in "abc"}
    for r in runs.values():
        replace_partitions(con, r.batches, r.partitions)
    before = snapshot(con, "container_hours")
    parts = [{"cluster": c, "hour_ts": h} for c in "ab" for h in (H0, H1)]
    inside = {t: pd.concat([runs[c].batches[t] for c in "ab"], ignore_index=True) for t in ("container_hours",
                                                                                          "node_hours")}
    inside = {t: f[f["hour_ts"] < H2].reset_index(drop=True) for t, f in inside.items()}
    stray = runs["c"].batches["container_hours"].head(1)  # cluster c, hour H0: not named
    bad = {**inside, "container_hours": pd.concat([inside["container_hours"], stray], ignore_index=True)}
    with pytest.raises(LandingError, match=r"raw\.container_hours: 1 row\(s\) fall outside the partitions"):
        replace_partitions(con, bad, parts)
    assert snapshot(con, "container_hours") == before
    # the named partitions are replaced by a batch with fewer rows; every other partition keeps its rows
    kept = {t: f.groupby(["cluster", "hour_ts"]).head(2).reset_index(drop=True) for t, f in inside.items()}
    written = replace_partitions(con, kept, parts)
    assert written == {t: len(f) for t, f in kept.items()}
    counts = dict(((c, h), n) for c, h, n in con.execute(
        "select cluster, hour_ts, count(*) from raw.container_hours group by all").fetchall())
    for c in "abc":
        for h in (H0, H1, H2):
            expected = 2 if c in "ab" and h != H2 else len(runs[c].batches["container_hours"].query("hour_ts == @h"))
            assert counts[(c, h)] == expected, (c, h)
    # a tz-aware partition value names the same hour as the naive UTC rows
    aware = [{"cluster": "a", "hour_ts": H2.replace(tzinfo=UTC)}]
    only_a2 = runs["a"].batches["node_hours"].query("hour_ts == @H2")
    assert replace_partitions(con, {"node_hours": only_a2}, aware) == {"node_hours": len(only_a2)}

"""The Spark metastore's home, checked without a JVM (pipelines/engines/spark_metastore.py): a copied workdir, a
changed lake.root and a warehouse restored from a backup at another path each fail a Spark run at its start in one
line naming `kubeledger lake relocate`; the relocation's rewrite of the metastore's locations, as a plan.

Before the check, each of these wrote silently into the other lake (issue 30): the metastore keeps absolute
locations, and nothing compared them with the settings."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from pipelines.engines.spark_metastore import (
    HOME_FILE,
    LakeMoved,
    Location,
    MetastoreHome,
    check_metastore_home,
    configured_home,
    plan_relocation,
    read_home,
    registered_home,
    write_home,
)
from pipelines.runs import materialize_days
from pipelines.settings import load_settings
from pipelines.settings_models import SettingsError

CONFIG = "engine: spark\nwarehouse: {path: wh/k.duckdb}\nclusters: [{name: a}]\n"


def _workdir(root: Path, config: str = CONFIG):
    """A Spark workdir whose metastore exists (an empty metastore_db folder stands for Derby's) and was recorded
    by its first run."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "kubeledger.yaml").write_text(config)
    settings = load_settings(root / "kubeledger.yaml")
    assert check_metastore_home(settings) == configured_home(settings)  # no metastore yet: recorded for the run
    (settings.spark_state_dir / "metastore_db").mkdir(parents=True)
    return settings


def test_the_first_run_records_the_places_and_later_runs_pass(tmp_path: Path) -> None:
    settings = _workdir(tmp_path / "wd")
    recorded = read_home(settings.spark_state_dir)
    assert recorded == MetastoreHome(str(tmp_path / "wd" / "wh" / "lake"), str(settings.spark_state_dir / "warehouse"))
    assert check_metastore_home(settings) == recorded


def test_a_copied_workdir_fails_at_start_naming_both_lakes(tmp_path: Path) -> None:
    _workdir(tmp_path / "orig")
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    copy = load_settings(tmp_path / "copy" / "kubeledger.yaml")
    with pytest.raises(LakeMoved) as err:
        check_metastore_home(copy)
    msg = str(err.value)
    assert "\n" not in msg
    assert f"lake.root is {tmp_path / 'copy' / 'wh' / 'lake'} but the Spark metastore" in msg
    assert f"holds tables at {tmp_path / 'orig' / 'wh' / 'lake'}" in msg
    assert "`kubeledger lake relocate`" in msg and msg.startswith(str(tmp_path / "copy" / "kubeledger.yaml"))


def test_a_changed_lake_root_fails_at_start(tmp_path: Path) -> None:
    settings = _workdir(tmp_path / "wd")
    (tmp_path / "wd" / "kubeledger.yaml").write_text(CONFIG + f"lake: {{root: {tmp_path / 'new-lake'}}}\n")
    moved = load_settings(tmp_path / "wd" / "kubeledger.yaml")
    with pytest.raises(LakeMoved, match=r"lake\.root is .*new-lake but the Spark metastore .* holds tables at "
                                        r".*wd/wh/lake; run `kubeledger lake relocate` .* or point lake\.root back"):
        check_metastore_home(moved)
    # the same folder by another spelling is the same lake
    (tmp_path / "wd" / "kubeledger.yaml").write_text(CONFIG + "lake: {root: wh/../wh/lake}\n")
    assert check_metastore_home(load_settings(tmp_path / "wd" / "kubeledger.yaml")) == read_home(
        settings.spark_state_dir)


def test_a_warehouse_restored_at_another_path_fails_at_start(tmp_path: Path) -> None:
    # the lake is shared (an absolute lake.root): only the warehouse folder, with the metastore, moved
    config = CONFIG + f"lake: {{root: {tmp_path / 'lake'}}}\n"
    _workdir(tmp_path / "a", config)
    shutil.copytree(tmp_path / "a" / "wh", tmp_path / "backup" / "wh")  # the backup
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "kubeledger.yaml").write_text(config)
    shutil.copytree(tmp_path / "backup" / "wh", tmp_path / "b" / "wh")  # restored to another path
    restored = load_settings(tmp_path / "b" / "kubeledger.yaml")
    with pytest.raises(LakeMoved) as err:
        check_metastore_home(restored)
    assert f"holds its databases at {tmp_path / 'a' / 'wh' / 'state' / 'spark' / 'warehouse'}" in str(err.value)
    assert "kubeledger lake relocate" in str(err.value)


def test_the_cli_run_fails_before_dagster_starts(tmp_path: Path) -> None:
    _workdir(tmp_path / "orig")
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    copy = load_settings(tmp_path / "copy" / "kubeledger.yaml")
    with pytest.raises(SettingsError, match="kubeledger lake relocate"):  # the CLI prints it as one line, exit 2
        materialize_days(copy, date(2026, 11, 28), date(2026, 11, 28))
    assert not (tmp_path / "copy" / "wh" / "dagster").exists()


def test_a_metastore_without_a_record_is_left_to_the_session(tmp_path: Path) -> None:
    settings = _workdir(tmp_path / "wd")
    (settings.spark_state_dir / HOME_FILE).unlink()  # made by an older kubeledger
    assert check_metastore_home(settings) is None
    # what adopt_metastore reads through the session, turned into the home it compares
    found = registered_home({"default": f"file:{settings.spark_state_dir}/warehouse",
                             "marts": f"file:{settings.spark_state_dir}/warehouse/marts.db"},
                            {"fct_cluster_daily": f"file:{settings.lake_root}/marts/fct_cluster_daily"})
    assert found == configured_home(settings)
    assert registered_home({"default": "file:/x/warehouse"}, {}) == MetastoreHome("", "/x/warehouse")


def test_relocation_rewrites_the_lake_and_the_warehouse_folder_prefixes(tmp_path: Path) -> None:
    old_wh, old_lake = "file:/old/wh/state/spark/warehouse", "file:/old/wh/lake"
    databases = {"default": old_wh, "marts": f"{old_wh}/marts.db", "intermediate": f"{old_wh}/intermediate.db"}
    marts = {"fct_cluster_daily": f"{old_lake}/marts/fct_cluster_daily"}
    rows = [Location("database", 1, old_wh), Location("database", 2, f"{old_wh}/intermediate.db"),
            Location("storage", 10, f"{old_lake}/marts/fct_cluster_daily"),
            Location("storage", 11, f"{old_lake}/marts/fct_cluster_daily/cluster=a/usage_date=2026-11-28"),
            Location("path", 12, f"{old_lake}/marts/fct_cluster_daily"),
            Location("storage", 13, f"{old_wh}/intermediate.db/int_node_hours_recorded/cluster=a"),
            Location("storage", 14, "file:/old/wh/lakeside/other"),  # a prefix of the name, not of the path
            Location("storage", 15, "s3a://bucket/elsewhere")]
    target = MetastoreHome(str(tmp_path / "lake"), str(tmp_path / "wh" / "warehouse"))
    plan = plan_relocation(databases, marts, rows, target)
    new = {row.key: value for row, value in plan.changes}
    assert new == {1: f"file:{tmp_path}/wh/warehouse", 2: f"file:{tmp_path}/wh/warehouse/intermediate.db",
                   10: f"file:{tmp_path}/lake/marts/fct_cluster_daily",
                   11: f"file:{tmp_path}/lake/marts/fct_cluster_daily/cluster=a/usage_date=2026-11-28",
                   12: f"file:{tmp_path}/lake/marts/fct_cluster_daily",
                   13: f"file:{tmp_path}/wh/warehouse/intermediate.db/int_node_hours_recorded/cluster=a"}
    assert sorted(r.key for r in plan.left) == [14, 15]
    # relocating again changes nothing
    again = [Location(r.kind, r.key, new.get(r.key, r.value)) for r in rows]
    moved_dbs = {k: new.get(i, v) for (k, v), i in zip(databases.items(), (1, 0, 2), strict=True)}
    assert not plan_relocation(moved_dbs, {"fct_cluster_daily": new[10]}, again, target).changes


def test_the_record_is_written_whole(tmp_path: Path) -> None:
    write_home(tmp_path, MetastoreHome("s3a://bucket/lake", "/srv/wh/state/spark/warehouse"))
    assert read_home(tmp_path) == MetastoreHome("s3a://bucket/lake", "/srv/wh/state/spark/warehouse")
    assert [p.name for p in tmp_path.iterdir()] == [HOME_FILE]

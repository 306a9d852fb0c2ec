"""The engine and lake settings: defaults, allowed values, one-line errors naming file, key and allowed values."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.check_config import _engine_check
from pipelines.settings import SettingsError, load_settings


def _load(tmp_path: Path, text: str):
    path = tmp_path / "kubeledger.yaml"
    path.write_text(text)
    return load_settings(path)


def test_defaults(tmp_path: Path) -> None:
    s = _load(tmp_path, "clusters: [{name: a}]\n")
    assert s.engine == "duckdb"
    assert s.lake_root == str(tmp_path / "warehouse" / "lake")
    assert s.spark_state_dir == tmp_path / "warehouse" / "state" / "spark"
    assert (s.lake.spark.master, s.lake.spark.driver_memory, s.lake.spark.conf) == ("local[2]", "2g", {})


def test_spark_engine_and_lake(tmp_path: Path) -> None:
    s = _load(tmp_path, "engine: spark\nlake:\n  root: s3a://bucket/kl/\n  keep_raw_days: 7\n  spark:\n"
                        "    master: local[*]\n    driver_memory: 1536m\n"
                        "    conf: {spark.sql.shuffle.partitions: 8, spark.sql.adaptive.enabled: true}\n")
    assert s.engine == "spark" and s.lake_root == "s3a://bucket/kl" and s.lake.keep_raw_days == 7
    assert s.lake.spark.conf == {"spark.sql.shuffle.partitions": "8", "spark.sql.adaptive.enabled": "true"}
    assert _load(tmp_path, "lake: {root: lake2}\n").lake_root == str(tmp_path / "lake2")


@pytest.mark.parametrize(("text", "key", "allowed"), [
    ("engine: sparky\n", "engine", "duckdb, spark"),
    ("engine: true\n", "engine", "quote the value"),
    ("lake: {root: 'ftp://x'}\n", "lake.root", "s3a://"),
    ("lake: {keep_raw_days: 0}\n", "lake.keep_raw_days", "1..3650"),
    ("lake: {spark: {master: 'local[x]'}}\n", "lake.spark.master", "local[N]"),
    ("lake: {spark: {driver_memory: 100m}}\n", "lake.spark.driver_memory", "at least 512m"),
    ("lake: {spark: {conf: {spark.master: yarn}}}\n", "lake.spark.conf.spark.master", "lake.spark.master"),
    ("lake: {spark: {conf: {hadoop.x: y}}}\n", "lake.spark.conf", "starting with 'spark.'"),
    ("lake: {spark: {conf: {spark.x: 1.5}}}\n", "lake.spark.conf.spark.x", "quote other values"),
    ("lake: {spark: {executors: 3}}\n", "lake.spark.executors", "driver_memory"),
])
def test_bad_values_fail_at_load_in_one_line(tmp_path: Path, text: str, key: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as err:
        _load(tmp_path, text)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'kubeledger.yaml'}: {key}: ")
    assert allowed in message


def test_check_config_shows_engine(tmp_path: Path) -> None:
    duck = _engine_check(_load(tmp_path, "lake: {root: /data/lake}\n"))
    assert duck.ok and duck.name == "engine duckdb" and "/data/lake" in duck.detail
    spark = _engine_check(_load(tmp_path, "engine: spark\nlake: {spark: {conf: {spark.hadoop.fs.s3a.secret.key: "
                                          "s3cr3t, spark.sql.shuffle.partitions: 4}}}\n"))
    assert spark.name == "engine spark" and "master local[2]" in spark.detail
    assert "spark.sql.shuffle.partitions=4" in spark.detail and "s3cr3t" not in spark.detail


def test_reference_is_current_on_local_spark_when_every_seed_table_is_whole(tmp_path: Path) -> None:
    """On Spark the seeds are tables of the local metastore, not of the DuckDB file: the reference job is skipped
    when the fingerprint matches and every seed's table folder holds a completed write (before, the DuckDB check
    always failed on Spark and every daily run reloaded the seeds: ~45 s, BENCHMARKS.md)."""
    from pipelines import SEEDS_DIR
    from pipelines.reference_inputs import record_reference, reference_is_current

    s = _load(tmp_path, "engine: spark\nclusters: [{name: a}]\n")
    record_reference(s)
    assert not reference_is_current(s)  # no metastore yet
    tables = s.spark_state_dir / "warehouse" / "seeds.db"
    (s.spark_state_dir / "metastore_db").mkdir(parents=True)
    seeds = sorted(p.stem for p in SEEDS_DIR.glob("*.csv"))
    for name in seeds:
        (tables / name).mkdir(parents=True)
        (tables / name / "part-00000.parquet").write_bytes(b"x")
    assert not reference_is_current(s)  # files without _SUCCESS: a write that did not complete
    for name in seeds:
        (tables / name / "_SUCCESS").write_bytes(b"")
    assert reference_is_current(s)
    (tables / seeds[0] / "_SUCCESS").unlink()
    assert not reference_is_current(s)  # one seed table missing: the job runs
    (tables / seeds[0] / "_SUCCESS").write_bytes(b"")
    remote = _load(tmp_path, "engine: spark\nclusters: [{name: a}]\nlake: {spark: {master: 'spark://h:7077'}}\n")
    assert not reference_is_current(remote)  # a remote cluster's executors write elsewhere: always run
    # a standalone cluster on this machine's loopback writes the same folders: skipped as in local mode (it re-ran
    # the seeds on every run before)
    loopback = _load(tmp_path, "engine: spark\nclusters: [{name: a}]\nlake: {spark: {master: 'spark://127.0.0.1:7077'}}\n")
    assert reference_is_current(loopback)


@pytest.mark.parametrize(("master", "here"), [
    ("local", True), ("local[2]", True), ("local[*]", True), ("spark://127.0.0.1:7077", True),
    ("spark://localhost:7077", True), ("spark://127.0.1.1:7077", True), ("spark://10.0.0.5:7077", False),
    ("spark://spark-master.analytics.svc:7077", False), ("spark://localhost.example.com:7077", False),
    ("yarn", False), ("k8s://https://127.0.0.1:6443", False),
])
def test_which_masters_run_on_this_machine(master: str, here: bool) -> None:
    from pipelines.settings_rules import on_this_machine

    assert on_this_machine(master) is here


@pytest.mark.parametrize("name", ["spark.driver.host", "spark.driver.bindAddress"])
def test_the_driver_address_is_the_users_with_a_remote_master_only(tmp_path: Path, name: str) -> None:
    """A remote cluster's executors must reach the driver at an address only the user knows (a pod IP, the interface
    facing the cluster): it was refused whatever the master. Local and loopback masters keep the engine's 127.0.0.1."""
    s = _load(tmp_path, f"engine: spark\nlake: {{spark: {{master: 'spark://10.0.0.5:7077', conf: {{{name}: 10.0.0.9}}}}}}\n")
    assert s.lake.spark.conf == {name: "10.0.0.9"}
    for master in ("local[2]", "spark://127.0.0.1:7077"):
        with pytest.raises(SettingsError) as err:
            _load(tmp_path, f"engine: spark\nlake: {{spark: {{master: '{master}', conf: {{{name}: 10.0.0.9}}}}}}\n")
        assert str(err.value) == (f"{tmp_path / 'kubeledger.yaml'}: lake.spark.conf.{name}: is not allowed with master "
                                  f"{master}: the engine binds the driver to 127.0.0.1 (set it with a remote master only)")

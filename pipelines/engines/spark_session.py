"""The one Spark session of a process, started from the settings (`lake.spark`), reused by every dbt call.

Each JVM start costs 30-80 s here, so the session outlives a dbt call: dbt-spark's `method: session` finds it with
`SparkSession.builder.getOrCreate()`. Everything Spark writes locally (the embedded Derby metastore, the managed
tables' folder, scratch space, derby.log, jvm.log) goes under `<warehouse folder>/state/spark/`, never into the
working directory or the code tree. The JVM's own console output (its start-up warnings, log4j's lines) goes to
`jvm.log` there, not to the user's terminal: the run's log names the file. In local mode, and with a standalone
master on this machine's loopback (spark://127.0.0.1:7077), the driver binds to 127.0.0.1 only and tells the
executors that address (Spark would otherwise pick the host's external address, and a firewall or a missing DNS
entry stalls it; on a loopback cluster the executors are on this machine). With a remote master (another host,
yarn, k8s://) the executors must reach the driver from elsewhere: Spark's default address stands, or the user's
`spark.driver.host` / `spark.driver.bindAddress` in `lake.spark.conf`, and SPARK_LOCAL_IP is left as the
environment has it.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.environ import scoped_environ
from pipelines.settings_rules import on_this_machine

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.settings import Settings

LOOPBACK = "127.0.0.1"
STALE_SCRATCH_S = 3600  # scratch folders of a killed JVM are removed by the next session after an hour
JVM_LOG_MAX_BYTES = 8 * 2**20  # jvm.log is started afresh at a JVM start once it is past this
_LOCK = threading.RLock()
_SESSION: tuple[tuple[Any, ...], SparkSession] | None = None


def spark_conf(settings: Settings) -> dict[str, str]:
    """The session's settings: the engine's own (state folders, loopback, UTC, Parquet timestamps), then the
    user's `lake.spark.conf` (which cannot override the reserved ones: settings_rules.SPARK_CONF_RESERVED)."""
    spark = settings.lake.spark
    state = settings.spark_state_dir
    conf = {
        "spark.master": spark.master,
        "spark.app.name": "kubeledger",
        "spark.driver.memory": spark.driver_memory,
        "spark.sql.warehouse.dir": str(state / "warehouse"),
        "spark.local.dir": str(state / "scratch"),
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true",
        # derby.log and Derby's home beside the metastore, not in the working directory
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state} -Dderby.stream.error.file={state / 'derby.log'}",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.timestampType": "TIMESTAMP_NTZ",  # naive UTC timestamps, as in the DuckDB warehouse
        # partition values stay text: a cluster named "01" must not become the number 1
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # never INT96: DuckDB reads it as written
        "spark.sql.sources.partitionOverwriteMode": "dynamic",  # insert_overwrite replaces only the built days
        "spark.sql.shuffle.partitions": "4",  # a day of one cluster is small; 200 tasks per shuffle are overhead
        # Spark inlines every CTE, so a model's plan repeats its shared CTEs (int_volumes_allocated_hourly scans one
        # input 100+ times): the optimizer's constraint propagation and the dynamic partition pruning subqueries
        # over such plans cost more than they save on a day's partitions (the daily build -19 %, BENCHMARKS.md)
        "spark.sql.constraintPropagation.enabled": "false",
        "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.log.level": "ERROR",  # from the JVM's start: dbt reports the failures that matter
        "spark.ui.showConsoleProgress": "false",
    }
    if on_this_machine(spark.master):
        conf["spark.driver.host"] = LOOPBACK
        conf["spark.driver.bindAddress"] = LOOPBACK
    conf.update(spark.conf)
    return conf


def _prune_scratch(scratch: Path) -> None:
    """Remove scratch folders a killed JVM left (a stopped one removes its own)."""
    if not scratch.is_dir():
        return
    cutoff = time.time() - STALE_SCRATCH_S
    for p in scratch.iterdir():
        if p.stat().st_mtime < cutoff:
            shutil.rmtree(p, ignore_errors=True)


def get_session(settings: Settings) -> SparkSession:
    """The process's session for these settings, started on first use (a different Spark configuration stops the
    previous session first; the JVM and its driver memory stay those of the first start)."""
    global _SESSION
    conf = spark_conf(settings)
    key = tuple(sorted(conf.items()))
    with _LOCK:
        if _SESSION is not None and _SESSION[0] == key:
            return _SESSION[1]
        stop_session()
        from pyspark.sql import SparkSession

        state = settings.spark_state_dir
        for sub in ("warehouse", "scratch"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        _prune_scratch(state / "scratch")
        builder = SparkSession.builder.enableHiveSupport()
        for name, value in conf.items():
            builder = builder.config(name, value)
        # the JVM reads SPARK_LOCAL_IP when it starts; the process environment is put back right after
        env = {"SPARK_LOCAL_IP": LOOPBACK} if on_this_machine(settings.lake.spark.master) else {}
        with scoped_environ(env):
            _launch_jvm(conf, state / "jvm.log")
            session = builder.getOrCreate()
        # pyspark logs every failed statement with its Java stack; dbt reports the error once, shorter
        logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
        logging.getLogger("py4j").setLevel(logging.WARNING)  # a DEBUG line per JVM call would flood the run log
        _SESSION = (key, session)
        return session


def _launch_jvm(conf: dict[str, str], jvm_log: Path) -> None:
    """Start the process's JVM (py4j's gateway) with its stdout and stderr in `jvm_log`, as pyspark would start it
    (spark-submit with these settings), unless it runs already: pyspark lets the JVM write to the terminal, where
    its start-up warnings and log4j lines would break the CLI's quiet output. A stopped session keeps its JVM, so
    this happens once per process."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    if jvm_log.is_file() and jvm_log.stat().st_size > JVM_LOG_MAX_BYTES:
        jvm_log.unlink()
    log.info("Spark's JVM writes its own output to %s", jvm_log)
    with jvm_log.open("ab") as out:  # the child holds its own descriptor; ours is closed once it started
        gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(conf.items())),
                                 popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def stop_session() -> None:
    """Stop the process's session (tests, a configuration change); the next get_session starts a new one."""
    global _SESSION
    with _LOCK:
        if _SESSION is not None:
            _SESSION[1].stop()
            _SESSION = None


def jvm_pids() -> list[int]:
    """Process ids of the JVM this process started (py4j's gateway), for RSS measurements."""
    if _SESSION is None:
        return []
    from pyspark import SparkContext

    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    return [proc.pid] if proc is not None else []

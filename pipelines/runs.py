"""Running a day range through the Dagster jobs the schedules use (reference → hourly extract → daily build,
checks and publish), in process, with one-line failures. The CLI's materialize, backfill, rebuild and demo
commands call `materialize_days`."""

from __future__ import annotations

import os
import re
import socket
from datetime import date
from pathlib import Path
from typing import Any

from pipelines.days import record_first_day
from pipelines.engines.spark_metastore import adopt_metastore, check_metastore_home
from pipelines.redaction import redact
from pipelines.settings import Settings
from pipelines.timeutil import days_inclusive


class RunFailed(Exception):
    """A job failed; the message is one line."""


def materialize_days(settings: Settings, start: date, end: date, cluster: str | None = None,
                     reporter: Any = None, extract: bool = True) -> dict[str, float]:
    """Run reference → hourly extract (one run over the range; skipped with `extract=False`) → daily build +
    checks + publish, through the same Dagster jobs the schedules use. `end` is inclusive. The caller checks the
    dates first (pipelines.days.check_range)."""
    from pipelines.progress import Reporter

    reporter = reporter or Reporter()
    # Spark: a copied warehouse or a changed lake.root fails here, in one line, before anything starts
    home = check_metastore_home(settings) if settings.engine == "spark" else True
    reporter.start_stage("setup")
    if cluster is not None:
        settings.cluster(cluster)  # fail early with the list of configured clusters
    if home is None:  # a metastore older than its record: read once through the session (the jobs reuse it)
        from pipelines.engines.spark_session import get_session

        adopt_metastore(settings, get_session(settings))
    for folder in (settings.warehouse_path.parent, settings.serving_path.parent):
        folder.mkdir(parents=True, exist_ok=True)  # dbt's first seed opens the warehouse file before any step
    record_first_day(settings)  # the partitions stay put from now on (pipelines/days.py)

    from pipelines.dagster_defs.event_storage import (
        batched_event_writes,
        close_sqlite_connections,
        keep_sqlite_connections,
    )
    from pipelines.dagster_defs.instance import open_instance

    instance = open_instance(settings, lambda msg: reporter.echo(str(msg)))
    keep_sqlite_connections(instance)  # one connection per file, not one per event (dagster_defs/event_storage.py)
    try:
        with batched_event_writes():  # a ranged run's per-partition events in one transaction each
            return _run_jobs(settings, instance, start, end, cluster, reporter, extract)
    finally:
        close_sqlite_connections(instance)


def _run_jobs(settings: Settings, instance: Any, start: date, end: date, cluster: str | None, reporter: Any,
              extract: bool) -> dict[str, float]:
    from pipelines.dagster_defs.instance import RUN_HOST_TAG, RUN_PID_TAG
    from pipelines.dagster_defs.partitions import RANGE_END_TAG, RANGE_START_TAG
    from pipelines.dagster_defs.resources import CLUSTER_TAG, pinned_run_config
    from pipelines.definitions import build_definitions
    from pipelines.progress import capture_stdout, observe_landing, run_logger_def
    from pipelines.reference_inputs import record_reference, reference_is_current
    from pipelines.timeutil import daily_range_keys, hourly_range_keys

    defs = build_definitions(settings)
    own_tags = {RUN_PID_TAG: str(os.getpid()), RUN_HOST_TAG: socket.gethostname()}
    pinned = pinned_run_config(settings)  # every run of this command uses the settings it started with
    logger = run_logger_def()
    days = len(days_inclusive(start, end))
    clusters = 1 if cluster else len(settings.clusters)
    observer = reporter.observer
    if observer is not None:
        observer.expect(hours=days * 24 * clusters, days=days)
    reporter.set_status("setup", "ok", "Dagster instance and definitions")
    reporter.finish_stage()

    def run(job_name: str, tags: dict[str, str] | None = None, partition_key: str | None = None) -> None:
        job = defs.resolve_job_def(job_name).with_logger_defs({"kubeledger": logger})
        config = {**pinned, "loggers": {"kubeledger": {}}}
        with capture_stdout(), observe_landing(observer.landed if observer else (lambda _r: None)):
            result = job.execute_in_process(instance=instance, tags={**own_tags, **(tags or {})},
                                            run_config=config, partition_key=partition_key, raise_on_error=False)
        reporter.finish_stage()
        if not result.success:
            raise RunFailed(_failure_line(job_name, result, settings))

    # the one channel of a cluster selection: a run tag every asset and check of the run reads
    cluster_tags = {CLUSTER_TAG: cluster} if cluster else {}
    if reference_is_current(settings):  # seeds and price files unchanged since the last good reference run
        reporter.start_stage("reference")
        reporter.set_status("reference", "skipped", "inputs unchanged since the last run")
        reporter.finish_stage()
    else:
        run("reference")
        record_reference(settings)
    if extract:
        first_hour, last_hour = hourly_range_keys(start, end)
        run("extract_hourly", tags={RANGE_START_TAG: first_hour, RANGE_END_TAG: last_hour, **cluster_tags})
    first, last = daily_range_keys(start, end)
    if start == end:
        run("daily_warehouse", partition_key=first, tags=cluster_tags or None)
    else:
        run("daily_warehouse", tags={RANGE_START_TAG: first, RANGE_END_TAG: last, **cluster_tags})
    return dict(reporter.timings)


DBT_FAILED_RE = re.compile(r"The dbt CLI process with command\s+`\S+ (\w+).*?failed with exit code `(\d+)`", re.S)


def error_line(message: str) -> str:
    """The first line of an error, without the exception's module path; dbt's failures said in a few words."""
    dbt = DBT_FAILED_RE.search(message)
    if dbt:
        return f"dbt {dbt.group(1)} failed (exit code {dbt.group(2)})"
    lines = [ln for ln in message.strip().splitlines() if ln.strip()]
    first = re.sub(r"^[\w.]+\.(\w+(Error|Exception)): ", r"\1: ", lines[0]) if lines else "failed"
    return first[:300]


def user_error(error: Any) -> Any:
    """The error a user can act on: Dagster wraps the source's own exception (SourceError: "cluster prod: cannot
    reach Prometheus at ...") in "Error occurred while executing op"; take the cause then."""
    while error is not None and getattr(error, "cause", None) is not None and (
            "DagsterExecutionStepExecutionError" in (getattr(error, "cls_name", "") or "")
            or "Error occurred while executing" in (error.message or "")):
        error = error.cause
    return error


def setting_named(message: str, settings: Settings | None) -> str:
    """`message`, with the key it comes from when it names a path a setting places: a step's "Could not read from
    file /data/w.duckdb" or a price file's bad row then says which key of which file to fix."""
    if settings is None:
        return message
    from pipelines.settings import written_locations

    places = [(loc.key, loc.path) for loc in written_locations(settings)]
    places += [(f"pricing.{name}", settings.resolve(value)) for name in ("instance_sheet", "node_csv", "custom_file")
               if (value := getattr(settings.pricing, name))]
    for i, c in enumerate(settings.clusters):
        places += [(f"clusters[{i}].prometheus.{name}", Path(value).expanduser())
                   for name in ("bearer_token_file", "client_cert_file", "client_key_file", "ca_file")
                   if (value := getattr(c.prometheus, name))]
    for key, path in sorted(places, key=lambda kp: -len(str(kp[1]))):  # the most specific path first
        if key not in message and re.search(re.escape(str(path)) + r"(?![\w-])", message):
            return f"{message} ({key} in {settings.source_file})" if settings.source_file else f"{message} ({key})"
    return message


def _failure_line(job_name: str, result: Any, settings: Settings | None = None) -> str:
    """One line: the failed step and its error, the checks that failed, and whether anything was published."""
    parts = []
    published = False
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error = user_error(event.step_failure_data.error)
            text = redact(error_line(error.message if error else ""))
            if error is not None and error.cls_name == "SourceAuthError":
                text = text.split(": ", 1)[-1]  # the line says it all: "Prometheus at ... answered 401 ..."
            parts.append(f"step {event.step_key}: {setting_named(text, settings)}")
        elif event.event_type_value == "STEP_SUCCESS" and (event.step_key or "").startswith("serving"):
            published = True
    failed = [e for e in result.get_asset_check_evaluations()
              if not e.passed and getattr(e.severity, "value", "ERROR") != "WARN"]
    if failed:
        parts.append(f"{len(failed)} failed check{'s' if len(failed) != 1 else ''}: "
                     + ", ".join(f"{c.asset_key.to_user_string()} {c.check_name}" for c in failed[:5]))
    if job_name == "daily_warehouse" and not published:
        parts.append("nothing was published (the serving copy is unchanged)")
    elif job_name == "extract_hourly" and parts:
        parts.append("the day was not built or published; re-run it once the source answers")
    return f"job {job_name} failed" + (f": {'; '.join(parts)}" if parts else "")

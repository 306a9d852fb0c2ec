"""`kubeledger check-config`: the settings load (which validates every key and that named files exist), then every
configured file is parsed and every configured service is asked one cheap question, with short timeouts and no
retries. Each check is reported as ok or FAILED with the reason; the exit code is 1 if any failed.

The sources' own clients are used (pipelines/sources/*), read-only: nothing is written."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TextIO

from pipelines.settings import Location, Settings, written_locations
from pipelines.timeutil import HOUR, hour_floor, utc_now


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    # urllib3's "HTTPConnectionPool(...): Max retries exceeded ... [Errno 111] Connection refused" -> the reason
    errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if errno:
        text = re.sub(r"HTTPS?ConnectionPool\(.*$", errno.group(1).strip(), text)
    return text[:limit] + ("…" if len(text) > limit else "")


def _probe(name: str, fn: Callable[[], str]) -> Check:
    try:
        return Check(name, True, fn())
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the others
        return Check(name, False, _one_line(exc))


def _pricing_checks(settings: Settings) -> list[Check]:
    from pipelines.sources import pricing

    p = settings.pricing
    loaders: list[tuple[str, str | None, Callable[[Any], Any]]] = [
        ("pricing.instance_sheet", p.instance_sheet, pricing.load_price_sheet),
        ("pricing.node_csv", p.node_csv, pricing.load_node_price_csv),
        ("pricing.custom_file", p.custom_file, lambda path: pricing.load_custom_prices(path, p.custom_convention)),
    ]
    out = []
    for key, value, load in loaders:
        if not value:
            continue
        path = settings.resolve(value)
        out.append(_probe(f"{key} {path}", lambda load=load, path=path: f"{load(path).rows()} rows"))
    return out


def _prometheus(cluster: Any, timeout_s: float) -> str:
    from pipelines.sources.prometheus import PrometheusClient

    quick = replace(cluster.prometheus, timeout_s=timeout_s, retries=0)
    client = PrometheusClient(quick, cluster.name, connect_timeout_s=timeout_s)
    info = client.buildinfo()
    version = info.get("version")
    return f"{quick.url} answers" + (f" (version {version})" if version else " (no build info: not Prometheus?)")


def _kubernetes(cluster: Any, timeout_s: float) -> str:
    from kubernetes import client as k8s

    from pipelines.sources.kubernetes import build_api_client

    api = build_api_client(cluster)
    try:
        info = k8s.VersionApi(api).get_code(_request_timeout=timeout_s)
    except Exception as exc:
        raise RuntimeError(f"{api.configuration.host}: {_one_line(exc)}") from exc
    finally:
        api.close()
    return f"{api.configuration.host} answers (Kubernetes {info.git_version})"


def _carbon(settings: Settings, zone: str, timeout_s: float) -> str:
    from pipelines.sources.carbon import PROVIDERS, ElectricityMapsClient

    c = replace(settings.carbon, timeout_s=timeout_s)
    if c.provider == ElectricityMapsClient.name and not c.token():
        raise ValueError(f"no token: set the environment variable {c.token_env} (carbon.token_env)")
    client: Any = PROVIDERS[c.provider](c, retries=0)
    hour = hour_floor(utc_now()) - 2 * HOUR
    fetched = client.fetch_hours(zone, hour, hour + HOUR)
    if fetched.failures:
        failure = fetched.failures[0]
        status = f"HTTP {failure['status']}: " if failure.get("status") else ""
        raise ValueError(f"{failure['request']}: {status}{failure['error']}")
    return f"{client.base_url} answers ({len(fetched.rows)} hour(s) for zone {zone})"


def _carbon_zone(settings: Settings) -> str:
    for c in settings.clusters:
        if c.carbon_zone:
            return c.carbon_zone
    return "DE"


def _boavizta(settings: Settings, timeout_s: float) -> str:
    from pipelines.sources.boavizta import BoaviztaClient

    url = settings.boavizta.url or ""
    client = BoaviztaClient(url, timeout_s=timeout_s, verify_tls=settings.boavizta.verify_tls, retries=0)
    try:
        version = client.version()
    except Exception as exc:
        raise RuntimeError(f"{url}: {_one_line(exc)}") from exc
    return f"{url} answers (Boavizta API {version})"


def _engine_check(settings: Settings) -> Check:
    """The engine dbt runs on; for spark, the lake and session settings, and whether pyspark and Java are there."""
    if settings.engine != "spark":
        return Check("engine duckdb", True, f"dbt on the warehouse file; lake (unused) {settings.lake_root}")
    import importlib.util
    import shutil

    spark = settings.lake.spark
    detail = (f"lake {settings.lake_root} (raw kept {settings.lake.keep_raw_days} days), master {spark.master}, "
              f"driver memory {spark.driver_memory}, {len(spark.conf)} extra setting(s)"
              + "".join(f"; {k}={v}" for k, v in sorted(spark.conf.items()) if "secret" not in k.lower()))
    missing = [what for what, ok in (
        ("pyspark and dbt-spark (pip install -e '.[spark]')",
         importlib.util.find_spec("pyspark") is not None and importlib.util.find_spec("dbt.adapters.spark")),
        ("Java 17 (`java` on PATH or JAVA_HOME)", shutil.which("java") or os.environ.get("JAVA_HOME")),
    ) if not ok]
    return Check("engine spark", not missing, detail + ("; missing: " + ", ".join(missing) if missing else ""))


def _location_check(loc: Location) -> Check:
    """Whether this process may create or replace a place a run writes (that it could be a file or folder there at
    all was checked when the settings loaded; permissions are checked here, as the API reads them read-only)."""
    folder = loc.path.parent if loc.kind == "file" else loc.path
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    writable = existing is not None and os.access(existing, os.W_OK)
    detail = ("exists" if loc.path.exists() else "will be created") if writable else \
        f"cannot be written ({existing} is not writable): fix the permissions or change {loc.key}"
    return Check(f"{loc.key} {loc.path}", writable, detail)


def run_checks(settings: Settings, timeout_s: float = 5.0) -> list[Check]:
    from pipelines.days import DateError, first_day, newest_day

    checks = [Check("settings", True, f"{settings.source_file or 'built-in defaults'}: "
                                      f"{len(settings.clusters)} cluster(s), carbon {settings.carbon.provider}")]
    try:
        first = first_day(settings)
        checks.append(Check("days", True, f"{first.day} ({first.why}) .. {newest_day()} (yesterday, UTC)"))
    except DateError as exc:
        checks.append(Check("days", False, str(exc)))
    folder = settings.warehouse_path.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    writable = existing is not None and os.access(existing, os.W_OK)
    checks.append(Check(f"warehouse folder {folder}", writable,
                        "exists" if folder.exists() and writable else "will be created" if writable
                        else f"cannot be written ({existing} is not writable)"))
    checks += [_location_check(loc) for loc in written_locations(settings) if not loc.derived]
    checks.append(_engine_check(settings))
    dagster = getattr(settings, "dagster", None)
    if dagster is not None and getattr(dagster, "storage", "sqlite") == "postgres":
        from pipelines.dagster_defs.instance import postgres_url_problem

        problem = postgres_url_problem(settings)
        checks.append(Check("dagster storage (postgres)", problem is None, problem or "URL is set"))
    checks += _pricing_checks(settings)
    if settings.billing.focus_path:
        from pipelines.sources.focus import bill_location, describe_bills

        checks.append(_probe(f"billing.focus_path {bill_location(settings, 'focus_path')}",
                             lambda: describe_bills(settings)))
    if settings.billing.cur2_path:
        from pipelines.sources.cur2 import describe_cur2
        from pipelines.sources.focus import bill_location

        checks.append(_probe(f"billing.cur2_path {bill_location(settings, 'cur2_path')}",
                             lambda: describe_cur2(settings)))
    for cluster in settings.clusters:
        if cluster.source == "prometheus":
            checks.append(_probe(f"cluster {cluster.name}: prometheus",
                                 lambda cluster=cluster: _prometheus(cluster, timeout_s)))
        else:
            checks.append(Check(f"cluster {cluster.name}: {cluster.source}", True, "generated data, no connection"))
        if cluster.kubernetes.enabled:
            checks.append(_probe(f"cluster {cluster.name}: kubernetes API",
                                 lambda cluster=cluster: _kubernetes(cluster, timeout_s)))
    provider = settings.carbon.provider
    from pipelines.sources.carbon import PROVIDERS, HttpCarbonClient

    if issubclass(PROVIDERS[provider], HttpCarbonClient):  # the API providers answer a cheap question
        zone = _carbon_zone(settings)
        checks.append(_probe(f"carbon: {provider}", lambda: _carbon(settings, zone, timeout_s)))
    else:
        checks.append(Check(f"carbon: {provider}", True, "no API to call"))
    if settings.boavizta.url:
        checks.append(_probe("boavizta", lambda: _boavizta(settings, timeout_s)))
    else:
        checks.append(Check("boavizta", True, "the bundled Boavizta table (boavizta.url is not set)"))
    return checks


def print_checks(settings: Settings, timeout_s: float = 5.0, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    checks = run_checks(settings, timeout_s)
    for check in checks:
        out.write(f"  {'ok' if check.ok else 'FAILED':<7}{check.name}: {check.detail}\n")
    failed = [c for c in checks if not c.ok]
    out.write(f"{len(failed)} of {len(checks)} checks failed\n" if failed else f"all {len(checks)} checks passed\n")
    out.flush()
    return 1 if failed else 0

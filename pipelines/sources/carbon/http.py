"""The HTTP plumbing every carbon-intensity API provider shares: session with retries, and one fetch loop that
splits a range into provider-sized windows and records each failing window instead of raising."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import duckdb
import pandas as pd
import requests
from requests.adapters import HTTPAdapter

from pipelines.sources.base import ExtractResult
from pipelines.sources.faults import (
    DEFAULT_BUDGET_S,
    Budget,
    is_source_wide,
    kind_of_exception,
    kind_of_status,
    retry_policy,
)
from pipelines.timeutil import hour_floor, naive_utc, normalise_hours, runs_of_hours, utc_now

log = logging.getLogger(__name__)

MAX_WINDOW = timedelta(days=10)  # Electricity Maps past-range: at most 10 days (240 hourly points) per call


@dataclass
class ZoneFetch:
    """What one zone's fetch produced: hourly rows plus the windows that failed."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0


class CarbonClient(Protocol):
    """An API provider: hourly rows of one zone for [start, end)."""

    provider: str

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch: ...


def session_with_retries(retries: int, backoff_factor: float) -> requests.Session:
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry_policy(retries, backoff_factor))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(value: str) -> datetime:
    return naive_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))


def error_message(resp: requests.Response) -> str:
    """The server's own message: Electricity Maps uses `error`/`message`, FastAPI apps `detail`."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip()[:500] or resp.reason or ""
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            if body.get(key):
                return str(body[key])
    return str(body)[:500]


def windows(start: datetime, end: datetime, size: timedelta) -> Iterator[tuple[datetime, datetime]]:
    cur = start
    while cur < end:
        nxt = min(cur + size, end)
        yield cur, nxt
        cur = nxt


class HttpCarbonClient:
    """Base of the API providers: subclasses set `name`, `path`, the default URL and `params`/`json_error`."""

    name = ""
    path = ""
    default_url = ""
    json_error = "response is not JSON"

    def __init__(self, base_url: str | None, timeout_s: float, verify_tls: bool, retries: int,
                 backoff_factor: float, session: requests.Session | None, budget_s: float = DEFAULT_BUDGET_S) -> None:
        self.base_url = (base_url or self.default_url).rstrip("/") + "/"
        self.timeout_s = timeout_s
        self.verify_tls = verify_tls
        self.session = session or session_with_retries(retries, backoff_factor)
        self.headers: dict[str, str] = {"Accept": "application/json"}
        self.budget = Budget(budget_s)
        self.tripped: str | None = None  # the source-wide failure that stopped this run's requests

    @property
    def provider(self) -> str:
        """The value written in raw.carbon_intensity_hours.provider."""
        return self.name

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch:
        raise NotImplementedError

    def extract(self, zones: list[str], hours: list[datetime], con: duckdb.DuckDBPyConnection | None = None,
                clusters: object = None) -> ExtractResult:
        return extract_with_client(self, zones, hours, con)

    def _get(self, params: dict[str, str]) -> requests.Response:
        # (connect, read) timeouts, never far past the source's budget; verify stays on unless the operator
        # turned it off in settings
        timeout = self.budget.timeout(self.timeout_s)
        return self.session.get(self.base_url + self.path.lstrip("/"), params=params, headers=self.headers,
                                timeout=(min(10.0, timeout), timeout), verify=self.verify_tls)

    def failure(self, zone: str, start: datetime, end: datetime, status: int | None, error: str,
                kind: str = "no_data") -> dict[str, Any]:
        """A failing zone-window as a JSON-safe record; in the log file only (the asset prints one summary)."""
        log.info("%s %s [%s, %s): %s %s", self.name, zone, iso(start), iso(end), status, error)
        return {"provider": self.name, "zone": zone, "start": iso(start), "end": iso(end),
                "request": self.base_url + self.path, "status": status, "kind": kind, "error": error}

    def _refused(self, zone: str, w_start: datetime, w_end: datetime) -> dict[str, Any] | None:
        """A failure record instead of a request when the source already failed as a whole or ran out of time."""
        if self.tripped:
            return self.failure(zone, w_start, w_end, None, f"not requested: {self.tripped}", "skipped")
        if self.budget.spent():
            return self.failure(zone, w_start, w_end, None,
                                f"not requested: the {self.budget.seconds:g} s budget was spent", "budget")
        return None

    def _failed(self, record: dict[str, Any]) -> dict[str, Any]:
        if is_source_wide(record["kind"]) and not self.tripped:
            self.tripped = f"{self.name} failed earlier in this run ({record['kind']}: {record['error'][:200]})"
        return record

    def fetch_windows(self, zone: str, start: datetime, end: datetime, out: ZoneFetch,
                      params: Callable[[datetime, datetime], dict[str, str]]) -> Iterator[tuple[datetime, datetime, Any]]:
        """(window start, window end, parsed JSON body) per ≤ 10-day window of [start, end) that answered 200
        with JSON; every other window is appended to `out.failures` and skipped."""
        for w_start, w_end in windows(naive_utc(start), naive_utc(end), MAX_WINDOW):
            refused = self._refused(zone, w_start, w_end)
            if refused:
                out.failures.append(refused)
                continue
            out.requests += 1
            try:
                resp = self._get(params(w_start, w_end))
                text = resp.text  # read here: a body cut off mid-way raises now, not in the parser
            except requests.RequestException as exc:
                out.failures.append(self._failed(self.failure(zone, w_start, w_end, None,
                                                              f"{type(exc).__name__}: {exc}",
                                                              kind_of_exception(exc))))
                continue
            if resp.status_code != 200:
                out.failures.append(self._failed(self.failure(zone, w_start, w_end, resp.status_code,
                                                              error_message(resp),
                                                              kind_of_status(resp.status_code))))
                continue
            try:
                body = json.loads(text)
            except ValueError:
                out.failures.append(self.failure(zone, w_start, w_end, 200, self.json_error, "not_json"))
                continue
            yield w_start, w_end, body


# --- the cached extract every API provider runs ---------------------------------------------------------------

TABLE = "carbon_intensity_hours"
REFRESH_WINDOW = timedelta(hours=48)  # providers revise recent hours: always re-fetch them
COLUMNS = {"provider": "string", "zone": "string", "hour_ts": "datetime64[us]",
           "carbon_intensity_g_per_kwh": "float64", "is_estimated": "boolean", "estimation_method": "string",
           "emission_factor_type": "string", "coverage": "float64"}


def empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()})


def _cached_hours(con: duckdb.DuckDBPyConnection, provider: str, zones: list[str],
                  hours: list[datetime]) -> set[tuple[str, datetime]]:
    if not zones or not hours:
        return set()
    rows = con.execute(
        "select zone, hour_ts from raw.carbon_intensity_hours where provider = ? and zone in (select unnest(?)) "
        "and hour_ts between ? and ? and carbon_intensity_g_per_kwh is not null",
        [provider, zones, min(hours), max(hours)],
    ).fetchall()
    return {(z, ts) for z, ts in rows}


def _missing_hours(provider: str, zone: str, start: datetime, end: datetime,
                   rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A record of the hours an answered window left without a value (the models fall back for those hours)."""
    have = {r["hour_ts"] for r in rows if r["carbon_intensity_g_per_kwh"] is not None}
    wanted = int((end - start) / timedelta(hours=1))
    missing = wanted - len(have)
    if missing <= 0:
        return []
    kind = "no_data" if not have else "partial"
    return [{"provider": provider, "zone": zone, "start": iso(start), "end": iso(end), "status": 200, "kind": kind,
             "error": f"no value for {missing} of {wanted} hours", "hours_missing": missing}]


def extract_with_client(client: CarbonClient, zones: list[str], hours: list[datetime],
                        con: duckdb.DuckDBPyConnection | None = None, *, now: datetime | None = None) -> ExtractResult:
    """Rows for raw.carbon_intensity_hours for `zones` x `hours` (hour starts, UTC) from an API client.

    With `con`, hours already landed with a value are skipped, except the last 48 h (providers revise them).
    A failing zone-window never fails the run: it is listed in metadata["failures"] and nothing is written for it.
    """
    t0 = time.monotonic()
    provider = client.provider
    want = normalise_hours(hours)
    zones = sorted(set(zones))
    refresh_from = hour_floor(utc_now(now)) - REFRESH_WINDOW
    cached = _cached_hours(con, provider, zones, want) if con is not None else set()

    rows: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    n_requests = 0
    skipped = 0
    if isinstance(client, HttpCarbonClient):
        client.budget = Budget(client.budget.seconds)  # the budget counts from the start of this extract
    for zone in zones:
        needed = [h for h in want if (zone, h) not in cached or h >= refresh_from]
        skipped += len(want) - len(needed)
        needed_set = set(needed)
        for run_start, run_end in runs_of_hours(needed):
            fetched = client.fetch_hours(zone, run_start, run_end)
            n_requests += fetched.requests
            failures.extend(fetched.failures)
            # keep only asked-for hours so a cached hour outside the runs is never overwritten
            kept = [r for r in fetched.rows if r["zone"] == zone and r["hour_ts"] in needed_set]
            rows.extend(kept)
            if not fetched.failures:
                failures.extend(_missing_hours(client.provider, zone, run_start, run_end, kept))

    frame = pd.DataFrame(rows, columns=list(COLUMNS)) if rows else empty_frame()
    if rows:
        frame = frame.astype({"carbon_intensity_g_per_kwh": "float64", "coverage": "float64",
                              "is_estimated": "boolean"})
        frame = frame.drop_duplicates(subset=["provider", "zone", "hour_ts"], keep="last").reset_index(drop=True)
    partitions = [{"provider": p, "zone": z, "hour_ts": h.to_pydatetime() if hasattr(h, "to_pydatetime") else h}
                  for p, z, h in frame[["provider", "zone", "hour_ts"]].itertuples(index=False)]
    metadata = {
        "provider": provider,
        "zones": zones,
        "hours_requested": len(want) * len(zones),
        "hours_cached_skipped": skipped,
        "rows": len(frame),
        "null_values": int(frame["carbon_intensity_g_per_kwh"].isna().sum()),
        "requests": n_requests,
        "failures": failures,
        "failed_zones": sorted({f["zone"] for f in failures}),
        "seconds": round(time.monotonic() - t0, 3),
    }
    return ExtractResult(batches={TABLE: frame}, partitions=partitions, metadata=metadata)

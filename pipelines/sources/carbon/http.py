"""The HTTP plumbing every carbon-intensity API provider shares: session with retries, and one fetch loop that
splits a range into provider-sized windows and records each failing window instead of raising."""

from __future__ import annotations

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
from urllib3.util.retry import Retry

from pipelines.sources.base import ExtractResult
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
    retry = Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff_factor,
        backoff_max=60,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET"}),
        respect_retry_after_header=True,
        raise_on_status=False,  # the last response is returned so its status and message are recorded
    )
    adapter = HTTPAdapter(max_retries=retry)
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
                 backoff_factor: float, session: requests.Session | None) -> None:
        self.base_url = (base_url or self.default_url).rstrip("/") + "/"
        self.timeout_s = timeout_s
        self.verify_tls = verify_tls
        self.session = session or session_with_retries(retries, backoff_factor)
        self.headers: dict[str, str] = {"Accept": "application/json"}

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
        # (connect, read) timeouts; verify stays on unless the operator turned it off in settings
        return self.session.get(self.base_url + self.path.lstrip("/"), params=params, headers=self.headers,
                                timeout=(min(10.0, self.timeout_s), self.timeout_s), verify=self.verify_tls)

    def failure(self, zone: str, start: datetime, end: datetime, status: int | None, error: str) -> dict[str, Any]:
        log.warning("%s %s [%s, %s): %s %s", self.name, zone, iso(start), iso(end), status, error)
        return {"provider": self.name, "zone": zone, "start": start, "end": end,
                "request": self.base_url + self.path, "status": status, "error": error}

    def fetch_windows(self, zone: str, start: datetime, end: datetime, out: ZoneFetch,
                      params: Callable[[datetime, datetime], dict[str, str]]) -> Iterator[tuple[datetime, datetime, Any]]:
        """(window start, window end, parsed JSON body) per ≤ 10-day window of [start, end) that answered 200
        with JSON; every other window is appended to `out.failures` and skipped."""
        for w_start, w_end in windows(naive_utc(start), naive_utc(end), MAX_WINDOW):
            out.requests += 1
            try:
                resp = self._get(params(w_start, w_end))
            except requests.RequestException as exc:
                out.failures.append(self.failure(zone, w_start, w_end, None, f"{type(exc).__name__}: {exc}"))
                continue
            if resp.status_code != 200:
                out.failures.append(self.failure(zone, w_start, w_end, resp.status_code, error_message(resp)))
                continue
            try:
                body = resp.json()
            except ValueError:
                out.failures.append(self.failure(zone, w_start, w_end, 200, self.json_error))
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
    for zone in zones:
        needed = [h for h in want if (zone, h) not in cached or h >= refresh_from]
        skipped += len(want) - len(needed)
        needed_set = set(needed)
        for run_start, run_end in runs_of_hours(needed):
            fetched = client.fetch_hours(zone, run_start, run_end)
            n_requests += fetched.requests
            failures.extend(fetched.failures)
            # keep only asked-for hours so a cached hour outside the runs is never overwritten
            rows.extend(r for r in fetched.rows if r["zone"] == zone and r["hour_ts"] in needed_set)

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

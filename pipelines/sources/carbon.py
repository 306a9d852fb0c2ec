"""Hourly grid carbon intensity from Electricity Maps v3 or Wattnet into raw.carbon_intensity_hours.

Rules (SOURCES.md §6-7, METHOD.md B4/B10): hour-start naive UTC timestamps; a null provider value stays NULL
(never 0); the provider's estimation flags are kept; a failing zone-window is recorded in metadata and written
nowhere, so dbt falls back to the built-in zone value for those hours and flags it.
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pandas as pd
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from pipelines.settings import CarbonSettings

from .base import ExtractResult, hour_floor

log = logging.getLogger(__name__)

TABLE = "carbon_intensity_hours"
EM_DEFAULT_URL = "https://api.electricitymap.org/v3/"
WATTNET_DEFAULT_URL = "https://api.wattnet.eu/"
MAX_WINDOW = timedelta(days=10)  # Electricity Maps past-range: at most 10 days (240 hourly points) per call
REFRESH_WINDOW = timedelta(hours=48)  # providers revise recent hours: always re-fetch them
HOUR = timedelta(hours=1)
QUARTER = timedelta(minutes=15)
SEED_ZONE_MAP = Path(__file__).resolve().parents[2] / "seeds" / "wattnet_zone_map.csv"

# Wattnet id -> Electricity Maps zone where they differ (built from shared/data/wattnet/wattnet_zones_entsoe_full.csv;
# the other Wattnet ids are already Electricity Maps codes). IT_CALABRIA has no confirmed Electricity Maps
# code, so it is left unmapped rather than guessed.
WATTNET_TO_EM: dict[str, str] = {
    "DK1": "DK-DK1", "DK2": "DK-DK2",
    "IT_NORTH": "IT-NO", "IT_CNORTH": "IT-CNO", "IT_CSOUTH": "IT-CSO", "IT_SOUTH": "IT-SO",
    "IT_SICILY": "IT-SIC", "IT_SARDINIA": "IT-SAR",
    "NO1": "NO-NO1", "NO2": "NO-NO2", "NO3": "NO-NO3", "NO4": "NO-NO4", "NO5": "NO-NO5",
    "SE1": "SE-SE1", "SE2": "SE-SE2", "SE3": "SE-SE3", "SE4": "SE-SE4",
    "NIE": "GB-NIR", "RU_KGD": "RU-KGD",
}
WATTNET_SAME_CODE = (
    "AL", "AM", "AT", "AZ", "BA", "BE", "BG", "BY", "CH", "CY", "CZ", "DE", "EE", "ES", "FI", "FR", "GB", "GE",
    "GR", "HR", "HU", "IE", "LT", "LU", "LV", "MD", "ME", "MK", "MT", "NL", "PL", "PT", "RO", "RS", "RU", "SI",
    "SK", "TR", "UA", "XK",
)


@dataclass
class ZoneFetch:
    """What one zone's fetch produced: hourly rows plus the windows that failed."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0


class CarbonClient(Protocol):
    provider: str

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch: ...


# --- shared HTTP plumbing ---------------------------------------------------------------------------------


def _session(retries: int, backoff_factor: float) -> requests.Session:
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


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_ts(value: str) -> datetime:
    ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts


def _to_naive_utc(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts


def _error_message(resp: requests.Response) -> str:
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


def _windows(start: datetime, end: datetime, size: timedelta) -> Iterable[tuple[datetime, datetime]]:
    cur = start
    while cur < end:
        nxt = min(cur + size, end)
        yield cur, nxt
        cur = nxt


class _HttpClient:
    provider = ""

    def __init__(self, base_url: str, timeout_s: float, verify_tls: bool, retries: int, backoff_factor: float,
                 session: requests.Session | None) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout_s = timeout_s
        self.verify_tls = verify_tls
        self.session = session or _session(retries, backoff_factor)
        self.headers: dict[str, str] = {"Accept": "application/json"}

    def _get(self, path: str, params: dict[str, str]) -> requests.Response:
        # (connect, read) timeouts; verify stays on unless the operator turned it off in settings
        return self.session.get(self.base_url + path.lstrip("/"), params=params, headers=self.headers,
                                timeout=(min(10.0, self.timeout_s), self.timeout_s), verify=self.verify_tls)

    def _failure(self, zone: str, start: datetime, end: datetime, path: str, status: int | None,
                 error: str) -> dict[str, Any]:
        failure = {"provider": self.provider, "zone": zone, "start": start, "end": end,
                   "request": self.base_url + path, "status": status, "error": error}
        log.warning("%s %s [%s, %s): %s %s", self.provider, zone, _iso(start), _iso(end), status, error)
        return failure


# --- Electricity Maps -------------------------------------------------------------------------------------


class ElectricityMapsClient(_HttpClient):
    """Electricity Maps v3 past-range client; the token travels only in the `auth-token` header."""

    provider = "electricitymaps"
    path = "carbon-intensity/past-range"

    def __init__(self, settings: CarbonSettings, *, retries: int = 4, backoff_factor: float = 1.0,
                 session: requests.Session | None = None) -> None:
        super().__init__(settings.base_url or EM_DEFAULT_URL, settings.timeout_s, settings.verify_tls,
                         retries, backoff_factor, session)
        self.emission_factor_type = settings.emission_factor_type
        token = settings.token()
        if token:
            self.headers["auth-token"] = token

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch:
        """Hours in [start, end) for `zone`, in ≤ 10-day calls; estimated hours are kept (no disableEstimations)."""
        out = ZoneFetch()
        seen: dict[tuple[str, datetime], dict[str, Any]] = {}
        for w_start, w_end in _windows(_to_naive_utc(start), _to_naive_utc(end), MAX_WINDOW):
            params = {"zone": zone, "start": _iso(w_start), "end": _iso(w_end),
                      "emissionFactorType": self.emission_factor_type}
            out.requests += 1
            try:
                resp = self._get(self.path, params)
            except requests.RequestException as exc:
                out.failures.append(self._failure(zone, w_start, w_end, self.path, None,
                                                  f"{type(exc).__name__}: {exc}"))
                continue
            if resp.status_code != 200:
                out.failures.append(self._failure(zone, w_start, w_end, self.path, resp.status_code,
                                                  _error_message(resp)))
                continue
            try:
                data = resp.json().get("data") or []
            except (ValueError, AttributeError):
                out.failures.append(self._failure(zone, w_start, w_end, self.path, 200, "response is not a JSON object"))
                continue
            for item in data:
                ts = hour_floor(_parse_ts(item["datetime"]))
                if not w_start <= ts < w_end:
                    continue  # the API may include the end hour; the next window owns it
                value = item.get("carbonIntensity")
                row_zone = item.get("zone") or zone
                seen[(row_zone, ts)] = {  # dedupe on (zone, datetime): the last answer wins
                    "provider": self.provider,
                    "zone": row_zone,
                    "hour_ts": ts,
                    "carbon_intensity_g_per_kwh": None if value is None else float(value),
                    "is_estimated": item.get("isEstimated"),
                    "estimation_method": item.get("estimationMethod"),
                    "emission_factor_type": item.get("emissionFactorType") or self.emission_factor_type,
                    "coverage": 1.0,
                }
        out.rows = list(seen.values())
        return out


# --- Wattnet ----------------------------------------------------------------------------------------------


def load_wattnet_zone_map(seed_path: Path | None = None) -> dict[str, str]:
    """Wattnet id -> Electricity Maps zone: the built-in map, overlaid by seeds/wattnet_zone_map.csv if present."""
    mapping = {z: z for z in WATTNET_SAME_CODE} | dict(WATTNET_TO_EM)
    path = seed_path or SEED_ZONE_MAP
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            cols = reader.fieldnames or []
            # the seed is produced elsewhere: accept any column naming that says which side is which
            w_col = next((c for c in cols if "wattnet" in c.lower()), None)
            e_col = next((c for c in cols if c != w_col and any(k in c.lower() for k in ("electricity", "em_", "emaps"))),
                         None)
            if w_col and e_col:
                for row in reader:
                    if row.get(w_col) and row.get(e_col):
                        mapping[row[w_col].strip()] = row[e_col].strip()
            else:
                log.warning("%s: no wattnet/electricity maps columns in %s; using the built-in map", path, cols)
    except FileNotFoundError:
        pass
    except (OSError, csv.Error) as exc:
        log.warning("%s: unreadable (%s); using the built-in map", path, exc)
    return mapping


class WattnetClient(_HttpClient):
    """Wattnet /v1/footprints client: 15-min life-cycle values, averaged per hour."""

    provider = "wattnet"
    path = "v1/footprints"

    def __init__(self, settings: CarbonSettings, *, retries: int = 4, backoff_factor: float = 1.0,
                 session: requests.Session | None = None, zone_map: dict[str, str] | None = None) -> None:
        super().__init__(settings.base_url or WATTNET_DEFAULT_URL, settings.timeout_s, settings.verify_tls,
                         retries, backoff_factor, session)
        self.to_em = zone_map if zone_map is not None else load_wattnet_zone_map()
        self.from_em = {em: w for w, em in self.to_em.items()}
        self.direct = settings.emission_factor_type == "direct"

    def wattnet_zone(self, em_zone: str) -> str | None:
        return self.from_em.get(em_zone)

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch:
        """Hourly time-weighted means of the quarters present in [start, end); `zone` is an Electricity Maps code."""
        out = ZoneFetch()
        start, end = _to_naive_utc(start), _to_naive_utc(end)
        w_zone = self.wattnet_zone(zone)
        if w_zone is None:
            out.failures.append(self._failure(zone, start, end, self.path, None,
                                              f"zone {zone!r} is not covered by Wattnet (no zone mapping)"))
            return out
        # quarter start -> (value, estimated, method); the later series wins for a repeated quarter
        quarters: dict[datetime, tuple[float | None, bool, str | None]] = {}
        for w_start, w_end in _windows(start, end, MAX_WINDOW):
            params = {"zone": w_zone, "footprint_type": "carbon",
                      "scope": "operational" if self.direct else "life-cycle",
                      "start": _iso(w_start), "end": _iso(w_end), "aggregate": "false"}
            out.requests += 1
            try:
                resp = self._get(self.path, params)
            except requests.RequestException as exc:
                out.failures.append(self._failure(zone, w_start, w_end, self.path, None,
                                                  f"{type(exc).__name__}: {exc}"))
                continue
            if resp.status_code != 200:
                out.failures.append(self._failure(zone, w_start, w_end, self.path, resp.status_code,
                                                  _error_message(resp)))
                continue
            try:
                footprints = resp.json()
            except ValueError:
                out.failures.append(self._failure(zone, w_start, w_end, self.path, 200, "response is not JSON"))
                continue
            for fp in footprints if isinstance(footprints, list) else [footprints]:
                for series in fp.get("series") or []:
                    status = series.get("zone_status") or "complete"
                    # preview (or any non-complete, invalid) data is provisional: flag it like an estimate
                    estimated = status != "complete" or series.get("valid") is False
                    for ts_raw, value in series.get("values") or []:
                        ts = _parse_ts(ts_raw)
                        q = ts.replace(minute=ts.minute - ts.minute % 15, second=0, microsecond=0)
                        if w_start <= q < w_end:
                            quarters[q] = (None if value is None else float(value), estimated,
                                           None if status == "complete" else status)
        out.rows = self._hourly(zone, quarters)
        return out

    def _hourly(self, zone: str, quarters: dict[datetime, tuple[float | None, bool, str | None]]) -> list[dict[str, Any]]:
        by_hour: dict[datetime, list[tuple[float | None, bool, str | None]]] = {}
        for q, sample in quarters.items():
            by_hour.setdefault(hour_floor(q), []).append(sample)
        rows = []
        for hour, samples in sorted(by_hour.items()):
            present = [s for s in samples if s[0] is not None]
            # quarters are equal length, so the time-weighted mean of those present is their plain mean
            value = sum(s[0] for s in present) / len(present) if present else None  # type: ignore[misc]
            methods = sorted({s[2] for s in samples if s[2]})
            rows.append({
                "provider": self.provider,
                "zone": zone,
                "hour_ts": hour,
                "carbon_intensity_g_per_kwh": value,
                "is_estimated": any(s[1] for s in samples),
                "estimation_method": ",".join(methods) or None,
                "emission_factor_type": "direct" if self.direct else "lifecycle",
                "coverage": len(present) / 4,
            })
        return rows


# --- extractor --------------------------------------------------------------------------------------------


def make_client(settings: CarbonSettings) -> CarbonClient:
    if settings.provider == "electricitymaps":
        return ElectricityMapsClient(settings)
    if settings.provider == "wattnet":
        return WattnetClient(settings)
    raise ValueError(f"carbon.provider {settings.provider!r} has no API client; use electricitymaps or wattnet")


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


def _runs(hours: list[datetime]) -> list[tuple[datetime, datetime]]:
    """Contiguous [start, end) ranges covering sorted hour starts, so gaps are not re-requested."""
    runs: list[tuple[datetime, datetime]] = []
    for h in hours:
        if runs and runs[-1][1] == h:
            runs[-1] = (runs[-1][0], h + HOUR)
        else:
            runs.append((h, h + HOUR))
    return runs


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "provider": pd.Series(dtype="string"), "zone": pd.Series(dtype="string"),
        "hour_ts": pd.Series(dtype="datetime64[us]"), "carbon_intensity_g_per_kwh": pd.Series(dtype="float64"),
        "is_estimated": pd.Series(dtype="boolean"), "estimation_method": pd.Series(dtype="string"),
        "emission_factor_type": pd.Series(dtype="string"), "coverage": pd.Series(dtype="float64"),
    })


def extract_carbon_intensity(
    settings: CarbonSettings,
    zones: list[str],
    hours: list[datetime],
    con: duckdb.DuckDBPyConnection | None = None,
    client: CarbonClient | None = None,
    *,
    now: datetime | None = None,
) -> ExtractResult:
    """Rows for raw.carbon_intensity_hours for `zones` x `hours` (hour starts, UTC).

    With `con`, hours already landed with a value are skipped, except the last 48 h (providers revise them).
    A failing zone-window never fails the run: it is listed in metadata["failures"] and nothing is written for it.
    """
    t0 = time.monotonic()
    if settings.provider in ("demo", "none") and client is None:
        return ExtractResult(batches={TABLE: _empty_frame()}, partitions=[],
                             metadata={"provider": settings.provider, "skipped": "no API provider configured"})
    client = client or make_client(settings)
    provider = client.provider
    want = sorted({hour_floor(_to_naive_utc(h)) for h in hours})
    zones = sorted(set(zones))
    refresh_from = hour_floor(_to_naive_utc(now or datetime.now(UTC))) - REFRESH_WINDOW
    cached = _cached_hours(con, provider, zones, want) if con is not None else set()

    rows: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    n_requests = 0
    skipped = 0
    for zone in zones:
        needed = [h for h in want if (zone, h) not in cached or h >= refresh_from]
        skipped += len(want) - len(needed)
        needed_set = set(needed)
        for run_start, run_end in _runs(needed):
            fetched = client.fetch_hours(zone, run_start, run_end)
            n_requests += fetched.requests
            failures.extend(fetched.failures)
            # keep only asked-for hours so a cached hour outside the runs is never overwritten
            rows.extend(r for r in fetched.rows if r["zone"] == zone and r["hour_ts"] in needed_set)

    frame = pd.DataFrame(rows, columns=list(_empty_frame().columns)) if rows else _empty_frame()
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

"""Wattnet /v1/footprints client: 15-min life-cycle (or operational) values, averaged per hour (SOURCES.md §7)."""

from __future__ import annotations

import csv
import logging
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

from pipelines.timeutil import hour_floor, naive_utc

from .http import HttpCarbonClient, ZoneFetch, iso, parse_ts

if TYPE_CHECKING:
    from pipelines.settings import CarbonSettings

log = logging.getLogger(__name__)

SEED_ZONE_MAP = Path(__file__).resolve().parents[3] / "seeds" / "wattnet_zone_map.csv"

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

Quarter = tuple[float | None, bool, str | None]  # (value, estimated, method)


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


class WattnetClient(HttpCarbonClient):
    name = "wattnet"
    path = "v1/footprints"
    default_url = "https://api.wattnet.eu/"

    def __init__(self, settings: CarbonSettings, *, retries: int = 4, backoff_factor: float = 1.0,
                 session: requests.Session | None = None, zone_map: dict[str, str] | None = None) -> None:
        super().__init__(settings.base_url, settings.timeout_s, settings.verify_tls, retries, backoff_factor,
                         session, settings.time_budget_s)
        self.to_em = zone_map if zone_map is not None else load_wattnet_zone_map()
        self.from_em = {em: w for w, em in self.to_em.items()}
        self.direct = settings.emission_factor_type == "direct"

    def wattnet_zone(self, em_zone: str) -> str | None:
        return self.from_em.get(em_zone)

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch:
        """Hourly time-weighted means of the quarters present in [start, end); `zone` is an Electricity Maps code."""
        out = ZoneFetch()
        start, end = naive_utc(start), naive_utc(end)
        w_zone = self.wattnet_zone(zone)
        if w_zone is None:
            out.failures.append(self.failure(zone, start, end, None,
                                             f"zone {zone!r} is not covered by Wattnet (no zone mapping)"))
            return out

        def params(w_start: datetime, w_end: datetime) -> dict[str, str]:
            return {"zone": w_zone, "footprint_type": "carbon", "scope": "operational" if self.direct else "life-cycle",
                    "start": iso(w_start), "end": iso(w_end), "aggregate": "false"}

        # quarter start -> (value, estimated, method); the later series wins for a repeated quarter
        quarters: dict[datetime, Quarter] = {}
        for w_start, w_end, footprints in self.fetch_windows(zone, start, end, out, params):
            try:
                quarters.update(self._quarters(w_start, w_end, footprints))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                out.failures.append(self.failure(zone, w_start, w_end, 200,
                                                 f"unexpected answer shape: {type(exc).__name__}: {exc}",
                                                 "wrong_shape"))
        out.rows = self._hourly(zone, quarters)
        return out

    @staticmethod
    def _quarters(w_start: datetime, w_end: datetime, footprints: Any) -> dict[datetime, Quarter]:
        """One window's quarters; raises on an answer of the wrong shape (the caller records the window)."""
        quarters: dict[datetime, Quarter] = {}
        for fp in footprints if isinstance(footprints, list) else [footprints]:
            if not isinstance(fp, dict) or "series" not in fp or not isinstance(fp["series"] or [], list):
                raise TypeError(f"a footprint is {type(fp).__name__}, not an object with a series list")
            for series in fp.get("series") or []:
                status = series.get("zone_status") or "complete"
                # preview (or any non-complete, invalid) data is provisional: flag it like an estimate
                estimated = status != "complete" or series.get("valid") is False
                for ts_raw, value in series.get("values") or []:
                    ts = parse_ts(ts_raw)
                    q = ts.replace(minute=ts.minute - ts.minute % 15, second=0, microsecond=0)
                    if w_start <= q < w_end:
                        quarters[q] = (None if value is None else float(value), estimated,
                                       None if status == "complete" else status)
        return quarters

    def _hourly(self, zone: str, quarters: dict[datetime, Quarter]) -> list[dict[str, Any]]:
        by_hour: dict[datetime, list[Quarter]] = {}
        for q, sample in quarters.items():
            by_hour.setdefault(hour_floor(q), []).append(sample)
        rows = []
        for hour, samples in sorted(by_hour.items()):
            present = [s for s in samples if s[0] is not None]
            # quarters are equal length, so the time-weighted mean of those present is their plain mean
            value = sum(s[0] for s in present) / len(present) if present else None  # type: ignore[misc]
            methods = sorted({s[2] for s in samples if s[2]})
            rows.append({
                "provider": self.name,
                "zone": zone,
                "hour_ts": hour,
                "carbon_intensity_g_per_kwh": value,
                "is_estimated": any(s[1] for s in samples),
                "estimation_method": ",".join(methods) or None,
                "emission_factor_type": "direct" if self.direct else "lifecycle",
                "coverage": len(present) / 4,
            })
        return rows

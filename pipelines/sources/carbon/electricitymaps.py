"""Electricity Maps v3 past-range client; the token travels only in the `auth-token` header (SOURCES.md §6)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import requests

from pipelines.timeutil import hour_floor

from .http import HttpCarbonClient, ZoneFetch, iso, parse_ts

if TYPE_CHECKING:
    from pipelines.settings import CarbonSettings


class ElectricityMapsClient(HttpCarbonClient):
    name = "electricitymaps"
    path = "carbon-intensity/past-range"
    default_url = "https://api.electricitymap.org/v3/"
    json_error = "response is not a JSON object"

    def __init__(self, settings: CarbonSettings, *, retries: int = 4, backoff_factor: float = 1.0,
                 session: requests.Session | None = None) -> None:
        super().__init__(settings.base_url, settings.timeout_s, settings.verify_tls, retries, backoff_factor,
                         session, settings.time_budget_s)
        self.emission_factor_type = settings.emission_factor_type
        token = settings.token()
        if token:
            self.headers["auth-token"] = token

    def fetch_hours(self, zone: str, start: datetime, end: datetime) -> ZoneFetch:
        """Hours in [start, end) for `zone`, in ≤ 10-day calls; estimated hours are kept (no disableEstimations)."""
        out = ZoneFetch()
        seen: dict[tuple[str, datetime], dict[str, Any]] = {}

        def params(w_start: datetime, w_end: datetime) -> dict[str, str]:
            return {"zone": zone, "start": iso(w_start), "end": iso(w_end),
                    "emissionFactorType": self.emission_factor_type}

        for w_start, w_end, body in self.fetch_windows(zone, start, end, out, params):
            if not isinstance(body, dict) or "data" not in body or not isinstance(body["data"] or [], list):
                out.failures.append(self.failure(zone, w_start, w_end, 200, self.json_error, "wrong_shape"))
                continue
            try:
                window_rows = self._rows(zone, w_start, w_end, body["data"] or [])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                out.failures.append(self.failure(zone, w_start, w_end, 200,
                                                 f"unexpected answer shape: {type(exc).__name__}: {exc}",
                                                 "wrong_shape"))
                continue
            seen.update(window_rows)  # dedupe on (zone, datetime): the last answer wins
        out.rows = list(seen.values())
        return out

    def _rows(self, zone: str, w_start: datetime, w_end: datetime,
              data: list[dict[str, Any]]) -> dict[tuple[str, datetime], dict[str, Any]]:
        """One window's rows; raises on an item of the wrong shape (the caller records the window as failed)."""
        rows: dict[tuple[str, datetime], dict[str, Any]] = {}
        for item in data:
            ts = hour_floor(parse_ts(item["datetime"]))
            if not w_start <= ts < w_end:
                continue  # the API may include the end hour; the next window owns it
            value = item.get("carbonIntensity")
            row_zone = item.get("zone") or zone
            rows[(row_zone, ts)] = {
                "provider": self.name,
                "zone": row_zone,
                "hour_ts": ts,
                "carbon_intensity_g_per_kwh": None if value is None else float(value),
                "is_estimated": item.get("isEstimated"),
                "estimation_method": item.get("estimationMethod"),
                "emission_factor_type": item.get("emissionFactorType") or self.emission_factor_type,
                "coverage": 1.0,
            }
        return rows

"""How every HTTP source fails the same way: a failure kind, a time budget per source per run, retries that honour
`Retry-After` within a cap, and one summary line (with what to do) per degraded source.

The rule (README "When a source fails", docs/METHOD.md A18.1): an enrichment source (carbon intensity, Boavizta,
the Kubernetes API, price files) never fails the run. Its failures are recorded per zone / instance type / cluster,
the models fall back and flag the rows, and the source gets one warning line and one `raw.source_health` row.
A source that fails as a whole (refused, timed out, refused the credentials, rate-limited or answering 5xx after its
retries) is not asked again in the same run ("tripped"): the rest of its requests are recorded as skipped, so a dead
provider costs one request's retries, not one per zone. A source also stops asking when its time budget is spent.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.util.retry import Retry

from pipelines.warehouse.source_health import Problem

MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is cut to this; after the retries the source trips and falls back
DEFAULT_BUDGET_S = 120.0  # per source per run; settings: carbon.time_budget_s, boavizta.time_budget_s

# kinds that say the whole source is unusable right now (not just one zone or instance type)
SOURCE_WIDE = ("connection_refused", "connection_error", "timeout", "http_401", "http_403", "http_429", "http_5xx")


class CappedRetry(Retry):
    """urllib3's Retry, but a server's Retry-After is honoured only up to MAX_RETRY_AFTER_S: a provider asking for
    an hour's pause must not hold the daily run for an hour (urllib3 sleeps whatever the header says)."""

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(value, MAX_RETRY_AFTER_S)


def retry_policy(retries: int, backoff_factor: float) -> CappedRetry:
    """The retry policy of every HTTP source: connect errors and 429/5xx retried with exponential backoff (at
    most 30 s a wait), a read timeout retried once (a server that accepts and never answers costs two timeouts,
    not five), Retry-After honoured up to MAX_RETRY_AFTER_S, the last answer returned so its status is recorded."""
    return CappedRetry(
        total=retries, connect=retries, read=min(1, retries), status=retries,
        backoff_factor=backoff_factor, backoff_max=30,
        status_forcelist=(429, 500, 502, 503, 504), allowed_methods=frozenset({"GET", "POST"}),
        respect_retry_after_header=True, raise_on_status=False,
    )


@dataclass
class Budget:
    """Wall-clock seconds one source may spend in one run."""

    seconds: float = DEFAULT_BUDGET_S
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def spent(self) -> bool:
        return self.remaining() <= 0

    def timeout(self, per_request_s: float) -> float:
        """A request's timeout: its own, but never far past the budget (at least 1 s, so a call can answer)."""
        return max(1.0, min(per_request_s, self.remaining()))


def kind_of_exception(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, requests.Timeout) or "timed out" in text.lower() or "ReadTimeout" in text:
        return "timeout"
    if "refused" in text.lower():
        return "connection_refused"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError) or "IncompleteRead" in text \
            or "ProtocolError" in text:
        return "truncated"
    if isinstance(exc, requests.ConnectionError):
        return "connection_error"
    if isinstance(exc, ValueError):
        return "not_json"
    return "connection_error"


def kind_of_status(status: int) -> str:
    return "http_5xx" if status >= 500 else f"http_{status}"


def is_source_wide(kind: str) -> bool:
    return kind in SOURCE_WIDE


HINTS: dict[str, str] = {
    "connection_refused": "check {url_key} and that the service is reachable from this host",
    "connection_error": "check {url_key} and the network path to it",
    "timeout": "the server did not answer in time; check its health or raise {timeout_key}",
    "http_401": "the credentials were refused: renew them ({auth})",
    "http_403": "the credentials may not read this: check the token's plan or permissions ({auth})",
    "http_429": "rate-limited: lower the call rate or raise the plan's quota",
    "http_5xx": "the service failed on its side",
    "http_404": "the service has no data for these; an override or the built-in values apply",
    "http_400": "the service refused the request; check {url_key} points at the right API version",
    "no_data": "the service has no data for these; an override or the built-in values apply",
    "partial": "the service had no value for some hours; they use the fallback",
    "not_json": "the answer was not the API's JSON (an error page from a proxy?); check {url_key}",
    "wrong_shape": "the answer was JSON of an unexpected shape; check {url_key} points at the right API",
    "truncated": "the answer was cut off; check the network path to {url_key}",
    "budget": "the time budget ran out before these were asked; raise {budget_key} or fix the slow source",
    "skipped": "not asked: the source had already failed in this run",
    "file": "fix the file; until then the last loaded prices (or the defaults) apply",
}
ORDER = ("connection_refused", "connection_error", "timeout", "http_401", "http_403", "http_429", "http_5xx",
         "truncated", "not_json", "wrong_shape", "http_400", "http_404", "no_data", "partial", "budget", "file")


def short_cause(kind: str, status: int | None, error: str, url: str = "") -> str:
    """A few words for the console: 'connection refused by host:port', 'HTTP 503: message', ..."""
    host = urlsplit(url).netloc or url
    if kind == "connection_refused":
        return f"connection refused by {host}" if host else "connection refused"
    if kind == "timeout":
        return f"no answer from {host} in time" if host else "no answer in time"
    if kind == "connection_error":
        return f"cannot reach {host}" if host else "connection failed"
    if status not in (None, 200):
        return f"HTTP {status}: {error[:80]}"
    return error[:100]


def main_kind(kinds: Iterable[str]) -> str:
    """The kind that explains a source's failures best: a source-wide cause before the per-item ones."""
    counts = Counter(k for k in kinds if k != "skipped")
    if not counts:
        return "skipped"
    return min(counts, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), -counts[k]))


def hint_for(kind: str, names: Mapping[str, str], rerun: str = "") -> str:
    text = HINTS.get(kind, HINTS["http_5xx"] if kind.startswith("http_") else "see the log file")
    for key, value in names.items():
        text = text.replace("{" + key + "}", value)
    return text + (f"; then re-run the day ({rerun}) to replace the fallback" if rerun else "")

__all__ = ["Budget", "CappedRetry", "Problem", "hint_for", "is_source_wide", "kind_of_exception", "kind_of_status",
           "main_kind", "retry_policy", "short_cause"]

"""`kubeledger demo --fault NAME`: the demo day with one enrichment source down, to show a newcomer what a degraded
day looks like (one warning line, flagged rows, the day still published, `status` and /healthz naming the source).

Each fault points the source at a local port nothing listens on (connection refused, at once): a real failure
through the real job, no special code path in the pipeline.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable

from pipelines.settings import Settings


def _refused_url(path: str = "") -> str:
    """http://127.0.0.1:<a port just freed>/...: connecting there is refused immediately."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def _carbon_down(settings: Settings) -> Settings:
    carbon = dataclasses.replace(settings.carbon, provider="electricitymaps", base_url=_refused_url("/v3"))
    return dataclasses.replace(settings, carbon=carbon)


def _boavizta_down(settings: Settings) -> Settings:
    return dataclasses.replace(settings, boavizta=dataclasses.replace(settings.boavizta, url=_refused_url()))


DEMO_FAULTS: dict[str, Callable[[Settings], Settings]] = {
    "carbon-down": _carbon_down,
    "boavizta-down": _boavizta_down,
}


def with_fault(settings: Settings, fault: str | None) -> Settings:
    """`settings` with the named demo fault applied (None: unchanged)."""
    return settings if not fault else DEMO_FAULTS[fault](settings)

"""What every extractor returns, so one loader lands all sources the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd


class SourceError(RuntimeError):
    """A source failed for a partition; the message names the cluster/zone, the request and the server's error."""


@dataclass
class ExtractResult:
    batches: dict[str, pd.DataFrame]          # raw table name (without schema) -> rows
    partitions: list[dict[str, Any]]           # the partitions these rows replace, e.g. {"cluster": c, "hour_ts": h}
    metadata: dict[str, Any] = field(default_factory=dict)  # queries, warnings, partial responses, timings

    def rows(self) -> int:
        return sum(len(f) for f in self.batches.values())


def hour_floor(ts: datetime) -> datetime:
    return ts.replace(minute=0, second=0, microsecond=0)

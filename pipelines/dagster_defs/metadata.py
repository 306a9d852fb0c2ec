"""The one way assets and checks build Dagster metadata: every value through pipelines.jsonsafe first.

`safe_metadata({...})` keeps numbers, text and booleans as Dagster's own scalar types and turns every structure
(dict, list, set, tuple, dataclass) into `MetadataValue.json` of its JSON-safe form, so a datetime, a NaN or a
numpy integer inside a failure record can never fail a run (tests/unit/test_jsonsafe.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from pipelines.jsonsafe import json_safe
from pipelines.redaction import redact_data


def safe_value(value: Any) -> Any:
    """One metadata value: Dagster scalars as they are, structures as JSON, everything else JSON-safe."""
    if isinstance(value, dg.MetadataValue):
        if isinstance(value, dg.JsonMetadataValue):
            return dg.MetadataValue.json(redact_data(json_safe(value.data)))
        return value
    # failure records quote the servers' answers: redacted, as metadata is stored in the run storage the UI shows
    encoded = redact_data(json_safe(value))
    if isinstance(encoded, dict | list):
        return dg.MetadataValue.json(encoded)
    return encoded  # None, bool, int, float (finite), str ("NaN" for a NaN)


def safe_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Every entry of `metadata` through `safe_value`; keys as text."""
    return {str(key): safe_value(value) for key, value in metadata.items()}

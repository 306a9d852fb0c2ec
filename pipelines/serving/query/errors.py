"""The one error type of the query layer: it names the parameter, the value and what is allowed."""

from __future__ import annotations

MAX_VALUE_CHARS = 120


def _show(value: object) -> str:
    text = str(value)
    if len(text) > MAX_VALUE_CHARS:  # hostile input must not come back as a megabyte of JSON
        text = text[:MAX_VALUE_CHARS] + f"… ({len(str(value))} characters)"
    return text


class QueryError(ValueError):
    """Bad input (HTTP 400, CLI exit 2) or data the request needs that is not there (404)."""

    def __init__(self, param: str, value: object, allowed: str, status: int = 400,
                 message: str | None = None) -> None:
        self.param = param
        self.value = value
        self.allowed = allowed
        self.status = status
        self.message = message or f"{param}: {_show(value)} is not allowed; {allowed}"
        super().__init__(self.message)

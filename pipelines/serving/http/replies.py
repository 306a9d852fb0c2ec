"""The success envelope shared by the asset, summary and cluster endpoints (the allocation routes' shape)."""

from __future__ import annotations

from typing import Any

from pipelines.serving.http.app import Reply


def header_safe(text: str | None, limit: int = 1000) -> str:
    """A warning as an HTTP header value: printable ASCII, bounded."""
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in (text or ""))[:limit]


def warning_text(warnings: list[str] | tuple[str, ...]) -> str | None:
    seen: list[str] = []
    for w in warnings:
        if w and w not in seen:
            seen.append(w)
    return "; ".join(seen) or None


def ok(data: Any, warnings: list[str] | tuple[str, ...] = (), status: bool = True) -> Reply:
    """{"code":200,"status":"success","data":…,"warning":"…"} (warning only when there is one), plus the
    X-Kubeledger-Warning header; `status=False` leaves out "status" (newer OpenCost envelopes)."""
    warning = warning_text(warnings)
    body: dict[str, Any] = {"code": 200, **({"status": "success"} if status else {}), "data": data}
    headers = {}
    if warning:
        body["warning"] = warning
        headers["X-Kubeledger-Warning"] = header_safe(warning)
    return Reply(200, body, headers=headers)


def text(payload: str, content_type: str, warnings: list[str] | tuple[str, ...] = ()) -> Reply:
    warning = warning_text(warnings)
    return Reply(200, payload, content_type, headers={"X-Kubeledger-Warning": header_safe(warning)} if warning else {})

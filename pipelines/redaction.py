"""Keeping secrets out of what kubeledger stores and shows: Dagster's run storage (the UI), the log files, the
console, the warehouse's ledger and metadata, and the API's answers.

Secrets enter only through `*_env` / `*_file` keys (a URL carrying credentials is refused when the settings are
loaded: `url_credentials`). As defence in depth, text on its way to storage or display goes through `redact`:
user:password@ in URLs and credential query parameters (?token=, ?api_key=, ...) become `***`, as do
`Authorization:` header values and every secret value this process has read (`remember`, called where the
settings read a token or password), in case a server echoes one back in an error.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
# shorter values would mask ordinary words in messages; tokens and passwords worth the name are longer
MIN_SECRET_LEN = 6
# query parameter names that carry a credential (Electricity Maps' own header is auth-token; some APIs take it in
# the query string): any name containing one of these
SECRET_PARAM_RE = re.compile(r"token|secret|passw|pwd|api[-_]?key|^key$|^auth|credential|signature|^sig$",
                             re.IGNORECASE)
_URL_RE = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>`]+")
_AUTH_HEADER_RE = re.compile(r"((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|basic|token)?\s*)"
                             r"[^\s'\",;}]+", re.IGNORECASE)
_known: set[str] = set()


def remember(secret: str | None) -> str | None:
    """Register a secret value this process has read, so `redact` masks it wherever it shows up; returns it."""
    if secret and len(secret.strip()) >= MIN_SECRET_LEN:
        _known.add(secret.strip())
    return secret


def remember_configured(settings: Any) -> None:
    """Register every secret the settings' `*_env` / `*_file` keys name, before any step runs: a server may echo
    one back before the step that sends it has read it (a run's steps read them in any order)."""
    import os

    for cluster in getattr(settings, "clusters", ()):
        try:
            cluster.prometheus.bearer_token()
            cluster.prometheus.basic_auth()
        except OSError:
            pass  # an unreadable file: the step that needs it says so
    carbon, dagster = getattr(settings, "carbon", None), getattr(settings, "dagster", None)
    if carbon is not None:
        carbon.token()
    url = os.environ.get(getattr(dagster, "postgres_url_env", None) or "", "")
    remember(url)
    remember(urlsplit(url).password if "://" in url else None)


def url_credentials(url: str) -> str | None:
    """What credential `url` carries ("a user name and password", "the query parameter 'token'"), or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "a password" if parts.password else "a user name"
    for name, _value in parse_qsl(parts.query, keep_blank_values=True):
        if SECRET_PARAM_RE.search(name):
            return f"the query parameter {name!r}"
    return None


def redact_url(url: str) -> str:
    """`url` without its userinfo's secret (user:***@host) and with credential query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if user and ":" in userinfo else f"{MASK}@{host}"
    pairs = [f"{pair.split('=', 1)[0]}={MASK}" if "=" in pair and SECRET_PARAM_RE.search(pair.split("=", 1)[0])
             else pair for pair in parts.query.split("&")]
    out = f"{parts.scheme}://{netloc}{parts.path}"
    out += f"?{'&'.join(pairs)}" if parts.query else ""
    return out + (f"#{parts.fragment}" if parts.fragment else "")


def redact(text: str) -> str:
    """`text` with every secret it may carry masked (see the module's docstring)."""
    if not text:
        return text
    for secret in sorted(_known, key=len, reverse=True):  # the longest first: one secret may contain another
        if secret in text:
            text = text.replace(secret, MASK)
    if "://" in text:
        text = _URL_RE.sub(lambda m: redact_url(m.group()) if ("@" in m.group() or "?" in m.group())
                           else m.group(), text)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTH_HEADER_RE.sub(lambda m: m.group(1) + MASK, text)
    return text


def redact_data(value: Any) -> Any:
    """`redact` on every text inside a JSON-like structure (metadata, API answers)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """On a handler: the record's message and traceback redacted before any handler formats them."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is the formatter's to report
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        meta = getattr(record, "dagster_meta", None)
        if isinstance(meta, dict) and isinstance(meta.get("orig_message"), str):
            meta["orig_message"] = redact(meta["orig_message"])
        return True

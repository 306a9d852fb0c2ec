"""Recording decisions about recommendations through the API, opt-in (docs/API.md "Recording decisions"):

- POST /kubeledger/recommendations/dismiss    {"id": "...", "reason": "..."}
- POST /kubeledger/recommendations/undismiss  {"id": "..."}
- POST /kubeledger/recommendations/applied    {"id": "...", "on": "YYYY-MM-DD"}  (on: default today, UTC)

The id goes in the body, not the path: recommendation ids hold `/` and `:` (container_rightsizing:demo/ns/...),
which proxies rewrite or refuse once encoded in a path. Each path is one of `kubeledger recommend`'s flags
(--dismiss, --undismiss, --applied) and writes through the same writer (warehouse/recommendation_actions.py:
its rules, its one transaction, its refusals), into the working warehouse; the API's answers stay read from the
serving copy, so a decision shows in them after the next build and publish of its day, as the CLI says.

Off unless `api.decisions: true`: the API is otherwise read-only, and a write needs the working warehouse at hand
(not a read-only volume) and a client that is trusted to change what the reports count. On, every request needs
`Authorization: Bearer <token>` matching the environment variable `api.decisions_token_env` names.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

import duckdb

from pipelines.serving.http.app import Reply, Route, error_reply
from pipelines.serving.http.replies import ok
from pipelines.settings import Settings
from pipelines.warehouse.recommendation_actions import API_NAMES, Action, ActionError, record_action

PREFIX = "/kubeledger/recommendations/"
DECISIONS = {"dismiss": "dismissed", "undismiss": "undismissed", "applied": "applied"}
KEYS = {"dismiss": ("id", "reason"), "undismiss": ("id",), "applied": ("id", "on")}
LOCKED_RETRY_S = 30  # a daily run holds the warehouse for minutes; a client need not ask every 2 s
SHOWN_AFTER = ("the marts, `kubeledger recommend` and this API show it after the next build and publish of the day "
               "(the next scheduled run, or kubeledger rebuild --start DAY --end DAY)")


def _gate(settings: Settings, path: str) -> Any:
    api = settings.api
    where = settings.source_file or "kubeledger.yaml"

    def gate(headers: Mapping[str, str]) -> Reply | None:
        if not api.decisions:
            return error_reply(404, f"{path}: recording decisions through the API is off; set api.decisions: true "
                                    f"in {where} and the token in the environment variable api.decisions_token_env "
                                    f"names ({api.decisions_token_env}), or use kubeledger recommend "
                                    "(docs/API.md \"Recording decisions\")", setting="api.decisions")
        expected = os.environ.get(api.decisions_token_env, "")
        if not expected:
            return error_reply(503, f"{path}: api.decisions is on but the environment variable "
                                    f"{api.decisions_token_env} (api.decisions_token_env) is empty in the server's "
                                    "environment; set it and restart kubeledger serve")
        given = headers.get("authorization")
        if not given:
            r = error_reply(401, "Authorization: header missing; send Authorization: Bearer <token> (the token in "
                                 f"{api.decisions_token_env} on the server)")
            r.headers["WWW-Authenticate"] = 'Bearer realm="kubeledger"'
            return r
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
            return error_reply(403, "Authorization: the bearer token does not match; send Authorization: Bearer "
                                    f"<token> with the token in {api.decisions_token_env} on the server")
        return None

    return gate


def _text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ActionError(f"{key}: expected a JSON string, got {type(value).__name__}", param=key)
    return value


def _write(settings: Settings, verb: str) -> Any:
    allowed = KEYS[verb]

    def write(body: dict[str, Any]) -> Reply:
        try:
            extra = sorted(set(body) - set(allowed))
            if extra:
                raise ActionError(f"{', '.join(extra)}: not allowed here; {PREFIX}{verb} takes "
                                  f"{', '.join(allowed)}", param=extra[0])
            rec_id = _text(body, "id")
            if not rec_id:
                raise ActionError("id: missing; give the recommendation's id, e.g. {\"id\": \"...\"} (the field "
                                  "id of GET /kubeledger/recommendations)")
            reason, on_text = _text(body, "reason"), _text(body, "on")
            on = None
            if on_text is not None:
                try:
                    on = date.fromisoformat(on_text) if len(on_text) == 10 else None
                except ValueError:
                    on = None
                if on is None:
                    raise ActionError(f"on: {on_text[:40]!r} is not a day; write the UTC day the change went live "
                                      "as YYYY-MM-DD, or leave it out for today", param="on")
            if verb == "applied" and on is None:
                on = datetime.now(UTC).date()
            action = Action(rec_id, DECISIONS[verb], reason=reason, applied_date=on)
            done = record_action(settings, action, names=API_NAMES)
        except ActionError as exc:
            return _refusal(exc)
        except duckdb.Error as exc:  # the working warehouse cannot be written (permissions, disk): not a bug here
            return _unavailable(f"the warehouse {settings.warehouse_path} could not be written "
                                f"({type(exc).__name__}: {str(exc).splitlines()[0][:300]})", LOCKED_RETRY_S)
        return ok({"id": rec_id, "status": DECISIONS[verb], "recorded": done, "shownAfter": SHOWN_AFTER,
                   **({"appliedDate": action.applied_date.isoformat()} if verb == "applied" else {})}, status=False)

    return write


def _unavailable(message: str, retry_after: int, **extra: Any) -> Reply:
    r = error_reply(503, f"{message}; retry after {retry_after} s", **extra)
    r.headers["Retry-After"] = str(retry_after)
    return r


def _refusal(exc: ActionError) -> Reply:
    if exc.usage:
        message = str(exc)
        if not message.startswith(f"{exc.param}:"):
            message = f"{exc.param}: {message}"
        return error_reply(400, message, parameter=exc.param)
    if exc.holder is not None:
        return _unavailable(str(exc), LOCKED_RETRY_S, lockHolder=exc.holder)
    return _unavailable(str(exc), LOCKED_RETRY_S)


def decision_routes(settings: Settings) -> dict[str, Route]:
    """The three decision paths; present always (off: a 404 naming api.decisions), writing only when on."""
    routes: dict[str, Route] = {}
    for verb in DECISIONS:
        path = PREFIX + verb
        routes[path] = Route(fn=lambda _cur, _params: error_reply(405, "use POST"), needs_snapshot=False,
                             write=_write(settings, verb), gate=_gate(settings, path))
    return routes

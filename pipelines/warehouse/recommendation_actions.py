"""The ledger of what people decided about recommendations: raw.recommendation_actions (sql/raw/80_user_state.sql).

`kubeledger recommend --dismiss ID --reason TEXT`, `--applied ID [--on DATE]` and `--undismiss ID` write it here,
in the working warehouse, each in one transaction; so do the API's opt-in decision routes (serving/routes/decisions.py,
`api.decisions`), through this same `record_action`. dbt reads it on the next build of a day
(stg_user__recommendation_actions): a dismissed recommendation is left out of the day's counted total, an applied one
gets its realised saving (marts.fct_recommendation_outcome_daily). The serving copy, and so the API, shows the ledger
only as those marts carry it: the read routes answer from a read-only snapshot, so a decision shows after the next
build and publish of its day.

The id must be one of marts.fct_recommendation_daily's (any day). A warehouse held by a run (DuckDB allows one
writer) is a one-line ActionError naming the lock holder, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipelines.warehouse.connection import open_warehouse

if TYPE_CHECKING:
    from pipelines.settings import Settings

TABLE = "raw.recommendation_actions"
MART = "marts.fct_recommendation_daily"
STATUSES = ("dismissed", "applied")
LIST_HINT = ("list the ids with `kubeledger recommend --format csv` (column id) or `--format json`, or "
             "GET /kubeledger/recommendations (field id)")
# how each interface names the inputs in its messages: the CLI's flags, the API's JSON body keys
CLI_NAMES = {"dismiss": "--dismiss {id}", "reason": "--reason TEXT", "on": "--on"}
API_NAMES = {"dismiss": "dismissing {id}", "reason": 'a "reason" in the JSON body', "on": "the applied day"}
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (.+?) \(PID (\d+)\)")


class ActionError(ValueError):
    """A decision that cannot be recorded; the message is one line saying why and what to do. `usage` is True for
    bad input (exit 2: unknown id, no reason), False when the warehouse cannot take it now (exit 1: locked, none)."""

    def __init__(self, message: str, usage: bool = True, param: str = "id", holder: str | None = None) -> None:
        super().__init__(message)
        self.usage = usage
        self.param = param  # the input it is about: id, reason or on (the API's 400 names it)
        self.holder = holder  # a run holds the warehouse ('PID n', or 'unknown'): the API's 503 with Retry-After


@dataclass(frozen=True)
class Action:
    """One decision: dismiss (with a reason), apply (on a day) or undismiss (remove the dismissal)."""

    recommendation_id: str
    status: str  # 'dismissed' | 'applied' | 'undismissed'
    reason: str | None = None
    applied_date: date | None = None

    def validate(self, today: date | None = None, names: dict[str, str] = CLI_NAMES) -> None:
        """The input rules of every interface (the CLI and the API); `names` words the messages for it."""
        if not self.recommendation_id.strip():
            raise ActionError(f"the recommendation id is empty; {LIST_HINT}")
        if self.status == "dismissed" and not (self.reason or "").strip():
            raise ActionError(f"{names['dismiss'].format(id=self.recommendation_id)} needs {names['reason']}: say "
                              "why it does not apply (it is kept with the dismissal and shown next to it)",
                              param="reason")
        if self.status not in (*STATUSES, "undismissed"):
            raise ActionError(f"unknown decision {self.status!r}; use dismissed, applied or undismissed")
        today = today or datetime.now(UTC).date()
        if self.status == "applied" and self.applied_date is not None and self.applied_date > today:
            raise ActionError(f"{names['on']} {self.applied_date} is in the future (today is {today} UTC); record it "
                              "once it is live", param="on")


def describe_lock(path: Path, exc: BaseException) -> str:
    """One line for a warehouse another process holds: the file, the holder and what to do."""
    m = _LOCK_HOLDER.search(str(exc))
    holder = f" ({m.group(1)}, PID {m.group(2)})" if m else ""
    return (f"the warehouse {path} is locked by another process{holder}: DuckDB allows one writer and a kubeledger "
            "run is probably writing it; record the decision again when the run is done")


def lock_holder(exc: BaseException) -> str | None:
    """'PID n' of the process holding the warehouse, as DuckDB's lock error names it (None when it does not)."""
    m = _LOCK_HOLDER.search(str(exc))
    return f"PID {m.group(2)}" if m else None


def _recommendation(con: duckdb.DuckDBPyConnection, rec_id: str) -> tuple[str, str] | None:
    """(cluster, kind) of the recommendation on its newest day, or None when no day has it."""
    try:
        return con.execute(f"select cluster, kind from {MART} where recommendation_id = ? "  # noqa: S608
                           "order by usage_date desc limit 1", [rec_id]).fetchone()
    except duckdb.CatalogException:
        return None


def _write(con: duckdb.DuckDBPyConnection, action: Action, now: datetime) -> str:
    """The statements of one decision, inside the caller's transaction; returns what was done, in words."""
    rid = action.recommendation_id
    if action.status == "undismissed":
        found = con.execute(f"select count(*) from {TABLE} where recommendation_id = ? "  # noqa: S608
                            "and status = 'dismissed'", [rid]).fetchone()[0]
        if not found:
            raise ActionError(f"{rid} is not dismissed; nothing to undo")
        con.execute(f"delete from {TABLE} where recommendation_id = ?", [rid])  # noqa: S608
        return f"{rid}: dismissal removed"
    known = _recommendation(con, rid)
    if known is None:
        raise ActionError(f"no recommendation {rid!r} in {MART}; {LIST_HINT}")
    cluster, kind = known
    con.execute(f"delete from {TABLE} where recommendation_id = ?", [rid])  # noqa: S608
    con.execute(f"insert into {TABLE} (recommendation_id, cluster, kind, status, reason, applied_date, "  # noqa: S608
                "_extracted_at) values (?, ?, ?, ?, ?, ?, ?)",
                [rid, cluster, kind, action.status, (action.reason or "").strip() or None,
                 action.applied_date if action.status == "applied" else None, now])
    if action.status == "dismissed":
        return f"{rid}: dismissed ({action.reason.strip() if action.reason else ''})"
    return f"{rid}: applied on {action.applied_date}"


def record_action(settings: Settings, action: Action, names: dict[str, str] = CLI_NAMES) -> str:
    """Record one decision in the configured working warehouse, in one transaction; returns what was done, in words.
    The one writer of the ledger: `kubeledger recommend` and the API's decision routes (serving/routes/decisions.py)
    both call it, `names` only words the messages for each.

    Raises ActionError (one line) for an unknown id, a dismissal without reason, an applied day in the future, no
    warehouse yet, or a warehouse locked by a run (`locked`)."""
    action.validate(names=names)
    path = settings.warehouse_path
    if not path.is_file():
        raise ActionError(f"no warehouse at {path} yet; materialise a day first (kubeledger demo or materialize)",
                          usage=False)
    try:
        con = open_warehouse(settings)  # writable, with the raw tables of sql/raw (this one too, on an older file)
    except duckdb.IOException as exc:
        raise ActionError(describe_lock(path, exc), usage=False, holder=lock_holder(exc) or "unknown") from None
    try:
        con.execute("begin")
        try:
            done = _write(con, action, datetime.now(UTC).replace(tzinfo=None))
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
    finally:
        con.close()
    return done


def read_actions(con: duckdb.DuckDBPyConnection) -> list[dict[str, object]]:
    """Every recorded decision, newest first (an empty list without the table)."""
    try:
        rel = con.execute(f"select * from {TABLE} order by _extracted_at desc, recommendation_id")  # noqa: S608
    except duckdb.CatalogException:
        return []
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]

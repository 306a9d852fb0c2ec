"""What `kubeledger` prints while it works, and the full log it keeps.

Console (quiet by default): one line per stage with its timing, a live progress display on a terminal for the
stages that take a while (hours extracted, dbt nodes done of the total, days published), plain progress lines
instead when the output is not a terminal (CI, pipes), warnings a user can act on, then a summary.
`--verbose` also shows Dagster's events and dbt's output.

Log file: everything, at DEBUG (Dagster events, dbt's output, Python warnings), in
`<warehouse folder>/state/logs/kubeledger-<UTC time>-<pid>.log`; the newest `LOGS_KEPT` files are kept.

How: the CLI runs Dagster jobs in process with the `kubeledger` logger below instead of Dagster's console logger
(which prints every DEBUG event), so every event reaches Python logging; dbt's output, which dagster-dbt writes
to `sys.stdout`, is redirected into a logger line by line while a job runs. The display itself (stage lines,
rich or plain progress) is progress_display.py's Reporter; this module feeds it and keeps the log.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines import cli_version
from pipelines.progress_display import CheckResult, Reporter, Stage
from pipelines.redaction import RedactingFilter, remember_configured

LOGS_KEPT = 20
RUN_LOGGER = "kubeledger.run"  # Dagster events and step logs of the CLI's runs
DBT_LOGGER = "kubeledger.dbt"  # dbt's output lines

ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
DBT_NODE_RE = re.compile(r"^\s*(\d+) of (\d+) (START|OK|PASS|WARN|ERROR|FAIL|SKIP|NO-OP)\b(.*)$")
DBT_DONE_RE = re.compile(r"Done\. PASS=(\d+) WARN=(\d+) ERROR=(\d+) SKIP=(\d+)")
DBT_PROBLEM_RE = re.compile(r"(Failure in |Database Error|Runtime Error|Compilation Error|^\s*\d+ of \d+ (ERROR|FAIL)\b"
                            r"|Got \d+ results?, configured to fail)")
# Messages nobody can act on, kept out of the console (they stay in the log file):
# dagster-dbt records a dbt *source* test (a test on a raw table, which the extract assets own) as an asset
# observation and says so at WARNING for each of them, on every run.
# Dagster says, at ERROR, for each step it does not run after a failure; the failure itself is reported.
# Libraries whose own warnings are the detail of a failure the source's one summary line already names (urllib3's
# "Retrying (Retry(total=3 ...))" per attempt, the Kubernetes client's): the log file keeps them.
QUIET_LIBRARIES = ("dagster", "urllib3", "requests", "kubernetes")
UNACTIONABLE = (re.compile(r"Logging an `AssetObservation` instead of an `AssetCheckResult` for dbt test `source_"),
                re.compile(r"^Dependencies for step \S+ (failed|were not executed)"))

__all__ = ["DBT_LOGGER", "LOGS_KEPT", "RUN_LOGGER", "CheckResult", "LogSession", "Observer", "Reporter", "Stage",
           "capture_stdout", "cli_version", "log_dir", "new_log_file", "observe_landing", "run_logger_def",
           "stage_of", "start_logging"]


# --- log files ----------------------------------------------------------------------------------------------

def log_dir(settings: Any) -> Path:
    return Path(settings.warehouse_path).parent / "state" / "logs"


def new_log_file(folder: Path, keep: int = LOGS_KEPT) -> Path:
    """A new log file in `folder`; older ones beyond the newest `keep` (this one included) are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"kubeledger-{stamp}-{os.getpid()}.log"
    path.touch()
    logs = sorted(folder.glob("kubeledger-*.log"), key=lambda p: (p.stat().st_mtime, p.name))
    for old in logs[: max(0, len(logs) - keep)]:
        if old != path:
            old.unlink(missing_ok=True)
    return path


class _ConsoleFilter(logging.Filter):
    """Warnings a user can act on (everything with --verbose)."""

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if self.verbose:
            return True
        if record.name == "py.warnings" or record.name.split(".")[0] in QUIET_LIBRARIES:
            return False  # library notices (and python loggers Dagster also forwards as run logs)
        meta = getattr(record, "dagster_meta", None)
        if meta and meta.get("dagster_event") is not None:
            return False  # Dagster events: the stage lines and the summary say what happened
        text = _message(record)
        return not any(p.search(text) for p in UNACTIONABLE)


def _message(record: logging.LogRecord) -> str:
    meta = getattr(record, "dagster_meta", None)
    if meta and meta.get("orig_message"):
        return str(meta["orig_message"])
    return record.getMessage()


class _ConsoleHandler(logging.Handler):
    def __init__(self, reporter: Reporter, verbose: bool) -> None:
        super().__init__(logging.DEBUG if verbose else logging.WARNING)
        self.reporter, self.verbose = reporter, verbose
        self.addFilter(RedactingFilter())
        self.addFilter(_ConsoleFilter(verbose))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.verbose:
                text = record.getMessage() if record.name == DBT_LOGGER else \
                    f"{record.levelname.lower()}: {record.name}: {record.getMessage()}"
                self.reporter.echo(text, err=record.levelno >= logging.WARNING)
                return
            meta = getattr(record, "dagster_meta", None) or {}
            where = meta.get("step_key") or ("dbt" if record.name == DBT_LOGGER else "")
            lines = _message(record).strip().splitlines() or [""]
            text = lines[0][:500] + (" (more in the log file)" if len(lines) > 1 or len(lines[0]) > 500 else "")
            level = "error" if record.levelno >= logging.ERROR else "warning"
            self.reporter.echo(f"  {level}: {where + ': ' if where else ''}{text}", err=True)
        except Exception:  # noqa: BLE001 - logging must never break the run
            self.handleError(record)


@dataclass
class LogSession:
    path: Path
    handlers: list[tuple[logging.Logger, logging.Handler]] = field(default_factory=list)
    saved_levels: dict[str, int] = field(default_factory=dict)

    def close(self) -> None:
        for logger, handler in self.handlers:
            logger.removeHandler(handler)
            handler.close()
        for name, level in self.saved_levels.items():
            logging.getLogger(name).setLevel(level)
        logging.captureWarnings(False)


def start_logging(settings: Any, reporter: Reporter, verbose: bool, argv: list[str]) -> LogSession:
    """File handler at DEBUG for everything; console handler for actionable warnings (all with --verbose)."""
    remember_configured(settings)  # redacted from the first line on, whichever step reads them
    path = new_log_file(log_dir(settings))
    session = LogSession(path)
    root = logging.getLogger()
    session.saved_levels[""] = root.level
    root.setLevel(logging.DEBUG)
    file_handler = logging.FileHandler(path, encoding="utf-8")
    file_handler.setLevel(logging.DEBUG)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    file_handler.addFilter(RedactingFilter())  # a secret a message echoes never reaches the file (nor the console)
    console = _ConsoleHandler(reporter, verbose)
    for handler in (file_handler, console):
        root.addHandler(handler)
        session.handlers.append((root, handler))
    # per-request and per-statement lines (SQLAlchemy echoes every SQL statement of Dagster's storage at INFO)
    for noisy, level in (("urllib3", logging.INFO), ("kubernetes.client.rest", logging.INFO),
                         ("alembic", logging.WARNING), ("sqlalchemy", logging.WARNING)):
        session.saved_levels[noisy] = logging.getLogger(noisy).level
        logging.getLogger(noisy).setLevel(level)
    logging.captureWarnings(True)
    reporter.observer = Observer(reporter)
    for name in (RUN_LOGGER, DBT_LOGGER):
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(reporter.observer)
        session.handlers.append((logger, reporter.observer))
    logging.getLogger("kubeledger.cli").info("kubeledger %s: %s (config %s, warehouse %s)", cli_version(),
                                             " ".join(argv), settings.source_file or "defaults",
                                             settings.warehouse_path)
    return session


# --- dbt's output and landed hours --------------------------------------------------------------------------

class _LineLogger(io.TextIOBase):
    """A text stream that logs each complete line (dagster-dbt writes dbt's output to sys.stdout)."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger, self.buffer_text = logger, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.buffer_text += text
        *lines, self.buffer_text = self.buffer_text.split("\n")
        for line in lines:
            self._emit(line)
        return len(text)

    def flush(self) -> None:
        pass

    def close_line(self) -> None:
        if self.buffer_text:
            self._emit(self.buffer_text)
            self.buffer_text = ""

    def _emit(self, line: str) -> None:
        line = ANSI_RE.sub("", line.rstrip("\r"))
        if not line.strip():
            return
        node = DBT_NODE_RE.match(line)
        # a test at severity warn is worth a line; failures and errors are summed up when the run fails
        level = logging.WARNING if node and node.group(3) == "WARN" else logging.DEBUG
        self.logger.log(level, line)


@contextmanager
def capture_stdout() -> Iterator[None]:
    stream = _LineLogger(logging.getLogger(DBT_LOGGER))
    try:
        with redirect_stdout(stream):  # type: ignore[type-var]
            yield
    finally:
        stream.close_line()


@contextmanager
def observe_landing(callback: Callable[[Any], None]) -> Iterator[None]:
    """Call `callback(result)` after each landing write of this process (pipelines.sources.base.land), read-only:
    the extract steps land their hours in chunks, and this is how the progress display counts them."""
    from pipelines.sources import base as steps

    original = steps.land

    def land(con: Any, result: Any) -> Any:
        written = original(con, result)
        try:
            callback(result)
        except Exception:  # noqa: BLE001 - progress must never break a landing write
            logging.getLogger("kubeledger.cli").debug("progress callback failed", exc_info=True)
        return written

    steps.land = land
    try:
        yield
    finally:
        steps.land = original


# --- the runs' events and dbt's lines -> the display --------------------------------------------------------

def stage_of(job_name: str, step_key: str) -> str:
    if job_name == "reference":
        return "reference"
    if job_name == "extract_hourly":
        return "extract"
    if step_key in ("dbt_lookups", "raw__carbon_intensity_hours", "raw__boavizta_impacts", "raw_billing",
                    "dbt_daily"):
        return "transform"  # the daily build: dbt lookups, the extracts of the day (carbon, Boavizta, the bill), dbt
    if step_key.startswith("serving"):
        return "publish"
    return "checks"


class Observer(logging.Handler):
    """Turns the runs' Dagster events and dbt's lines into stage and progress updates."""

    def __init__(self, reporter: Reporter) -> None:
        super().__init__(logging.DEBUG)
        self.reporter = reporter
        self.hours: set[tuple[str, Any]] = set()
        self.expected_hours = 0
        self.days = 0
        self.dbt_done: set[tuple[int, int]] = set()  # (dbt call, node number): the daily build makes two calls
        self.dbt_totals: list[int] = []
        self.dbt_total = 0
        self.models = 0
        self.tests = {"PASS": 0, "WARN": 0, "FAIL": 0, "ERROR": 0}
        self.dbt_summary = ""
        self.check_steps = 0

    def expect(self, hours: int, days: int) -> None:
        self.expected_hours, self.days = hours, days

    def landed(self, result: Any) -> None:
        for part in getattr(result, "partitions", None) or []:
            if isinstance(part, dict) and set(part) == {"cluster", "hour_ts"}:
                self.hours.add((part["cluster"], part["hour_ts"]))
        self.reporter.advance("extract", done=len(self.hours))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name == DBT_LOGGER:
                self._dbt_line(record.getMessage())
                return
            meta = getattr(record, "dagster_meta", None) or {}
            event = meta.get("dagster_event")
            if event is not None:
                self._event(meta.get("job_name") or "", event)
        except Exception:  # noqa: BLE001 - progress must never break the run
            self.handleError(record)

    def _event(self, job_name: str, event: Any) -> None:
        kind = event.event_type_value
        step = event.step_key or ""
        r = self.reporter
        if kind == "STEP_START":
            stage = stage_of(job_name, step)
            if stage == "extract":
                r.start_stage(stage, total=self.expected_hours or None, unit="hours")
                r.advance(stage, done=len(self.hours))
            elif stage == "transform":
                r.start_stage(stage, total=self.dbt_total or None, unit="dbt nodes")
            elif stage == "publish":
                r.start_stage(stage, total=self.days or None, unit="days")
            else:
                r.start_stage(stage)
        elif kind == "STEP_SUCCESS":
            stage = stage_of(job_name, step)
            if stage == "checks":
                self.check_steps += 1
            elif stage == "publish":
                r.advance(stage, done=self.days)
                r.set_status(stage, "ok", f"{self.days} day{'s' if self.days != 1 else ''} published")
            elif stage == "extract":
                clusters = len({c for c, _ in self.hours})
                r.set_status(stage, "ok", f"{len({h for _, h in self.hours})} hours, {clusters} "
                                          f"cluster{'s' if clusters != 1 else ''}" if self.hours else None)
            elif stage == "transform":
                r.set_status(stage, "ok", self.dbt_detail())
        elif kind == "STEP_FAILURE":
            stage = stage_of(job_name, step)
            r.set_status(stage, "FAILED", self.dbt_detail() if stage == "transform" else None)
        elif kind == "ASSET_CHECK_EVALUATION":
            evaluation = event.asset_check_evaluation_data
            if stage_of(job_name, step) == "checks" or not evaluation.passed:
                warning = getattr(evaluation.severity, "value", str(evaluation.severity)) == "WARN"
                r.checks.append(CheckResult(evaluation.asset_key.to_user_string(), evaluation.check_name,
                                            evaluation.passed, _check_detail(evaluation), warning))
            if r.current == "checks":
                passed = sum(1 for c in r.checks if c.passed)
                failed = sum(1 for c in r.checks if not c.passed and not c.warning)
                warned = sum(1 for c in r.checks if not c.passed and c.warning)
                r.set_status("checks", "ok" if not failed else "FAILED", f"{passed} passed"
                             + (f", {failed} failed" if failed else "")
                             + (f", {warned} warning{'s' if warned != 1 else ''}" if warned else ""))

    def dbt_detail(self) -> str:
        parts = [f"{self.models} model{'s' if self.models != 1 else ''}"] if self.models else []
        tests = sum(self.tests.values())
        if tests:
            bad = [f"{n} {k.lower()}" for k, n in self.tests.items() if k != "PASS" and n]
            parts.append(f"{tests} test{'s' if tests != 1 else ''}" + (f": {', '.join(bad)}" if bad else " passed"))
        return ", ".join(parts)

    def _dbt_line(self, line: str) -> None:
        r = self.reporter
        if DBT_PROBLEM_RE.search(line):
            r.dbt_problems = (r.dbt_problems + [line.strip()])[-20:]
        node = DBT_NODE_RE.match(line)
        if node:
            number, total, status, rest = int(node.group(1)), int(node.group(2)), node.group(3), node.group(4)
            if r.current == "transform":
                if not self.dbt_totals or (number == 1 and status == "START"
                                           and any(c == len(self.dbt_totals) - 1 for c, _ in self.dbt_done)):
                    self.dbt_totals.append(total)  # a new dbt call (its node numbers restart at 1)
                self.dbt_totals[-1] = total
                self.dbt_total = sum(self.dbt_totals)
                total = self.dbt_total
                if status != "START":
                    self.dbt_done.add((len(self.dbt_totals) - 1, number))
                    if status == "OK" and " model " in f" {rest} ":
                        self.models += 1
                    elif status in self.tests:
                        self.tests[status] += 1
                r.advance("transform", done=len(self.dbt_done), total=total)
            elif r.current == "reference" and status != "START":
                r.set_status("reference", "ok", f"{total} seeds")
            return
        done = DBT_DONE_RE.search(line)
        if done:
            self.dbt_summary = line.strip()


CHECK_METADATA_SKIPPED = {"Execution Duration", "unique_id", "invocation_id", "status"}  # dbt's bookkeeping
CHECK_METADATA_NAMES = {"dagster_dbt/failed_row_count": "failed rows"}


def _check_detail(evaluation: Any) -> str:
    parts = []
    for key, value in (evaluation.metadata or {}).items():
        raw = getattr(value, "value", value)
        if key in CHECK_METADATA_SKIPPED or raw in (None, [], {}):
            continue
        text = str(raw)
        parts.append(f"{CHECK_METADATA_NAMES.get(key, key)} {text[:160]}{'…' if len(text) > 160 else ''}")
    return "; ".join(parts)[:400]


def run_logger_def() -> Any:
    """The Dagster logger the CLI's runs use instead of the console logger: everything to Python logging."""
    import dagster as dg

    @dg.logger(description="kubeledger CLI: every event and log to Python logging (the log file and the "
                           "progress display)")
    def kubeledger_logger(_init_context: Any) -> logging.Logger:
        logger = logging.getLogger(RUN_LOGGER)
        logger.setLevel(logging.DEBUG)
        return logger

    return kubeledger_logger

"""The serving snapshots the API reads: one read-only DuckDB instance per published snapshot, shared by all requests.

A publish writes a new file; requests that started on the previous one finish on it (it is closed when its last
lease ends), new requests see the new one within `check_interval` seconds. The API prefers its own snapshot files
(`<serving dir>/.api-snapshots/serving-<publish id>.duckdb`, written by the publish next to the BI copy) so that an
analyst who opens `serving.duckdb` read-write can lock only the BI copy, never the API. Without them (an older
warehouse, a hand-built copy) it reads `serving.duckdb` itself, and a lock held by another process is a 503 that
names the file and the process instead of a 500.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from pipelines.warehouse.publish import API_SNAPSHOT_GLOB, api_snapshot_dir
from pipelines.warehouse.source_health import newest_day_health

T = TypeVar("T")
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (.+?) \(PID (\d+)\)")


class ServingUnavailable(RuntimeError):
    """No snapshot can be read right now (missing, locked, corrupt): the API answers 503 with this reason."""

    def __init__(self, reason: str, retry_after_s: int = 5) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


def describe_open_error(path: Path, exc: BaseException) -> str:
    """One sentence for /healthz and the 503: which file, why, and what to do."""
    text = str(exc)
    m = _LOCK_HOLDER.search(text)
    if m:
        return (f"{path} is locked read-write by another process ({m.group(1)}, PID {m.group(2)}); "
                f"BI tools must open it read-only (duckdb -readonly {path}, or read_only=True)")
    if isinstance(exc, FileNotFoundError) or "No such file" in text or "does not exist" in text:
        return f"{path} does not exist yet; run the pipeline (kubeledger materialize) to publish a day"
    return f"{path} cannot be opened read-only: {type(exc).__name__}: {text.splitlines()[0] if text else ''}"


@dataclass
class Snapshot:
    """One opened snapshot file; `leases` counts requests still reading it."""

    path: Path
    stamp: tuple[int, int, int]  # (device, inode, mtime_ns): a swap changes it
    con: duckdb.DuckDBPyConnection
    opened_at: float = field(default_factory=time.time)
    leases: int = 0
    retired: bool = False
    sources: dict[str, Any] = field(default_factory=dict)  # the newest day's source health (read once per snapshot)

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.stamp[1]}:{self.stamp[2]}"


class SnapshotPool:
    """Hands out the newest readable snapshot; thread-safe."""

    def __init__(self, serving_path: str | os.PathLike[str], memory_limit: str = "1GB", threads: int = 2,
                 check_interval: float = 0.5) -> None:
        self.serving_path = Path(serving_path)
        self.memory_limit = memory_limit
        self.threads = threads
        self.check_interval = check_interval
        self._lock = threading.Lock()
        self._current: Snapshot | None = None
        self._draining: list[Snapshot] = []
        self._checked_at = 0.0
        self.last_error: str | None = None

    # -- discovery ------------------------------------------------------------------------------------------

    def _candidates(self) -> list[Path]:
        """Newest first: the API's own snapshots, then the BI copy."""
        snaps = sorted(api_snapshot_dir(self.serving_path).glob(API_SNAPSHOT_GLOB), reverse=True)
        return [*snaps, self.serving_path]

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_mtime_ns)

    def _open(self, path: Path, stamp: tuple[int, int, int]) -> Snapshot:
        con = duckdb.connect(str(path), read_only=True)
        try:
            # set after connecting: another read-only connection to this file in the process needs no matching
            # configuration; the cap is per snapshot instance, and at most two are open (current + draining)
            con.execute("SET memory_limit = ?", [self.memory_limit])
            con.execute("SET threads = ?", [self.threads])
            # a query over the cap spills here, not beside the snapshot (often a read-only volume)
            con.execute("SET temp_directory = ?", [os.path.join(tempfile.gettempdir(), "kubeledger-spill")])
            con.execute("SELECT 1").fetchone()
            sources = newest_day_health(con)
        except BaseException:
            con.close()
            raise
        return Snapshot(path=path, stamp=stamp, con=con, sources=sources)

    def _refresh_locked(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and self._current is not None and now - self._checked_at < self.check_interval:
            return
        self._checked_at = now
        errors: list[str] = []
        for path in self._candidates():
            stamp = self._stamp(path)
            if stamp is None:
                if path == self.serving_path and not errors:
                    errors.append(describe_open_error(path, FileNotFoundError(path)))
                continue
            if self._current is not None and self._current.path == path and self._current.stamp == stamp:
                self.last_error = "; ".join(errors) or None
                return
            try:
                snap = self._open(path, stamp)
            except duckdb.Error as exc:
                errors.append(describe_open_error(path, exc))
                continue
            self._retire_locked()
            self._current = snap
            self.last_error = "; ".join(errors) or None
            return
        # nothing newer could be opened: keep serving what we have, and say why
        self.last_error = "; ".join(errors) or f"no serving snapshot at {self.serving_path}"

    def _retire_locked(self) -> None:
        old = self._current
        if old is None:
            return
        old.retired = True
        if old.leases == 0:
            old.con.close()
        else:
            self._draining.append(old)
        self._current = None

    # -- leases ---------------------------------------------------------------------------------------------

    @contextmanager
    def lease(self) -> Iterator[Snapshot]:
        """The newest readable snapshot, kept open until the block ends (a publish meanwhile never breaks it)."""
        with self._lock:
            self._refresh_locked()
            snap = self._current
            if snap is None:
                raise ServingUnavailable(self.last_error or f"no serving snapshot at {self.serving_path}")
            snap.leases += 1
        try:
            yield snap
        finally:
            with self._lock:
                snap.leases -= 1
                if snap.retired and snap.leases == 0:
                    snap.con.close()
                    if snap in self._draining:
                        self._draining.remove(snap)

    def current_id(self) -> str | None:
        with self._lock:
            self._refresh_locked()
            return self._current.id if self._current else None

    def health(self) -> dict[str, Any]:
        with self._lock:
            self._refresh_locked(force=True)
            cur = self._current
            bi_lock = _bi_copy_lock(self.serving_path)
            return {
                "servable": cur is not None,
                "snapshot": str(cur.path) if cur else None,
                "snapshotId": cur.id if cur else None,
                "snapshotAgeSeconds": round(time.time() - cur.stamp[2] / 1e9, 1) if cur else None,
                "draining": len(self._draining),
                "problem": self.last_error,
                "biCopyLockedBy": bi_lock,
                "sources": cur.sources if cur else {"newestDay": None, "status": "unknown", "degraded": []},
            }

    def close(self) -> None:
        with self._lock:
            for snap in [*self._draining, *([self._current] if self._current else [])]:
                snap.con.close()
            self._draining.clear()
            self._current = None


def read_once(serving_path: Path, read: Callable[[duckdb.DuckDBPyConnection], T], **pool_options: Any) -> T:
    """`read` on one lease of the serving copy, for a one-shot command (CLI, report) that needs no pool after;
    raises ServingUnavailable without a copy."""
    pool = SnapshotPool(serving_path, **pool_options)
    try:
        with pool.lease() as snap:
            return read(snap.con)
    finally:
        pool.close()


def _bi_copy_lock(serving_path: Path) -> str | None:
    """Who holds a write lock on the BI copy (an analyst's read-write session), if anyone; None when free."""
    if not serving_path.exists():
        return None
    import fcntl
    import struct

    try:
        fd = os.open(serving_path, os.O_RDONLY)
    except OSError:
        return None
    try:
        # F_GETLK asks who would block a shared lock, i.e. whether a writer holds an exclusive one
        query = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)
        res = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        ltype, _whence, _start, _len, pid = struct.unpack("hhqqi", res)
    except OSError:
        return None
    finally:
        os.close(fd)
    if ltype == fcntl.F_UNLCK:
        return None
    return f"PID {pid}"

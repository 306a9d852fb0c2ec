"""`python -m bench.api`: the allocation API server under concurrent clients, measured end to end over HTTP.

    python -m bench.api --serving warehouse/serving.duckdb --window 2026-11-28T00:00:00Z,2026-11-29T00:00:00Z
    python -m bench.api --serving /tmp/bench/scale-1000/serving.duckdb --window 2025-03-03T00:00:00Z,2025-03-04T00:00:00Z

Starts `kubeledger serve` on 127.0.0.1 (a separate process, so its RSS is its own), then for each concurrency level
(default 1, 8, 32) sends `--requests` requests of two kinds:
- cold: every request is distinct (a different `offset`), so nothing is answered from the cache;
- warm: the same few dashboard queries again and again (the cache and single flight at work).
Prints throughput, p50/p99 latency, the share of fast 503s, peak server RSS and the machine's load average.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SHAPES = [
    ("/model/allocation", {"aggregate": "namespace"}),
    ("/model/allocation", {"aggregate": "label:app", "shareIdle": "true"}),
    ("/model/allocation", {"aggregate": "controller"}),
    ("/allocation", {"aggregate": "namespace", "includeIdle": "true"}),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _get(port: int, route: str, params: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("GET", f"{route}?{urllib.parse.urlencode(params)}")
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def run_level(port: int, window: str, concurrency: int, requests: int, cold: bool, nonce: int = 0
              ) -> dict[str, float]:
    lat: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def one(i: int) -> None:
        route, extra = SHAPES[i % len(SHAPES)]
        # cold: a fresh offset per request and run, so no answer can come from the cache
        params = {"window": window, **extra, **({"offset": str(nonce + i)} if cold else {})}
        t0 = time.perf_counter()
        status = _get(port, route, params)
        took = time.perf_counter() - t0
        with lock:
            statuses[status] = statuses.get(status, 0) + 1
            if status == 200:
                lat.append(took)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    lat.sort()

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")

    return {"rps": statuses.get(200, 0) / wall, "p50_ms": q(0.5), "p99_ms": q(0.99),
            "ok": statuses.get(200, 0), "busy_503": statuses.get(503, 0),
            "other": sum(v for k, v in statuses.items() if k not in (200, 503))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.api", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serving", type=Path, required=True, help="a published serving.duckdb")
    ap.add_argument("--window", required=True, help="an allocation window the serving copy holds")
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--requests", type=int, default=200, help="requests per level and kind")
    a = ap.parse_args(argv)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="kubeledger-bench-api-") as tmp:
        cfg = Path(tmp) / "kubeledger.yaml"
        cfg.write_text(f"warehouse:\n  serving_path: {a.serving.resolve()}\n  path: {Path(tmp) / 'unused.duckdb'}\n")
        kubeledger = Path(sys.executable).parent / "kubeledger"
        proc = subprocess.Popen([str(kubeledger), "--config", str(cfg), "serve", "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if _get(port, "/healthz", {}) == 200:
                        break
                except OSError:
                    time.sleep(0.2)
            peak = [0.0]
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], rss_mb(proc.pid))
                    time.sleep(0.05)

            threading.Thread(target=sample, daemon=True).start()
            print(f"kubeledger serve on {a.serving} ({a.serving.stat().st_size / 2**20:.1f} MiB), window {a.window}; "
                  f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
            print(f"{'kind':<6}{'clients':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'200':>6}{'503':>6}{'other':>6}")
            for kind in ("cold", "warm"):
                for n, level in enumerate(int(x) for x in a.levels.split(",")):
                    r = run_level(port, a.window, level, a.requests, cold=kind == "cold", nonce=n * a.requests)
                    print(f"{kind:<6}{level:>8}{r['rps']:>9.1f}{r['p50_ms']:>9.0f}{r['p99_ms']:>9.0f}"
                          f"{r['ok']:>6}{r['busy_503']:>6}{r['other']:>6}")
            stop.set()
            print(f"peak server RSS {peak[0]:.0f} MiB; load average {os.getloadavg()[0]:.2f} at the end")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

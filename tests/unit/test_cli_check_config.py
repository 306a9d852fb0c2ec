"""`kubeledger check-config` connects to each configured service and reports each as ok or FAILED (exit 1)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from pipelines.cli import main


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def test_a_bad_prometheus_url_fails_with_the_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))
    port = _unused_port()
    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text("warehouse:\n  path: wh/kubeledger.duckdb\n"
                   f"clusters:\n  - name: prod\n    source: prometheus\n    prometheus: {{url: 'http://127.0.0.1:{port}'}}\n"
                   "  - name: demo\n    source: demo\ncarbon:\n  provider: none\n")
    started = time.perf_counter()
    assert main(["check-config", "--config", str(cfg), "--timeout", "2"]) == 1
    assert time.perf_counter() - started < 30
    out = capsys.readouterr().out
    lines = out.splitlines()
    prom = [ln for ln in lines if "cluster prod: prometheus" in ln]
    assert len(prom) == 1 and prom[0].lstrip().startswith("FAILED"), out
    assert f"127.0.0.1:{port}" in prom[0] and "cannot connect" in prom[0], prom[0]
    assert any(ln.lstrip().startswith("ok") and "cluster demo" in ln for ln in lines), out
    assert any(ln.lstrip().startswith("ok") and ln.split()[1] == "settings:" for ln in lines), out
    assert lines[-1] == f"1 of {len(lines) - 1} checks failed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeledger.yaml"]  # nothing written


def test_a_good_configuration_passes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,region,instance_type,hourly_usd\naws,us-east-1,m5.large,0.096\n")
    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text("clusters:\n  - name: demo\n    source: demo\npricing:\n  instance_sheet: prices.csv\n")
    assert main(["check-config", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "pricing.instance_sheet" in out and "1 rows" in out and out.splitlines()[-1].startswith("all ")


def test_places_that_cannot_be_written_fail_naming_the_key(tmp_path, capsys, monkeypatch):
    """Permissions are check-config's (the settings load on read-only volumes too): each place a run writes is a
    line, FAILED with its key when its nearest existing folder is not writable."""
    import pipelines.check_config as check_config

    monkeypatch.setenv("KUBELEDGER_WAREHOUSE", str(tmp_path / "wh" / "kubeledger.duckdb"))
    (tmp_path / "ro").mkdir()
    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text("warehouse:\n  path: wh/kubeledger.duckdb\n  parquet_path: ro/parquet\n")
    real_access = os.access
    monkeypatch.setattr(check_config.os, "access",
                        lambda path, mode: Path(path) != tmp_path / "ro" and real_access(path, mode))
    assert main(["check-config", "--config", str(cfg)]) == 1
    lines = capsys.readouterr().out.splitlines()
    failed = [ln.strip() for ln in lines if ln.lstrip().startswith("FAILED")]
    assert failed == [f"FAILED warehouse.parquet_path {tmp_path / 'ro' / 'parquet'}: cannot be written "
                      f"({tmp_path / 'ro'} is not writable): fix the permissions or change warehouse.parquet_path"]
    assert any(ln.split()[:2] == ["ok", "warehouse.serving_path"] for ln in lines), lines

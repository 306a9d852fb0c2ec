"""`kubeledger demo --fault NAME` points one enrichment source at a port that refuses connections: a real failure
through the real job (tests/faults/ runs the same failure through `materialize`)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import requests

from pipelines.cli import build_parser
from pipelines.demo_faults import DEMO_FAULTS, with_fault
from pipelines.settings import Settings


def test_no_fault_is_the_settings_unchanged() -> None:
    settings = Settings()
    assert with_fault(settings, None) is settings


@pytest.mark.parametrize(("fault", "url_of"), [
    ("carbon-down", lambda s: s.carbon.base_url),
    ("boavizta-down", lambda s: s.boavizta.url),
])
def test_fault_points_the_source_at_a_refusing_port(fault: str, url_of) -> None:
    faulted = with_fault(Settings(), fault)
    url = url_of(faulted)
    assert urlsplit(url).hostname == "127.0.0.1"
    with pytest.raises(requests.ConnectionError, match="refused"):
        requests.get(url, timeout=2)
    if fault == "carbon-down":
        assert faulted.carbon.provider == "electricitymaps"


def test_the_cli_offers_every_fault_and_refuses_others(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for name in DEMO_FAULTS:
        assert parser.parse_args(["demo", "--fault", name]).fault == name
    with pytest.raises(SystemExit):
        parser.parse_args(["demo", "--fault", "everything-down"])
    assert "invalid choice" in capsys.readouterr().err

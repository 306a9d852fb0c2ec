"""The demo's `scenario: recommendations` adds its showcase pool and workloads, and only when asked: the default
demo's hours are the same with the option absent or set to `default`."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources import demo_scenario
from pipelines.sources.demo import extract_demo_hours

HOURS = [datetime(2026, 3, 1, 20), datetime(2026, 3, 1, 21)]


def _extract(scenario: str):
    c = ClusterSettings(name="demo", demo=DemoSettings(nodes=4, pods_per_node=4, scenario=scenario))
    return extract_demo_hours(c, HOURS).batches


def test_default_demo_has_no_showcase():
    default = _extract("default")
    assert not (default["container_hours"]["namespace"] == demo_scenario.NAMESPACE).any()
    plain = extract_demo_hours(ClusterSettings(name="demo", demo=DemoSettings(nodes=4, pods_per_node=4)),
                               HOURS).batches
    for table, frame in default.items():
        pd.testing.assert_frame_equal(frame, plain[table], obj=table)


def test_scenario_adds_each_case():
    b = _extract(demo_scenario.SCENARIO)
    nodes = b["node_hours"]
    pool = nodes[(nodes["instance_type"] == "m5.xlarge") & (nodes["zone"] == "us-east-1d")]
    assert len(pool) == 3 * len(HOURS)
    pods = b["pod_hours"][b["pod_hours"]["namespace"] == demo_scenario.NAMESPACE]
    ctrls = set(zip(pods["controller_kind"], pods["controller_name"], strict=True))
    assert ctrls == {("Deployment", "oversized-api"), ("Deployment", "abandoned-worker"),
                     ("Deployment", "right-sized-web"), ("CronJob", "nightly-export")}
    idle = pods[pods["controller_name"] == "abandoned-worker"]
    assert (idle["network_transmit_bytes"] == 0).all() and (idle["network_receive_bytes"] == 0).all()
    cont = b["container_hours"]
    api = cont[cont["pod"].str.startswith("oversized-api")]
    # 5 % of the 2-core request on average (diurnal factor <= 1, noise aside): far below it
    assert (api["cpu_usage_core_seconds"] / 3600 < 0.3).all() and (api["cpu_request_cores"] == 2.0).all()
    vols = b["volume_hours"]
    assert ((vols["namespace"] == demo_scenario.NAMESPACE) & (vols["pvc"] == "orphan-data")).sum() == len(HOURS)
    mounted = b["pod_volume_hours"]
    assert not (mounted["pvc"] == "orphan-data").any()

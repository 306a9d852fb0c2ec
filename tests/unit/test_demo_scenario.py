"""The demo's `scenario: recommendations` adds its showcase pool and workloads, and only when asked: the default
demo's hours are the same with the option absent or set to `default`."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pandas as pd

from pipelines.settings import ClusterSettings, DemoSettings
from pipelines.sources import demo_scenario
from pipelines.sources.demo import _frames_for_hour, _topology_for, extract_demo_hours

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
                     ("Deployment", "right-sized-web"), ("CronJob", "nightly-export"), ("Deployment", "bursty-api")}
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


def test_bursty_api_draws_alone_and_bursts():
    """bursty-api's pods draw from a generator of their own: with its pods taken out of the schedule, every other
    pod's hour is the same. Its CPU bursts to ~4x its quiet level at 22:00 UTC (one hour in four)."""
    c = ClusterSettings(name="demo", demo=DemoSettings(nodes=4, pods_per_node=4, scenario=demo_scenario.SCENARIO))
    topo = _topology_for(c)
    own = topo.slots["own_rng"].fillna(False).astype(bool).to_numpy()
    assert own.sum() == 3
    without = dataclasses.replace(topo, segs={k: v[~own[topo.segs["slot"]]] for k, v in topo.segs.items()})
    cpu = {}
    for h in (datetime(2026, 3, 1, 21), datetime(2026, 3, 1, 22)):
        full, rest = _frames_for_hour(c, topo, h), _frames_for_hour(c, without, h)
        for table in ("container_hours", "pod_hours"):
            mine = full[table]["pod"].str.startswith("bursty-api-")
            assert mine.sum() == 3
            pd.testing.assert_frame_equal(full[table][~mine].reset_index(drop=True), rest[table], obj=table)
        ch = full["container_hours"]
        cpu[h.hour] = ch.loc[ch["pod"].str.startswith("bursty-api-"), "cpu_usage_core_seconds"].sum() / 3600
    assert demo_scenario.bursty_shape(22) == 1.0 and demo_scenario.bursty_shape(21) == demo_scenario.BURST_QUIET
    assert 2.5 < cpu[22] / cpu[21] < 6

"""Boavizta's cloud instance impacts (boavizta_instances): embedded emissions and average power."""

from __future__ import annotations

from pathlib import Path

from .common import NN, Col, Seed, accepted, integer, num, read_csv, unique_combo


def boavizta_key(provider: str, instance_type: str) -> str:
    return instance_type.strip().lower()


def seed_boavizta_instances(shared: Path) -> Seed:
    rows = []
    for r in read_csv(shared / "boavizta" / "boavizta_cloud_instances_v2.5.0.csv"):
        rows.append(
            {
                "provider": r["provider"],
                "instance_type": r["instance_type"],
                "vcpu": integer(r["vcpu"]),
                "memory_gb": num(r["memory_gb"]),
                "gpu_units": integer(r["gpu_units"]),
                "cpu_family": r["cpu_family"],
                "embedded_kg_per_hour": num(r["embedded_gwp_kgco2e_per_hour"], 12),
                "embedded_kg_per_hour_min": num(r["embedded_gwp_min"], 12),
                "embedded_kg_per_hour_max": num(r["embedded_gwp_max"], 12),
                "lifetime_hours": num(r["hours_life_time"]),
                "avg_power_w_0": num(r["avg_power_w_load0"]),
                "avg_power_w_10": num(r["avg_power_w_load10"]),
                "avg_power_w_50": num(r["avg_power_w_load50"]),
                "avg_power_w_100": num(r["avg_power_w_load100"]),
            }
        )
    keys = [(x["provider"], x["instance_type"].lower()) for x in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("boavizta_instances: duplicate (provider, lower(instance_type))")
    rows.sort(key=lambda x: (x["provider"], x["instance_type"]))
    return Seed(
        "boavizta_instances",
        "Boavizta API 2.5.0 cloud instance impacts (generated locally; data AGPL-3.0, attributed in "
        "NOTICE): embedded (manufacturing) kgCO2e per hour over Boavizta's own 52,560 h lifetime and "
        "whole-instance average power at 0/10/50/100 % load. Azure types are lower-case without the "
        "'Standard_' prefix ('d2ads_v5'): use boavizta_instance_key(). gpu_units is Boavizta's "
        "platform value (g4dn.xlarge = 8), not the instance's GPU count: use gpu_instance_map.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("instance_type", "varchar", "Boavizta's instance name (lower-case).", [NN]),
            Col("vcpu", "integer", "vCPUs.", [NN]),
            Col("memory_gb", "double", "Memory GB.", [NN]),
            Col("gpu_units", "integer", "Boavizta gpu_units (platform-level, see description).", [NN]),
            Col("cpu_family", "varchar", "CPU microarchitecture per Boavizta (may be empty)."),
            Col("embedded_kg_per_hour", "double", "Embedded kgCO2e per instance-hour (duration=1).", [NN]),
            Col("embedded_kg_per_hour_min", "double", "Lower bound.", [NN]),
            Col("embedded_kg_per_hour_max", "double", "Upper bound.", [NN]),
            Col("lifetime_hours", "double", "Boavizta lifetime (52560 h = 6 y).", [NN]),
            Col("avg_power_w_0", "double", "Average W at 0 % load (whole instance).", [NN]),
            Col("avg_power_w_10", "double", "Average W at 10 % load.", [NN]),
            Col("avg_power_w_50", "double", "Average W at 50 % load.", [NN]),
            Col("avg_power_w_100", "double", "Average W at 100 % load.", [NN]),
        ],
        rows,
        [unique_combo("provider", "instance_type")],
    )

"""The seed derivations behind scripts/derive_seeds.py, one module per seed or group of seeds:

- common: plain-decimal numbers, CSV reading, the seed specification (`Seed`, `Col`, data tests);
- prices: opencost_prices, load_balancer_prices, instance_prices;
- power: power_processor_coefficients, power_instance_profiles, power_provider_averages;
- gpu: gpu_power_profiles, gpu_instance_map;
- pue: pue_by_provider, pue_by_region;
- intensity: region_carbon_zones, region_annual_intensity, zone_annual_intensity;
- wattnet: wattnet_zone_map;  boavizta: boavizta_instances;  ccf_constants: ccf_constants;
- storage: storage_class_media;
- render: the CSV and `_seeds.yml` writers.
"""

from __future__ import annotations

from pathlib import Path

from .boavizta import seed_boavizta_instances
from .ccf_constants import seed_ccf_constants
from .common import Seed
from .gpu import seed_gpu_instance_map, seed_gpu_power_profiles
from .intensity import seed_region_annual_intensity, seed_region_carbon_zones, seed_zone_annual_intensity
from .power import (
    seed_power_instance_profiles,
    seed_power_processor_coefficients,
    seed_power_provider_averages,
)
from .prices import seed_instance_prices, seed_load_balancer_prices, seed_opencost_prices
from .pue import seed_pue_by_provider, seed_pue_by_region
from .render import render_csv, render_yaml
from .storage import seed_storage_class_media
from .wattnet import seed_wattnet_zone_map


def build(shared: Path) -> tuple[list[Seed], list[str]]:
    """Every seed, in `_seeds.yml` order, and the report lines (what was left out and why)."""
    report: list[str] = []
    region_zones = seed_region_carbon_zones(shared, report)
    wattnet = seed_wattnet_zone_map(shared, report)
    seeds = [
        seed_opencost_prices(shared),
        seed_load_balancer_prices(),
        seed_instance_prices(),
        seed_power_processor_coefficients(shared),
        seed_power_instance_profiles(shared, report),
        seed_power_provider_averages(),
        seed_gpu_power_profiles(shared),
        seed_gpu_instance_map(shared, report),
        seed_pue_by_provider(shared),
        seed_pue_by_region(shared),
        region_zones,
        seed_zone_annual_intensity(shared, region_zones, wattnet, report),
        seed_region_annual_intensity(shared),
        wattnet,
        seed_boavizta_instances(shared),
        seed_ccf_constants(shared),
        seed_storage_class_media(),
    ]
    return seeds, report


def outputs(seeds: list[Seed]) -> dict[str, str]:
    files = {f"{s.name}.csv": render_csv(s) for s in seeds}
    files["_seeds.yml"] = render_yaml(seeds)
    return files

"""Accelerators: power per GPU/FPGA model (gpu_power_profiles) and instance type -> model and
count (gpu_instance_map)."""

from __future__ import annotations

from pathlib import Path

from .common import NN, UQ, Col, Seed, accepted, num, read_csv, relationship, unique_combo
from .power import instance_key, is_accelerator, load_ccf_app_coefficients

# CCF accelerator name -> (short model name, vendor, kind)
GPU_MODELS = {
    "Nvidia T4": ("T4", "nvidia", "gpu"),
    "Nvidia A10G": ("A10G", "nvidia", "gpu"),
    "Nvidia Tesla V100": ("V100", "nvidia", "gpu"),
    "Nvidia Tesla A100": ("A100", "nvidia", "gpu"),
    "Nvidia Tesla K80": ("K80", "nvidia", "gpu"),
    "Nvidia Tesla P100": ("P100", "nvidia", "gpu"),
    "Nvidia Tesla M60": ("M60", "nvidia", "gpu"),
    "Nvidia Tesla P4": ("P4", "nvidia", "gpu"),
    "Nvidia Tesla P40": ("P40", "nvidia", "gpu"),
    "Nvidia K520": ("K520", "nvidia", "gpu"),
    "AMD Radeon Pro V520": ("Radeon Pro V520", "amd", "gpu"),
    "Xilinx Alveo U250": ("Alveo U250", "xilinx", "fpga"),
}


def seed_gpu_power_profiles(shared: Path) -> Seed:
    found: dict[str, tuple[float, float, set]] = {}
    for r in load_ccf_app_coefficients(shared):
        if not is_accelerator(r["processor"]):
            continue
        if r["processor"] not in GPU_MODELS:
            raise SystemExit(f"gpu_power_profiles: unclassified accelerator {r['processor']!r}")
        pair = (float(r["min_watts_per_vcpu"]), float(r["max_watts_per_vcpu"]))
        if r["processor"] in found and found[r["processor"]][:2] != pair:
            raise SystemExit(f"gpu_power_profiles: providers disagree on {r['processor']}")
        entry = found.setdefault(r["processor"], (pair[0], pair[1], set()))
        entry[2].add(r["provider"])
    rows = []
    for ccf_name, (lo, hi, providers) in found.items():
        model, vendor, kind = GPU_MODELS[ccf_name]
        rows.append(
            {
                "gpu_model": model,
                "ccf_name": ccf_name,
                "vendor": vendor,
                "accelerator_kind": kind,
                "min_watts": num(lo),
                "max_watts": num(hi),
                "ccf_providers": ";".join(sorted(providers)),
            }
        )
    rows.sort(key=lambda x: x["gpu_model"])
    return Seed(
        "gpu_power_profiles",
        "Power per accelerator (W per GPU/FPGA at idle and at 100 %) from the GPU rows of ccf-derived/"
        "ccf_processor_coefficients.csv (CCF, Apache-2.0; METHOD.md B9). Match a DCGM modelName "
        "('Tesla T4', 'NVIDIA A10G', 'Tesla V100-SXM2-16GB') by the longest gpu_model it contains "
        "(so 'Tesla P40' matches P40, not P4).",
        [
            Col(
                "gpu_model",
                "varchar",
                "Short model name ('T4', 'A10G', 'V100', 'Radeon Pro V520'...).",
                [NN, UQ],
            ),
            Col("ccf_name", "varchar", "CCF's name ('Nvidia Tesla V100').", [NN, UQ]),
            Col("vendor", "varchar", "nvidia, amd or xilinx.", [NN, accepted(["amd", "nvidia", "xilinx"])]),
            Col("accelerator_kind", "varchar", "gpu or fpga.", [NN, accepted(["fpga", "gpu"])]),
            Col("min_watts", "double", "W per device at idle.", [NN]),
            Col("max_watts", "double", "W per device at 100 %.", [NN]),
            Col("ccf_providers", "varchar", "Providers whose CCF constants list it (';').", [NN]),
        ],
        rows,
    )


# Instance GPU counts not in the Teads/CCF instance tables (AWS/Azure public instance specs).
CURATED_GPU_COUNTS = {
    ("aws", "g5.xlarge"): 1,
    ("aws", "g5.2xlarge"): 1,
    ("aws", "g5.4xlarge"): 1,
    ("aws", "g5.8xlarge"): 1,
    ("aws", "g5.16xlarge"): 1,
    ("aws", "g5.12xlarge"): 4,
    ("aws", "g5.24xlarge"): 4,
    ("aws", "g5.48xlarge"): 8,
    ("aws", "g5g.xlarge"): 1,
    ("aws", "g5g.2xlarge"): 1,
    ("aws", "g5g.4xlarge"): 1,
    ("aws", "g5g.8xlarge"): 1,
    ("aws", "g5g.16xlarge"): 2,
    ("aws", "g5g.metal"): 2,
    ("azure", "ND96asr A100 v4"): 8,
    ("azure", "ND96amsr A100 v4"): 8,
    ("azure", "NP10s"): 1,
    ("azure", "NP20s"): 2,
    ("azure", "NP40s"): 4,
}


def gpu_counts_from_ccf_data(shared: Path) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for r in read_csv(shared / "ccf-coefficients" / "data" / "aws-instances.csv"):
        n = r.get("Instance Number of GPU", "")
        if n.isdigit() and int(n) > 0:
            counts[("aws", r["Instance type"])] = int(n)
    for r in read_csv(shared / "ccf-coefficients" / "data" / "azure-instances.csv"):
        n = r.get("Instance GPUs", "")
        if n.isdigit() and int(n) > 0:
            counts[("azure", r["Virtual Machine"])] = int(n)
    return counts


def seed_gpu_instance_map(shared: Path, report: list[str]) -> Seed:
    counts = gpu_counts_from_ccf_data(shared)
    rows = []
    no_count = []
    for r in read_csv(shared / "ccf-derived" / "ccf_instance_type_processors.csv"):
        if not r["provider"].endswith("-gpu"):
            continue
        provider = r["provider"].removesuffix("-gpu")
        itype = r["instance_type_or_family"]
        procs = [p.strip() for p in r["processors"].split(";") if p.strip()]
        if len(procs) != 1 or procs[0] not in GPU_MODELS:
            no_count.append(f"{provider}:{itype} (unparseable {r['processors']!r})")
            continue
        key = (provider, itype)
        if key in counts:
            count, count_source = str(counts[key]), f"ccf-coefficients/data/{provider}-instances.csv"
        elif key in CURATED_GPU_COUNTS:
            count, count_source = str(CURATED_GPU_COUNTS[key]), "curated instance spec (verify)"
        else:
            count, count_source = "", ""
            no_count.append(f"{provider}:{itype}")
        rows.append(
            {
                "provider": provider,
                "instance_type": itype,
                "instance_key": instance_key(provider, itype),
                "gpu_model": GPU_MODELS[procs[0]][0],
                "gpu_count": count,
                "gpu_count_source": count_source,
            }
        )
    rows.sort(key=lambda x: (x["provider"], x["instance_key"]))
    report.append(f"gpu_instance_map: rows without gpu_count: {no_count or 'none'}")
    return Seed(
        "gpu_instance_map",
        "Instance type -> accelerator model and count, from the '-gpu' rows of ccf-derived/"
        "ccf_instance_type_processors.csv (CCF, Apache-2.0). Counts from ccf-coefficients/data/"
        "{aws,azure}-instances.csv (Teads-based, Apache-2.0), else curated public specs (marked).",
        [
            Col("provider", "varchar", "aws or azure.", [NN, accepted(["aws", "azure"])]),
            Col("instance_type", "varchar", "CCF key: AWS type, Azure size ('NC6s v3').", [NN]),
            Col("instance_key", "varchar", "Lower-case key, as produced by instance_profile_key().", [NN]),
            Col(
                "gpu_model",
                "varchar",
                "Short model name (gpu_power_profiles.gpu_model).",
                [NN, relationship("gpu_power_profiles", "gpu_model")],
            ),
            Col("gpu_count", "integer", "Accelerators per instance (empty if unknown)."),
            Col("gpu_count_source", "varchar", "Where the count comes from."),
        ],
        rows,
        [unique_combo("provider", "instance_key")],
    )

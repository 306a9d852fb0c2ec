"""CPU power: CCF's processor coefficients, the resolved profile per instance key and the
provider averages."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .common import (
    CCF_2026,
    CCF_APP,
    NN,
    UQ,
    Col,
    Seed,
    accepted,
    mean,
    num,
    read_csv,
    unique_combo,
)

ACCELERATOR_PREFIXES = ("Nvidia ", "AMD Radeon", "Xilinx ")


def is_accelerator(processor: str) -> bool:
    return processor.startswith(ACCELERATOR_PREFIXES)


# ccf-coefficients architecture names -> the ccf-app (CCF TypeScript) names
def ccf2026_processor_name(arch: str) -> str:
    if arch.startswith("EPYC "):
        return "AMD " + arch
    if arch.startswith("Graviton"):
        return "AWS " + arch
    return arch


def load_ccf_app_coefficients(shared: Path) -> list[dict[str, str]]:
    return read_csv(shared / "ccf-derived" / "ccf_processor_coefficients.csv")


def seed_power_processor_coefficients(shared: Path) -> Seed:
    rows = []
    for r in load_ccf_app_coefficients(shared):
        if is_accelerator(r["processor"]):
            continue
        rows.append(
            {
                "provider": r["provider"],
                "processor": r["processor"],
                "min_watts_per_vcpu": num(r["min_watts_per_vcpu"]),
                "max_watts_per_vcpu": num(r["max_watts_per_vcpu"]),
                "memory_gb_per_chip": num(r["memory_gb_per_physical_chip"]),
                "profile_version": CCF_APP,
                "source_name": r["processor"],
                "source": "ccf-derived/ccf_processor_coefficients.csv",
            }
        )
    for provider in ("aws", "azure", "gcp"):
        fname = f"coefficients-{provider}-use.csv"
        for r in read_csv(shared / "ccf-coefficients" / "output" / fname):
            rows.append(
                {
                    "provider": provider,
                    "processor": ccf2026_processor_name(r["Architecture"]),
                    "min_watts_per_vcpu": num(r["Min Watts"]),
                    "max_watts_per_vcpu": num(r["Max Watts"]),
                    "memory_gb_per_chip": num(r["GB/Chip"]),
                    "profile_version": CCF_2026,
                    "source_name": r["Architecture"],
                    "source": f"ccf-coefficients/output/{fname}",
                }
            )
    rows.sort(key=lambda x: (x["profile_version"], x["provider"], x["processor"]))
    return Seed(
        "power_processor_coefficients",
        "CPU power per vCPU by microarchitecture (Cloud Carbon Footprint, Apache-2.0). profile_version "
        "'ccf-app' = values the CCF application uses (ccf-derived); 'ccf-2026' = newer ccf-coefficients "
        "output (more architectures, different old values). Never mix versions silently (METHOD.md B8). "
        "GPUs/accelerators are in gpu_power_profiles.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col(
                "processor",
                "varchar",
                "Microarchitecture, CCF app naming (e.g. 'Skylake', 'AMD EPYC 2nd Gen', 'AWS Graviton2').",
                [NN],
            ),
            Col("min_watts_per_vcpu", "double", "W per vCPU at idle.", [NN]),
            Col("max_watts_per_vcpu", "double", "W per vCPU at 100 % CPU.", [NN]),
            Col(
                "memory_gb_per_chip",
                "double",
                "GB of memory per physical chip covered by the CPU "
                "coefficients (empty where CCF gives none).",
            ),
            Col(
                "profile_version", "varchar", "'ccf-app' or 'ccf-2026'.", [NN, accepted([CCF_APP, CCF_2026])]
            ),
            Col("source_name", "varchar", "Architecture name in the origin file.", [NN]),
            Col("source", "varchar", "Origin file under shared/data.", [NN]),
        ],
        rows,
        [unique_combo("provider", "processor", "profile_version")],
    )


def coefficient_lookup(shared: Path) -> tuple[dict, dict]:
    """(provider, processor) -> (min, max) and processor -> (min, max) from any provider (aws, azure, gcp
    order; CPU values are identical across providers in ccf-app)."""
    by_provider: dict[tuple[str, str], tuple[float, float]] = {}
    any_provider: dict[str, tuple[float, float]] = {}
    rows = [r for r in load_ccf_app_coefficients(shared) if not is_accelerator(r["processor"])]
    order = {"aws": 0, "azure": 1, "gcp": 2}
    for r in sorted(rows, key=lambda x: order.get(x["provider"], 9)):
        pair = (float(r["min_watts_per_vcpu"]), float(r["max_watts_per_vcpu"]))
        by_provider[(r["provider"], r["processor"])] = pair
        any_provider.setdefault(r["processor"], pair)
    return by_provider, any_provider


def instance_key(provider: str, ccf_key: str) -> str:
    """The normalised key stored in power_instance_profiles (the macro instance_profile_key produces the
    same from a Kubernetes instance-type label): lower-case CCF key."""
    return ccf_key.strip().lower()


def instance_profile_rows(shared: Path) -> tuple[list[dict[str, str]], dict[str, int], list[str]]:
    """The profile rows, the all-'Unknown' rows left out per provider, and the rows left out for a processor
    without a ccf-app coefficient ('provider:key (processors)')."""
    by_provider, any_provider = coefficient_lookup(shared)
    src = read_csv(shared / "ccf-derived" / "ccf_instance_type_processors.csv")
    rows = []
    omitted_unknown = defaultdict(int)
    omitted_unmatched: list[str] = []
    for r in src:
        provider = r["provider"]
        if provider.endswith("-gpu"):
            continue
        procs = [p.strip() for p in r["processors"].split(";") if p.strip()]
        known = [p for p in procs if p != "Unknown"]
        if not known:
            omitted_unknown[provider] += 1
            continue
        pairs = []
        unmatched = []
        for p in known:
            pair = by_provider.get((provider, p)) or any_provider.get(p)
            if pair is None:
                unmatched.append(p)
            else:
                pairs.append(pair)
        if unmatched or len(known) != len(procs):
            # CCF's app averages the coefficients of all listed processors; one without a coefficient
            # makes the average undefined and the app falls back to the provider average. Same here.
            omitted_unmatched.append(f"{provider}:{r['instance_type_or_family']} ({';'.join(unmatched)})")
            continue
        key = r["instance_type_or_family"]
        if provider == "gcp":
            match_kind = "family" if "-" not in key else "type"
        else:
            match_kind = "type"
        rows.append(
            {
                "provider": provider,
                "instance_key": instance_key(provider, key),
                "instance_key_original": key,
                "match_kind": match_kind,
                "processors": ";".join(procs),
                "processor_count": str(len(procs)),
                "min_watts_per_vcpu": num(mean(p[0] for p in pairs)),
                "max_watts_per_vcpu": num(mean(p[1] for p in pairs)),
                "profile_version": CCF_APP,
            }
        )
    return rows, omitted_unknown, omitted_unmatched


def seed_power_instance_profiles(shared: Path, report: list[str]) -> Seed:
    rows, omitted_unknown, omitted_unmatched = instance_profile_rows(shared)
    keys = [(x["provider"], x["instance_key"]) for x in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("power_instance_profiles: instance_key collision after lower-casing")
    rows.sort(key=lambda x: (x["provider"], x["instance_key"]))
    by_unmatched = defaultdict(int)
    for item in omitted_unmatched:
        by_unmatched[item.split("(")[1].rstrip(")")] += 1
    report.append(
        "power_instance_profiles: omitted all-'Unknown' rows "
        + ", ".join(f"{k} {v}" for k, v in sorted(omitted_unknown.items()))
        + "; omitted rows with processors lacking a ccf-app coefficient: "
        + (", ".join(f"{k!r} x{v}" for k, v in sorted(by_unmatched.items())) or "none")
    )
    return Seed(
        "power_instance_profiles",
        "Resolved CCF power profile per instance key (ccf-app values): the processors CCF assigns to an "
        "AWS type, an Azure VM size or a GCP machine family, and the MEAN of their min/max W per vCPU "
        "(METHOD.md B8). Keys whose processors are all 'Unknown', or include one without a ccf-app "
        "coefficient (Ice Lake, AWS Graviton 1st gen), are absent: they fall to power_provider_averages. "
        "Join with the macro instance_profile_key(provider, instance_type). Origin: ccf-derived/"
        "ccf_instance_type_processors.csv + ccf_processor_coefficients.csv (CCF, Apache-2.0).",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col(
                "instance_key",
                "varchar",
                "Lower-case CCF key: aws type ('m5.large'), azure size ('d2s v3'), gcp family ('n2').",
                [NN],
            ),
            Col("instance_key_original", "varchar", "The key as spelled in the CCF file.", [NN]),
            Col(
                "match_kind",
                "varchar",
                "'type' (aws type / azure size / gcp full machine type) or 'family' (gcp machine family).",
                [NN, accepted(["type", "family"])],
            ),
            Col("processors", "varchar", "';'-separated microarchitectures.", [NN]),
            Col("processor_count", "integer", "Number of processors averaged.", [NN]),
            Col("min_watts_per_vcpu", "double", "Mean min W per vCPU over the processors.", [NN]),
            Col("max_watts_per_vcpu", "double", "Mean max W per vCPU over the processors.", [NN]),
            Col("profile_version", "varchar", "'ccf-app'.", [NN, accepted([CCF_APP])]),
        ],
        rows,
        [unique_combo("provider", "instance_key")],
    )


# METHOD.md B3 (GreenKube), plus the per-vCPU fallback.
PROVIDER_AVERAGES = [
    ("aws", 0.74, 3.5, "GreenKube (= CCF AWS average)"),
    ("gcp", 0.71, 4.26, "GreenKube (CCF median is 0.68 / 4.11)"),
    ("azure", 0.78, 3.76, "GreenKube (CCF average is 0.74 / 3.54)"),
    ("ovhcloud", 0.80, 3.52, "GreenKube (mean of CCF architectures)"),
    ("scaleway", 0.60, 2.78, "GreenKube (mean)"),
    (
        "__unknown__",
        1.0,
        10.0,
        "GreenKube methodology fallback, applied PER vCPU (kubeledger rule, METHOD.md B3)",
    ),
]


def seed_power_provider_averages() -> Seed:
    rows = [
        {"provider": p, "min_watts_per_vcpu": num(a), "max_watts_per_vcpu": num(b), "source": s}
        for p, a, b, s in PROVIDER_AVERAGES
    ]
    rows.sort(key=lambda x: x["provider"])
    return Seed(
        "power_provider_averages",
        "Provider-average W per vCPU used when an instance type has no CCF profile, and the '__unknown__' "
        "fallback (1 / 10 W per vCPU) for unknown providers (METHOD.md B3).",
        [
            Col(
                "provider",
                "varchar",
                "aws, gcp, azure, ovhcloud, scaleway or '__unknown__'.",
                [NN, UQ, accepted([p for p, *_ in PROVIDER_AVERAGES])],
            ),
            Col("min_watts_per_vcpu", "double", "W per vCPU at idle.", [NN]),
            Col("max_watts_per_vcpu", "double", "W per vCPU at 100 % CPU.", [NN]),
            Col("source", "varchar", "Where the value comes from.", [NN]),
        ],
        rows,
    )

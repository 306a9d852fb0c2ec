"""Derive kubeledger's dbt seed CSVs (top-level ``seeds/``) from the public data in ``shared/data``.

Usage::

    python scripts/derive_seeds.py [--shared PATH] [--out PATH] [--check]

``--shared`` defaults to ``../shared/data`` relative to the repository root; ``--out`` to ``seeds/``.
``--check`` regenerates into memory and fails if any file in ``--out`` differs (CI drift check).

Output is deterministic: rows are sorted, numbers are written in plain decimal notation, line endings are
``\\n``. Besides the CSVs the script writes ``seeds/_seeds.yml`` (dbt properties: descriptions, explicit
``column_types`` and data tests) from the same column specification, so the two cannot drift apart.
``seeds/README.md`` is written by hand and describes every seed.

Every value comes from a file under ``shared/data`` (origin and licence in its README.md) or from a
constant documented in ``shared/reference/METHOD.md``; the few hand-curated values (instance list prices,
storage-class media, Wattnet -> Electricity Maps renames, ISO country codes) are marked as such in the
output rows.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "seeds"

CCF_APP = "ccf-app"
CCF_2026 = "ccf-2026"
INSTANCE_PRICE_SOURCE = "curated list price (verify before production use)"


# --------------------------------------------------------------------------------------------- helpers


def num(value: object, digits: int = 10) -> str:
    """Plain-decimal text for a number (no exponent), rounded to ``digits`` decimals; '' for None/''."""
    if value is None or value == "":
        return ""
    x = round(float(value), digits)
    if x == 0:
        x = 0.0  # no negative zero
    text = format(Decimal(repr(x)), "f")
    if "." not in text:
        text += ".0"
    return text


def integer(value: object) -> str:
    if value is None or value == "":
        return ""
    x = float(value)
    if x != int(x):
        raise ValueError(f"not an integer: {value!r}")
    return str(int(x))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in rows]


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals)


# ------------------------------------------------------------------------------------ seed specification


@dataclass
class Col:
    name: str
    type: str  # varchar | double | integer | boolean
    description: str
    tests: list = field(default_factory=list)


@dataclass
class Seed:
    name: str
    description: str
    columns: list[Col]
    rows: list[dict[str, str]]
    model_tests: list = field(default_factory=list)


def accepted(values: list[str]) -> dict:
    return {"accepted_values": {"arguments": {"values": list(values)}}}


def unique_combo(*cols: str) -> dict:
    # `string`: a VARCHAR alias on DuckDB, the text type on Spark (which rejects VARCHAR without a length)
    expr = " || '|' || ".join(f"coalesce(cast({c} as string), '')" for c in cols)
    return {"unique": {"arguments": {"column_name": expr}}}


def relationship(to_seed: str, to_field: str) -> dict:
    return {"relationships": {"arguments": {"to": f"ref('{to_seed}')", "field": to_field}}}


NN = "not_null"
UQ = "unique"


# ------------------------------------------------------------------------------------------- 1 prices

# OpenCost JSON keys that hold hourly prices -> (seed price_key, unit)
OPENCOST_PRICE_KEYS = {
    "CPU": ("CPU", "USD/vCPU-h"),
    "spotCPU": ("spotCPU", "USD/vCPU-h"),
    "RAM": ("RAM", "USD/GiB-h"),
    "spotRAM": ("spotRAM", "USD/GiB-h"),
    "GPU": ("GPU", "USD/GPU-h"),
    "spotGPU": ("spotGPU", "USD/GPU-h"),
    "storage": ("storage", "USD/GiB-h"),
    "zoneNetworkEgress": ("zoneNetworkEgress", "USD/GiB"),
    "regionNetworkEgress": ("regionNetworkEgress", "USD/GiB"),
    "internetNetworkEgress": ("internetNetworkEgress", "USD/GiB"),
    "defaultLBPrice": ("LoadBalancer", "USD/h"),
}
OPENCOST_FILES = ["default", "aws", "gcp", "azure", "alibaba", "oracle"]
# METHOD.md A4: OpenCost's built-in fallback when no pricing file is configured.
OPENCOST_BUILTIN = {
    "CPU": 0.021811,
    "spotCPU": 0.006543,
    "RAM": 0.002923,
    "spotRAM": 0.000877,
    "GPU": 0.95,
    "spotGPU": 0.308,
}


def _is_number(text: object) -> bool:
    if not isinstance(text, str | int | float) or isinstance(text, bool) or text == "":
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def seed_opencost_prices(shared: Path) -> Seed:
    rows = []
    for provider in OPENCOST_FILES:
        data = json.loads((shared / "opencost" / f"{provider}.json").read_text(encoding="utf-8"))
        for key, value in data.items():
            if key not in OPENCOST_PRICE_KEYS:
                if _is_number(value):
                    raise SystemExit(f"opencost/{provider}.json: unknown numeric key {key!r}; classify it")
                continue  # provider name, description, credentials, labels...
            if not _is_number(value):
                raise SystemExit(f"opencost/{provider}.json: {key}={value!r} is not a number")
            price_key, unit = OPENCOST_PRICE_KEYS[key]
            rows.append(
                {
                    "provider": provider,
                    "price_key": price_key,
                    "hourly_usd": num(value),
                    "unit": unit,
                    "json_key": key,
                    "source": f"opencost/{provider}.json",
                }
            )
    for key, value in OPENCOST_BUILTIN.items():
        price_key, unit = OPENCOST_PRICE_KEYS[key]
        rows.append(
            {
                "provider": "opencost_builtin",
                "price_key": price_key,
                "hourly_usd": num(value),
                "unit": unit,
                "json_key": "",
                "source": "OpenCost built-in fallback (METHOD.md A4)",
            }
        )
    rows.sort(key=lambda r: (r["provider"], r["price_key"]))
    return Seed(
        "opencost_prices",
        "OpenCost default and provider price files (HOURLY values; OpenCost's monthly ConfigMap divides by "
        "730, these files do not) plus OpenCost's built-in fallback. Origin: shared/data/opencost/*.json "
        "(OpenCost, Apache-2.0). Non-price keys are dropped; defaultLBPrice is stored as LoadBalancer.",
        [
            Col(
                "provider",
                "varchar",
                "File stem (default, aws, gcp, azure, alibaba, oracle) or 'opencost_builtin'.",
                [NN, accepted(OPENCOST_FILES + ["opencost_builtin"])],
            ),
            Col(
                "price_key",
                "varchar",
                "Price name (OpenCost JSON key; defaultLBPrice -> LoadBalancer).",
                [NN, accepted(sorted({v[0] for v in OPENCOST_PRICE_KEYS.values()}))],
            ),
            Col(
                "hourly_usd",
                "double",
                "Price in USD per unit (see unit); hourly for CPU/RAM/GPU/storage.",
                [NN],
            ),
            Col(
                "unit",
                "varchar",
                "USD/vCPU-h, USD/GiB-h, USD/GPU-h, USD/GiB (egress) or USD/h (load balancer).",
                [NN, accepted(sorted({v[1] for v in OPENCOST_PRICE_KEYS.values()}))],
            ),
            Col("json_key", "varchar", "Original JSON key ('' / NULL for built-in rows)."),
            Col("source", "varchar", "Origin file or document.", [NN]),
        ],
        rows,
        [unique_combo("provider", "price_key")],
    )


LOAD_BALANCER = [
    ("aws", 0.025, "OpenCost implementation (METHOD.md A9)"),
    ("gcp", 0.025, "OpenCost implementation (METHOD.md A9)"),
    ("azure", 0.005, "OpenCost implementation (METHOD.md A9)"),
    ("alibaba", 0.007, "OpenCost implementation (METHOD.md A9); opencost/alibaba.json defaultLBPrice"),
    ("oracle", 0.0113, "OpenCost implementation (METHOD.md A9); opencost/oracle.json defaultLBPrice"),
    ("default", 0.025, "kubeledger default for unknown providers (= aws/gcp)"),
]


def seed_load_balancer_prices() -> Seed:
    rows = [{"provider": p, "hourly_usd": num(v), "source": s} for p, v, s in LOAD_BALANCER]
    rows.sort(key=lambda r: r["provider"])
    return Seed(
        "load_balancer_prices",
        "Hourly price of one LoadBalancer Service per provider (OpenCost implementation, METHOD.md A9).",
        [
            Col(
                "provider",
                "varchar",
                "aws, gcp, azure, alibaba, oracle, or 'default'.",
                [NN, UQ, accepted([p for p, _, _ in LOAD_BALANCER])],
            ),
            Col("hourly_usd", "double", "USD per service-hour.", [NN]),
            Col("source", "varchar", "Where the value comes from.", [NN]),
        ],
        rows,
    )


# (provider, region, instance_type, on-demand USD/h, confidence, note)
LIST = "list"
APPROX = "approximate"
GCP_EU_NOTE = "approximate: us-central1 per-resource rates x 1.10 (europe-west1 uplift)"
AZ_EU_NOTE = "approximate: westeurope pay-as-you-go, about 1.2 x eastus"
INSTANCE_PRICES = [
    # AWS, Linux, shared tenancy, on-demand
    ("aws", "us-east-1", "m5.large", 0.096, LIST, ""),
    ("aws", "us-east-1", "m5.xlarge", 0.192, LIST, ""),
    ("aws", "us-east-1", "m5.2xlarge", 0.384, LIST, ""),
    ("aws", "us-east-1", "m5.4xlarge", 0.768, LIST, ""),
    ("aws", "us-east-1", "c5.large", 0.085, LIST, ""),
    ("aws", "us-east-1", "c5.xlarge", 0.17, LIST, ""),
    ("aws", "us-east-1", "c5.2xlarge", 0.34, LIST, ""),
    ("aws", "us-east-1", "c5.4xlarge", 0.68, LIST, ""),
    ("aws", "us-east-1", "r5.large", 0.126, LIST, ""),
    ("aws", "us-east-1", "r5.xlarge", 0.252, LIST, ""),
    ("aws", "us-east-1", "t3.medium", 0.0416, LIST, ""),
    ("aws", "us-east-1", "t3.large", 0.0832, LIST, ""),
    ("aws", "us-east-1", "m6i.large", 0.096, LIST, ""),
    ("aws", "us-east-1", "m6i.xlarge", 0.192, LIST, ""),
    ("aws", "us-east-1", "m6g.large", 0.077, LIST, ""),
    ("aws", "us-east-1", "g4dn.xlarge", 0.526, LIST, ""),
    ("aws", "us-east-1", "g4dn.2xlarge", 0.752, LIST, ""),
    ("aws", "us-east-1", "p3.2xlarge", 3.06, LIST, ""),
    ("aws", "eu-west-1", "m5.large", 0.107, LIST, ""),
    ("aws", "eu-west-1", "m5.xlarge", 0.214, LIST, ""),
    ("aws", "eu-west-1", "m5.2xlarge", 0.428, LIST, ""),
    ("aws", "eu-west-1", "c5.xlarge", 0.192, LIST, ""),
    ("aws", "eu-west-1", "c5.2xlarge", 0.384, LIST, ""),
    ("aws", "eu-west-1", "r5.large", 0.141, LIST, ""),
    ("aws", "eu-west-1", "t3.medium", 0.0456, LIST, ""),
    ("aws", "eu-west-1", "m6i.large", 0.107, LIST, ""),
    ("aws", "eu-west-1", "g4dn.xlarge", 0.587, LIST, ""),
    ("aws", "eu-west-1", "p3.2xlarge", 3.305, LIST, ""),
    # GCP, on-demand (us-central1 = vCPU/RAM SKU rates x shape)
    ("gcp", "us-central1", "e2-medium", 0.033503, LIST, ""),
    ("gcp", "us-central1", "e2-standard-2", 0.067006, LIST, ""),
    ("gcp", "us-central1", "e2-standard-4", 0.134012, LIST, ""),
    ("gcp", "us-central1", "e2-standard-8", 0.268024, LIST, ""),
    ("gcp", "us-central1", "n2-standard-2", 0.097118, LIST, ""),
    ("gcp", "us-central1", "n2-standard-4", 0.194236, LIST, ""),
    ("gcp", "us-central1", "n2-standard-8", 0.388472, LIST, ""),
    ("gcp", "us-central1", "n1-standard-1", 0.0475, LIST, ""),
    ("gcp", "us-central1", "n1-standard-2", 0.095, LIST, ""),
    ("gcp", "us-central1", "n1-standard-4", 0.19, LIST, ""),
    ("gcp", "us-central1", "c2-standard-4", 0.20872, LIST, ""),
    ("gcp", "europe-west1", "e2-standard-4", 0.147413, APPROX, GCP_EU_NOTE),
    ("gcp", "europe-west1", "e2-standard-8", 0.294826, APPROX, GCP_EU_NOTE),
    ("gcp", "europe-west1", "n2-standard-4", 0.21366, APPROX, GCP_EU_NOTE),
    ("gcp", "europe-west1", "n1-standard-4", 0.209, APPROX, GCP_EU_NOTE),
    # Azure, Linux pay-as-you-go
    ("azure", "eastus", "Standard_B2s", 0.0416, LIST, ""),
    ("azure", "eastus", "Standard_D2s_v3", 0.096, LIST, ""),
    ("azure", "eastus", "Standard_D4s_v3", 0.192, LIST, ""),
    ("azure", "eastus", "Standard_D8s_v3", 0.384, LIST, ""),
    ("azure", "eastus", "Standard_D2s_v5", 0.096, LIST, ""),
    ("azure", "eastus", "Standard_D4s_v5", 0.192, LIST, ""),
    ("azure", "eastus", "Standard_E2s_v3", 0.126, LIST, ""),
    ("azure", "eastus", "Standard_E4s_v3", 0.252, LIST, ""),
    ("azure", "eastus", "Standard_F4s_v2", 0.169, LIST, ""),
    ("azure", "eastus", "Standard_NC6s_v3", 3.06, LIST, ""),
    ("azure", "westeurope", "Standard_D2s_v3", 0.115, APPROX, AZ_EU_NOTE),
    ("azure", "westeurope", "Standard_D4s_v3", 0.23, APPROX, AZ_EU_NOTE),
    ("azure", "westeurope", "Standard_D4s_v5", 0.23, APPROX, AZ_EU_NOTE),
]
# The demo cluster's nodes must be priced by the sheet.
DEMO_INSTANCES = [
    ("aws", "us-east-1", "m5.large"),
    ("aws", "us-east-1", "m5.xlarge"),
    ("aws", "us-east-1", "c5.2xlarge"),
    ("aws", "us-east-1", "g4dn.xlarge"),
    ("gcp", "europe-west1", "n2-standard-4"),
    ("gcp", "europe-west1", "e2-standard-8"),
    ("azure", "westeurope", "Standard_D4s_v3"),
]


def seed_instance_prices() -> Seed:
    rows = [
        {
            "provider": p,
            "region": r,
            "instance_type": t,
            "hourly_usd": num(v),
            "spot_hourly_usd": "",
            "price_confidence": c,
            "note": n,
            "source": INSTANCE_PRICE_SOURCE,
        }
        for p, r, t, v, c, n in INSTANCE_PRICES
    ]
    keys = {(x["provider"], x["region"], x["instance_type"]) for x in rows}
    if len(keys) != len(rows):
        raise SystemExit("instance_prices: duplicate (provider, region, instance_type)")
    missing = [k for k in DEMO_INSTANCES if k not in keys]
    if missing:
        raise SystemExit(f"instance_prices: demo instances missing: {missing}")
    rows.sort(key=lambda x: (x["provider"], x["region"], x["instance_type"]))
    return Seed(
        "instance_prices",
        "Small curated on-demand (Linux, shared tenancy) price sheet; joins on (provider, region, "
        "instance_type), never on the type alone (METHOD.md A4). NOT derived from shared/data: verify "
        "against the provider price APIs (SOURCES.md §9) before production use.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("region", "varchar", "Provider region as in topology.kubernetes.io/region.", [NN]),
            Col("instance_type", "varchar", "Instance type as in node.kubernetes.io/instance-type.", [NN]),
            Col("hourly_usd", "double", "On-demand USD per instance-hour.", [NN]),
            Col("spot_hourly_usd", "double", "Spot USD per instance-hour (optional; empty = unknown)."),
            Col(
                "price_confidence",
                "varchar",
                "'list' (published list price) or 'approximate' (derived from a regional uplift, see note).",
                [NN, accepted([LIST, APPROX])],
            ),
            Col("note", "varchar", "How an approximate price was obtained."),
            Col("source", "varchar", "Always '" + INSTANCE_PRICE_SOURCE + "'.", [NN]),
        ],
        rows,
        [unique_combo("provider", "region", "instance_type")],
    )


# ------------------------------------------------------------------------------------------- 4-7 power

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


def seed_power_instance_profiles(shared: Path, report: list[str]) -> Seed:
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


# ------------------------------------------------------------------------------------------- 8 PUE

PUE_GREENKUBE = {"aws": 1.15, "gcp": 1.09, "azure": 1.18, "ovhcloud": 1.26, "scaleway": 1.37}
PUE_CCF_EXTRA = {"alibaba": 1.3}  # CCF's Alibaba constant (METHOD.md B5); not in ccf_provider_constants.csv


def ccf_constants_rows(shared: Path) -> list[dict[str, str]]:
    return read_csv(shared / "ccf-derived" / "ccf_provider_constants.csv")


def seed_pue_by_provider(shared: Path) -> Seed:
    ccf = dict(PUE_CCF_EXTRA)
    for r in ccf_constants_rows(shared):
        if r["constant"] == "PUE_AVG":
            ccf[r["provider"]] = float(r["value"])
    rows = []
    for provider in sorted(set(PUE_GREENKUBE) | set(ccf)):
        rows.append(
            {
                "provider": provider,
                "pue_greenkube": num(PUE_GREENKUBE.get(provider)),
                "pue_ccf": num(ccf.get(provider)),
            }
        )
    return Seed(
        "pue_by_provider",
        "Provider PUE: GreenKube implementation values and CCF values (they differ; METHOD.md B5). CCF "
        "values from ccf-derived/ccf_provider_constants.csv PUE_AVG (alibaba 1.3 from CCF's Alibaba "
        "constants, METHOD.md B5). Unknown/on-prem: var default_pue (1.3), flagged.",
        [
            Col("provider", "varchar", "Provider.", [NN, UQ]),
            Col("pue_greenkube", "double", "GreenKube PUE (empty = none)."),
            Col("pue_ccf", "double", "CCF fleet PUE (empty = none)."),
        ],
        rows,
    )


def seed_pue_by_region(shared: Path) -> Seed:
    rows = []
    for r in ccf_constants_rows(shared):
        c = r["constant"]
        if c.startswith("PUE_TRAILING_TWELVE_MONTH[") and c.endswith("]"):
            region = c[len("PUE_TRAILING_TWELVE_MONTH[") : -1]
            rows.append(
                {
                    "provider": r["provider"],
                    "region": region.lower(),
                    "pue": num(r["value"]),
                    "source": "ccf-derived/ccf_provider_constants.csv PUE_TRAILING_TWELVE_MONTH",
                }
            )
    rows.sort(key=lambda x: (x["provider"], x["region"]))
    return Seed(
        "pue_by_region",
        "Region-specific PUE (CCF: GCP trailing-twelve-month values; METHOD.md B5). Used with "
        "pue_source = ccf before the provider value.",
        [
            Col("provider", "varchar", "Provider.", [NN, accepted(["gcp"])]),
            Col("region", "varchar", "Lower-case region.", [NN]),
            Col("pue", "double", "PUE.", [NN]),
            Col("source", "varchar", "Origin.", [NN]),
        ],
        rows,
        [unique_combo("provider", "region")],
    )


# --------------------------------------------------------------------------------- 9-11 zones, intensity


def seed_region_carbon_zones(shared: Path, report: list[str]) -> Seed:
    rows = []
    dropped = []
    for r in read_csv(shared / "ccf-derived" / "ccf_region_to_electricitymaps_zone.csv"):
        if r["region"] == "Unknown":
            dropped.append(r["provider"])
            continue
        rows.append(
            {
                "provider": r["provider"],
                "region": r["region"].lower(),
                "region_original": r["region"],
                "electricitymaps_zone": r["electricitymaps_zone"],
            }
        )
    keys = [(x["provider"], x["region"]) for x in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("region_carbon_zones: region collision after lower-casing")
    rows.sort(key=lambda x: (x["provider"], x["region"]))
    report.append(f"region_carbon_zones: dropped CCF 'Unknown' placeholder regions for {dropped}")
    return Seed(
        "region_carbon_zones",
        "Cloud region -> Electricity Maps zone (CCF app mapping, Apache-2.0; METHOD.md B10). Match on "
        "lower(region). Empty zone = CCF knows the region but maps it to no zone: falls through to the "
        "next step.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("region", "varchar", "Lower-case region for matching.", [NN]),
            Col("region_original", "varchar", "Region as spelled by CCF (Azure 'EastUS').", [NN]),
            Col("electricitymaps_zone", "varchar", "Electricity Maps zone code; empty = known-unmapped."),
        ],
        rows,
        [unique_combo("provider", "region")],
    )


def grid_factors(shared: Path) -> list[dict[str, str]]:
    return [
        r
        for r in read_csv(shared / "ccf-derived" / "ccf_grid_emission_factors.csv")
        if r["variant"] == "grid"
    ]


def g_per_kwh_from_tonnes(text: str) -> float:
    return float(text) * 1e6


def seed_region_annual_intensity(shared: Path) -> Seed:
    rows = []
    for r in grid_factors(shared):
        region = "__unknown__" if r["region"] == "Unknown" else r["region"].lower()
        rows.append(
            {
                "provider": r["provider"],
                "region": region,
                "region_original": r["region"],
                "g_per_kwh": num(g_per_kwh_from_tonnes(r["tco2e_per_kwh"]), 6),
                "source": "ccf-derived/ccf_grid_emission_factors.csv (variant grid)"
                + (": CCF provider average for unknown regions" if region == "__unknown__" else ""),
            }
        )
    keys = [(x["provider"], x["region"]) for x in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("region_annual_intensity: region collision after lower-casing")
    rows.sort(key=lambda x: (x["provider"], x["region"]))
    return Seed(
        "region_annual_intensity",
        "Annual grid carbon intensity per cloud region: CCF regional factors (variant 'grid', location-"
        "based; tCO2e/kWh x 1e6 = g/kWh). Region '__unknown__' = CCF's provider average. GCP's "
        "'net_of_google_cfe' variant is deliberately not included.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("region", "varchar", "Lower-case region, or '__unknown__'.", [NN]),
            Col("region_original", "varchar", "Region as spelled by CCF.", [NN]),
            Col("g_per_kwh", "double", "gCO2e per kWh.", [NN]),
            Col("source", "varchar", "Origin.", [NN]),
        ],
        rows,
        [unique_combo("provider", "region")],
    )


# ISO 3166-1 alpha-2 (Electricity Maps country zone) -> Boavizta location code (ISO alpha-3 except noted)
_ISO_PAIRS = """
AE:ARE AL:ALB AM:ARM AO:AGO AR:ARG AT:AUT AU:AUS AZ:AZE BA:BIH BD:BGD BE:BEL BG:BGR BH:BHR
BJ:BEN BN:BRN BO:BOL BR:BRA BW:BWA BY:BLR CA:CAN CD:COD CG:COG CH:CHE CI:CIV CL:CHL CM:CMR
CN:CHN CO:COL CR:CRI CU:CUB CY:CYP CZ:CZE DE:DEU DK:DNK DO:DOM DZ:DZA EC:ECU EE:EST EG:EGY
ER:ERI ES:ESP ET:ETH FI:FIN FR:FRA GA:GAB GB:GBR GE:GEO GH:GHA GI:GIB GR:GRC GT:GTM HK:HKG
HN:HND HR:HRV HT:HTI HU:HUN ID:IDN IE:IRL IL:ISR IN:IND IQ:IRQ IR:IRN IS:ISL IT:ITA JM:JAM
JO:JOR JP:JPN KE:KEN KG:KGZ KH:KHM KP:PRK KR:KOR KW:KWT KZ:KAZ LB:LBN LK:LKA LT:LTU LU:LUX
LV:LVA LY:LBY MA:MAR MD:MDA MK:MKD MM:MMR MN:MNG MT:MLT MX:MEX MY:MYS MZ:MOZ NA:NAM NG:NGA
NI:NIC NL:NLD NO:NOR NP:NPL NZ:NZL OM:OMN PA:PAN PE:PER PH:PHL PK:PAK PL:POL PT:PRT PY:PRY
QA:QAT RO:ROU RU:RUS SA:SAU SD:SDN SE:SWE SG:SGP SI:SVN SK:SVK SN:SEN SV:SLV SY:SYR TG:TGO
TH:THA TJ:TJK TM:TKM TN:TUN TR:TUR TT:TTO TW:TWN TZ:TZA UA:UKR US:USA UY:URY UZ:UZB VE:VEN
VN:VNM YE:YEM ZA:ZAF ZM:ZMB ZW:ZWE
"""
ALPHA2_TO_ALPHA3 = dict(pair.split(":") for pair in _ISO_PAIRS.split())
# Serbia: Boavizta keeps the historic 'SCG' (Serbia and Montenegro), labelled "Serbie".
ALPHA2_TO_ALPHA3["RS"] = "SCG"
# Boavizta locations with no Electricity Maps country zone (aggregates / obsolete codes).
BOAVIZTA_NON_COUNTRIES = {"WOR", "EEE", "ANT"}


def seed_zone_annual_intensity(shared: Path, region_zones: Seed, wattnet: Seed, report: list[str]) -> Seed:
    # (a) CCF regional factors, averaged over the regions mapping to a zone
    factors = {
        (r["provider"], r["region"].lower()): g_per_kwh_from_tonnes(r["tco2e_per_kwh"])
        for r in grid_factors(shared)
    }
    by_zone: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for r in region_zones.rows:
        zone = r["electricitymaps_zone"]
        if not zone:
            continue
        g = factors.get((r["provider"], r["region"]))
        if g is not None:
            by_zone[zone].append((f"{r['provider']} {r['region_original']}", g))
    rows = {}
    for zone, items in by_zone.items():
        # each provider's estimate counts once: mean per provider, then mean over providers
        per_provider: dict[str, list[float]] = defaultdict(list)
        for name, g in items:
            per_provider[name.split(" ")[0]].append(g)
        rows[zone] = {
            "zone": zone,
            "g_per_kwh": num(mean(mean(v) for v in per_provider.values()), 6),
            "source": "ccf-region-factor",
            "source_detail": "provider-balanced mean of "
            + ", ".join(sorted(n for n, _ in items))
            + " (CCF 2024, grid)",
        }
    # (b) Boavizta country factors for every other country zone / subzone
    boavizta = {
        r["usage_location_nato3"]: r
        for r in read_csv(shared / "boavizta" / "electricity_gwp_factors_by_country.csv")
    }
    unknown_codes = sorted(set(ALPHA2_TO_ALPHA3.values()) - set(boavizta))
    if unknown_codes:
        raise SystemExit(f"zone_annual_intensity: codes not in Boavizta factors: {unknown_codes}")
    unmapped_boavizta = sorted(set(boavizta) - set(ALPHA2_TO_ALPHA3.values()) - BOAVIZTA_NON_COUNTRIES)
    if unmapped_boavizta:
        raise SystemExit(f"zone_annual_intensity: Boavizta countries without alpha-2: {unmapped_boavizta}")
    candidates = set(ALPHA2_TO_ALPHA3)
    candidates |= {r["electricitymaps_zone"] for r in region_zones.rows if r["electricitymaps_zone"]}
    candidates |= {r["electricitymaps_zone"] for r in wattnet.rows if r["electricitymaps_zone"]}
    no_factor = []
    for zone in sorted(candidates):
        if zone in rows:
            continue
        country = zone.split("-")[0]
        code = ALPHA2_TO_ALPHA3.get(country)
        if code is None:
            no_factor.append(zone)
            continue
        b = boavizta[code]
        rows[zone] = {
            "zone": zone,
            "g_per_kwh": num(float(b["gwp_kgco2e_per_kwh"]) * 1000, 6),
            "source": "boavizta-country-factor",
            "source_detail": f"Boavizta factors.yml {code} {b['reference_year']}"
            + (f" (country factor for subzone of {country})" if zone != country else ""),
        }
    report.append(
        f"zone_annual_intensity: zones with no annual factor (fall to 500 g): {no_factor or 'none'}"
    )
    out = sorted(rows.values(), key=lambda x: x["zone"])
    return Seed(
        "zone_annual_intensity",
        "Built-in annual carbon intensity per Electricity Maps zone (B4 step 3). Precedence: (a) CCF "
        "regional factor (ccf-derived/ccf_grid_emission_factors.csv, variant grid, t/kWh x 1e6) of the "
        "cloud regions that region_carbon_zones maps to the zone (mean per provider, then mean over "
        "providers); (b) otherwise, for a country "
        "zone ('FR') or country subzone ('IT-NO', 'SE-SE1'), the Boavizta annual country factor "
        "(boavizta/electricity_gwp_factors_by_country.csv, kg/kWh x 1000; AGPL-3.0 data). Other zones "
        "are absent (global 500 g applies).",
        [
            Col("zone", "varchar", "Electricity Maps zone code.", [NN, UQ]),
            Col("g_per_kwh", "double", "gCO2e per kWh (annual).", [NN]),
            Col(
                "source",
                "varchar",
                "'ccf-region-factor' or 'boavizta-country-factor'.",
                [NN, accepted(["ccf-region-factor", "boavizta-country-factor"])],
            ),
            Col("source_detail", "varchar", "Regions averaged, or Boavizta code and reference year.", [NN]),
        ],
        out,
    )


WATTNET_TO_EM = {
    "IT_NORTH": "IT-NO",
    "IT_CNORTH": "IT-CNO",
    "IT_CSOUTH": "IT-CSO",
    "IT_SOUTH": "IT-SO",
    "IT_SICILY": "IT-SIC",
    "IT_SARDINIA": "IT-SAR",
    "DK1": "DK-DK1",
    "DK2": "DK-DK2",
    "SE1": "SE-SE1",
    "SE2": "SE-SE2",
    "SE3": "SE-SE3",
    "SE4": "SE-SE4",
    "NO1": "NO-NO1",
    "NO2": "NO-NO2",
    "NO3": "NO-NO3",
    "NO4": "NO-NO4",
    "NO5": "NO-NO5",
    "GB": "GB",  # Great Britain (Elexon) = Electricity Maps 'GB' (Great Britain, without NI)
    "NIE": "GB-NIR",  # Northern Ireland
    "RU_KGD": "RU-KGD",
}
# Wattnet zones with no confident Electricity Maps equivalent.
WATTNET_UNMAPPED = {
    "IT_CALABRIA": "no Electricity Maps zone known for the ENTSO-E Calabria bidding zone",
}
ISO3_FIXES = {"IT": "ITA"}  # wattnet's IT_CALABRIA row carries alpha-2 'IT'


def seed_wattnet_zone_map(shared: Path, report: list[str]) -> Seed:
    rows = []
    for r in read_csv(shared / "wattnet" / "wattnet_zones_entsoe_full.csv"):
        wz = r["zone_id"]
        if wz in WATTNET_UNMAPPED:
            em, how = "", "unmapped: " + WATTNET_UNMAPPED[wz]
        elif wz in WATTNET_TO_EM:
            em = WATTNET_TO_EM[wz]
            how = "same code" if em == wz else "renamed"
        elif len(wz) == 2 and wz.isalpha() and wz.isupper():
            em, how = wz, "same code"
        else:
            raise SystemExit(f"wattnet_zone_map: no rule for {wz!r}")
        cc = r["country_code"]
        rows.append(
            {
                "wattnet_zone": wz,
                "electricitymaps_zone": em,
                "country_code": ISO3_FIXES.get(cc, cc),
                "full_name": r["full_name"],
                "eic_code": r["eic_code"],
                "data_provider": r["provider"],
                "mapping": how,
            }
        )
    rows.sort(key=lambda x: x["wattnet_zone"])
    unmapped = [x["wattnet_zone"] for x in rows if not x["electricitymaps_zone"]]
    report.append(f"wattnet_zone_map: unmapped {unmapped}")
    return Seed(
        "wattnet_zone_map",
        "Wattnet zone id -> Electricity Maps zone code (METHOD.md B10). Origin: wattnet/"
        "wattnet_zones_entsoe_full.csv (Wattnet zone list, CC-BY-4.0); the renames are curated.",
        [
            Col("wattnet_zone", "varchar", "Wattnet zone id (IT_NORTH, SE3, DK1...).", [NN, UQ]),
            Col("electricitymaps_zone", "varchar", "Electricity Maps zone; empty = not mapped."),
            Col("country_code", "varchar", "ISO 3166-1 alpha-3 (IT_CALABRIA's 'IT' fixed to ITA).", [NN]),
            Col("full_name", "varchar", "Wattnet's zone name.", [NN]),
            Col("eic_code", "varchar", "ENTSO-E EIC code.", [NN]),
            Col(
                "data_provider",
                "varchar",
                "Wattnet's upstream (entsoe, elexon, epias).",
                [NN, accepted(["elexon", "entsoe", "epias"])],
            ),
            Col("mapping", "varchar", "'same code', 'renamed' or 'unmapped: <why>'.", [NN]),
        ],
        rows,
    )


# ----------------------------------------------------------------------------------- 12-14 misc


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


def ccf_constant_kind_unit(constant: str, comment: str) -> tuple[str, str]:
    if constant in ("SSDCOEFFICIENT", "HDDCOEFFICIENT"):
        return "storage_coefficient", "Wh/TB-h"
    if constant == "MEMORY_COEFFICIENT":
        return "memory_coefficient", "kWh/GB-h"
    if constant == "NETWORKING_COEFFICIENT":
        return "network_coefficient", "kWh/GB"
    if constant.startswith(("MIN_WATTS", "MAX_WATTS")):
        return "cpu_watts", "W/vCPU"
    if constant == "MEMORY_AVG":
        return "memory_per_chip", "GB"
    if constant.startswith("PUE"):
        return "pue", "ratio"
    if constant.startswith("AVG_CPU_UTILIZATION"):
        return "cpu_utilization", "%"
    if constant == "SERVER_EXPECTED_LIFESPAN":
        return "lifespan", "h"
    return "replication_factor", "factor"


def seed_ccf_constants(shared: Path) -> Seed:
    rows = []
    for r in ccf_constants_rows(shared):
        kind, unit = ccf_constant_kind_unit(r["constant"], r["unit_or_comment"])
        rows.append(
            {
                "provider": r["provider"],
                "constant": r["constant"],
                "value": num(r["value"]),
                "unit": unit,
                "kind": kind,
                "source_comment": r["unit_or_comment"],
            }
        )
    rows.sort(key=lambda x: (x["provider"], x["constant"]))
    return Seed(
        "ccf_constants",
        "CCF provider constants (ccf-derived/ccf_provider_constants.csv, Apache-2.0): memory 0.000392 "
        "kWh/GB-h, networking 0.001 kWh/GB, SSD 1.2 / HDD 0.65 Wh/TB-h, replication factors, server "
        "lifespan 35040 h, PUE, provider average W/vCPU (METHOD.md B9).",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("constant", "varchar", "CCF constant name (replication factors by service name).", [NN]),
            Col("value", "double", "Value in unit.", [NN]),
            Col(
                "unit",
                "varchar",
                "Normalised unit.",
                [
                    NN,
                    accepted(["%", "GB", "W/vCPU", "Wh/TB-h", "factor", "h", "kWh/GB", "kWh/GB-h", "ratio"]),
                ],
            ),
            Col(
                "kind",
                "varchar",
                "Group of the constant.",
                [
                    NN,
                    accepted(
                        [
                            "cpu_utilization",
                            "cpu_watts",
                            "lifespan",
                            "memory_coefficient",
                            "memory_per_chip",
                            "network_coefficient",
                            "pue",
                            "replication_factor",
                            "storage_coefficient",
                        ]
                    ),
                ],
            ),
            Col("source_comment", "varchar", "CCF's unit/comment text (CCF writes 'kWh / Gb')."),
        ],
        rows,
        [unique_combo("provider", "constant")],
    )


# (storage class or disk type, media, provider, note) — METHOD.md B9 plus common default classes.
STORAGE_MEDIA = [
    ("gp2", "ssd", "aws", "EBS type"),
    ("gp3", "ssd", "aws", "EBS type"),
    ("io1", "ssd", "aws", "EBS type"),
    ("io2", "ssd", "aws", "EBS type"),
    ("st1", "hdd", "aws", "EBS type"),
    ("sc1", "hdd", "aws", "EBS type"),
    ("standard", "hdd", "", "EBS magnetic / GKE legacy class (pd-standard)"),
    ("gp2-csi", "ssd", "aws", "storage class (gp2 via EBS CSI)"),
    ("gp3-csi", "ssd", "aws", "storage class (gp3 via EBS CSI)"),
    ("pd-ssd", "ssd", "gcp", "PD type"),
    ("pd-balanced", "ssd", "gcp", "PD type"),
    ("pd-extreme", "ssd", "gcp", "PD type"),
    ("pd-standard", "hdd", "gcp", "PD type"),
    ("premium-rwo", "ssd", "gcp", "GKE storage class (pd-ssd)"),
    ("standard-rwo", "ssd", "gcp", "GKE storage class (pd-balanced)"),
    ("Premium_LRS", "ssd", "azure", "managed disk SKU"),
    ("Premium_ZRS", "ssd", "azure", "managed disk SKU"),
    ("PremiumV2_LRS", "ssd", "azure", "managed disk SKU"),
    ("StandardSSD_LRS", "ssd", "azure", "managed disk SKU"),
    ("StandardSSD_ZRS", "ssd", "azure", "managed disk SKU"),
    ("UltraSSD_LRS", "ssd", "azure", "managed disk SKU"),
    ("Standard_LRS", "hdd", "azure", "managed disk SKU"),
    ("managed-csi", "ssd", "azure", "AKS storage class (StandardSSD_LRS)"),
    ("managed-csi-premium", "ssd", "azure", "AKS storage class (Premium_LRS)"),
    ("managed-premium", "ssd", "azure", "AKS storage class (Premium_LRS)"),
]


def seed_storage_class_media() -> Seed:
    rows = [
        {"storage_class_or_type": n, "match_key": n.lower(), "media": m, "provider": p, "note": note}
        for n, m, p, note in STORAGE_MEDIA
    ]
    if len({r["match_key"] for r in rows}) != len(rows):
        raise SystemExit("storage_class_media: duplicate match_key")
    rows.sort(key=lambda x: x["match_key"])
    return Seed(
        "storage_class_media",
        "Storage class / disk type -> media for the CCF storage coefficient (SSD 1.2, HDD 0.65 Wh/TB-h; "
        "METHOD.md B9). Match lower(storageClassName or disk type) on match_key; classes not "
        "listed have no media here: the model must choose and flag.",
        [
            Col("storage_class_or_type", "varchar", "Class or disk type as usually spelled.", [NN, UQ]),
            Col("match_key", "varchar", "lower(storage_class_or_type).", [NN, UQ]),
            Col("media", "varchar", "ssd or hdd.", [NN, accepted(["ssd", "hdd"])]),
            Col("provider", "varchar", "aws, gcp, azure, or empty when shared by several."),
            Col("note", "varchar", "What the name is.", [NN]),
        ],
        rows,
    )


# ------------------------------------------------------------------------------------------ writers


def render_csv(seed: Seed) -> str:
    names = [c.name for c in seed.columns]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    for row in seed.rows:
        if set(row) != set(names):
            raise SystemExit(f"{seed.name}: row keys {sorted(row)} != columns {sorted(names)}")
        w.writerow([row[n] for n in names])
    return buf.getvalue()


def render_yaml(seeds: list[Seed]) -> str:
    entries = []
    for s in seeds:
        entry: dict = {
            "name": s.name,
            "description": s.description,
            "config": {"column_types": {c.name: "string" if c.type == "varchar" else c.type for c in s.columns}},
        }
        # the columns' not_null tests as ONE test of the seed (one query instead of one per column)
        not_null = [c.name for c in s.columns if NN in c.tests]
        model_tests = ([{"not_null_columns": {"name": f"not_null_{s.name}", "arguments": {"columns": not_null}}}]
                       if not_null else []) + s.model_tests
        if model_tests:
            entry["data_tests"] = model_tests
        cols = []
        for c in s.columns:
            col: dict = {"name": c.name, "description": c.description}
            tests = [t for t in c.tests if t != NN]
            if tests:
                col["data_tests"] = tests
            cols.append(col)
        entry["columns"] = cols
        entries.append(entry)
    header = (
        "# Generated by scripts/derive_seeds.py -- do not edit by hand; edit the script and re-run it.\n"
        "# Explicit column_types for every column so DuckDB never infers types from the CSVs.\n"
    )
    body = yaml.safe_dump({"version": 2, "seeds": entries}, sort_keys=False, width=110, allow_unicode=True)
    return header + body


def build(shared: Path) -> tuple[list[Seed], list[str]]:
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="shared/data folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="seeds folder to write")
    ap.add_argument("--check", action="store_true", help="fail if the files in --out are not up to date")
    args = ap.parse_args(argv)
    if not args.shared.is_dir():
        ap.error(f"--shared {args.shared} is not a directory")
    seeds, report = build(args.shared)
    files = outputs(seeds)
    if args.check:
        stale = [
            n
            for n, text in files.items()
            if not (args.out / n).is_file() or (args.out / n).read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"seeds out of date: {stale}", file=sys.stderr)
            return 1
        print("seeds up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8", newline="")
    for s in seeds:
        print(f"{s.name}.csv: {len(s.rows)} rows")
    for line in report:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

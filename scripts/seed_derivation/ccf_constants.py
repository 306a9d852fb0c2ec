"""CCF's provider constants (ccf_constants); pue reads the same file."""

from __future__ import annotations

from pathlib import Path

from .common import NN, Col, Seed, accepted, num, read_csv, unique_combo


def ccf_constants_rows(shared: Path) -> list[dict[str, str]]:
    return read_csv(shared / "ccf-derived" / "ccf_provider_constants.csv")


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

"""Wattnet zone id -> Electricity Maps zone (wattnet_zone_map)."""

from __future__ import annotations

from pathlib import Path

from .common import NN, UQ, Col, Seed, accepted, read_csv

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

"""Storage class / disk type -> media (storage_class_media), curated."""

from __future__ import annotations

from .common import NN, UQ, Col, Seed, accepted

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

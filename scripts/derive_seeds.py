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

The derivations live in the package ``scripts/seed_derivation`` (one module per seed or group of seeds); this
script is its command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# the package beside this file: `python scripts/derive_seeds.py` puts scripts/ on the path, a test that loads
# this file by path (tests/unit/test_seeds.py) does not
_SCRIPTS = str(Path(__file__).resolve().parent)
if _SCRIPTS not in sys.path:
    sys.path.append(_SCRIPTS)
from seed_derivation import build, outputs  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "seeds"


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

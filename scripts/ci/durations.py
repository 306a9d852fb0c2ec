"""Seconds per test module, summed from the JUnit XML of a run (setup, call and teardown: pytest's default
`junit_duration_report = total`), as the JSON tests/conftest.py orders the modules by.

Usage: durations.py DIR [OLD.json] > tests/durations.json, where DIR holds the groups' <group>.xml (scripts/test.sh
keeps them in its report folder; KUBELEDGER_DURATIONS_OUT=FILE makes it write this JSON there at the end). Modules
of OLD.json that the run did not time (another group, a run of one file) keep their old figure.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_of(classname: str) -> str | None:
    """'tests.unit.test_x.TestY' -> 'tests/unit/test_x.py' (the longest dotted prefix that is a file)."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if (ROOT / path).is_file():
            return path
    return None


def module_seconds(folder: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for xml in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            module = module_of(case.get("classname", ""))
            if module is not None:
                out[module] = out.get(module, 0.0) + float(case.get("time", 0) or 0)
    return out


def main(argv: list[str]) -> int:
    merged: dict[str, float] = json.loads(Path(argv[1]).read_text()) if len(argv) > 1 else {}
    merged.update(module_seconds(Path(argv[0])))
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
    json.dump({k: round(v, 1) for k, v in ranked if v >= 0.5}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

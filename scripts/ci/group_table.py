"""The table scripts/test.sh prints at the end: each pytest group's wall time and test counts.

Usage: group_table.py DIR, where DIR holds `times` (lines "<group> <seconds>", in run order; "<group> <seconds>
alongside" for a group that ran in the background beside others, whose time is not added to the total wall) and
<group>.xml, the group's JUnit XML (pytest --junitxml). A group without XML (pytest stopped before writing it) shows
"-" counts.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

COLUMNS = ("tests", "passed", "failed", "errors", "skipped")


def counts(xml: Path) -> dict[str, int] | None:
    if not xml.is_file():
        return None
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    return {"tests": total["tests"], "failed": total["failures"], "errors": total["errors"],
            "skipped": total["skipped"],
            "passed": total["tests"] - total["failures"] - total["errors"] - total["skipped"]}


def fmt_s(s: int) -> str:
    return f"{s // 60}:{s % 60:02d}"


def table(folder: Path) -> str:
    rows = []
    for line in (folder / "times").read_text().splitlines():
        name, seconds, *alongside = line.split()
        rows.append((name, int(seconds), bool(alongside), counts(folder / f"{name}.xml")))
    lines = ["== pytest groups: wall time (m:ss) and tests ==",
             f"{'group':<10}{'wall':>8}" + "".join(f"{c:>9}" for c in COLUMNS)]
    total_s, total = 0, dict.fromkeys(COLUMNS, 0)
    for name, seconds, alongside, c in rows:
        total_s += 0 if alongside else seconds
        cells = "".join(f"{(c[k] if c else '-'):>9}" for k in COLUMNS)
        lines.append(f"{name:<10}{fmt_s(seconds):>8}{cells}" + ("  (alongside)" if alongside else ""))
        for k in COLUMNS:
            total[k] += c[k] if c else 0
    lines.append(f"{'all':<10}{fmt_s(total_s):>8}" + "".join(f"{total[k]:>9}" for k in COLUMNS))
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))

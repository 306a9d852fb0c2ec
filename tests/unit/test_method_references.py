"""Every rule the code, tests, seeds, SQL and YAML cite as "METHOD A4" or "METHOD.md B10" is a rule of
docs/METHOD.md (a heading `## A4.` or `### A12.1`), so the method a number points to is in the repository.

Forms cited: one ID (`METHOD A9`), lists (`METHOD A4/A5`, `METHOD A4, A5`) and ranges (`METHOD A4-A6`,
`METHOD A10–A17`). Pure text, fast.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipelines import PROJECT_ROOT

METHOD_DOC = PROJECT_ROOT / "docs" / "METHOD.md"
SCANNED_DIRS = ("pipelines", "dbt_project", "seeds", "sql", "tests", "scripts", "docs", "bench", "deploy")
SUFFIXES = {".py", ".sql", ".yml", ".yaml", ".csv", ".md", ".sh", ".toml", ".txt"}
SKIPPED_PARTS = {"target", "dbt_packages", "__pycache__", "logs", "node_modules", ".venv"}

_ID = r"(?:[A-Z]\d+(?:\.\d+)?|0\.\d+)"
# "METHOD A4", "METHOD.md B4/B10", "METHOD A4, A5", "METHOD A4-A6", "METHOD A10–A17"
_REFERENCE = re.compile(rf"\bMETHOD(?:\.md)? ({_ID}(?:(?:/|-|–|, ){_ID})*)")
_HEADING = re.compile(rf"^#{{2,4}} ({_ID})\.? ", re.MULTILINE)


def defined_rule_ids(text: str) -> list[str]:
    return _HEADING.findall(text)


def cited_rule_ids(text: str) -> set[str]:
    """The rule IDs a text cites, ranges expanded (A4-A6 -> A4, A5, A6)."""
    ids: set[str] = set()
    for match in _REFERENCE.finditer(text):
        parts = re.split(r"(/|-|–|, )", match.group(1))
        ids.add(parts[0])
        for previous, sep, rule in zip(parts[0::2], parts[1::2], parts[2::2], strict=False):
            ids.add(rule)
            low, high = re.fullmatch(r"([A-Z])(\d+)", previous), re.fullmatch(r"([A-Z])(\d+)", rule)
            if sep in "-–" and low and high and low.group(1) == high.group(1):
                ids.update(f"{low.group(1)}{n}" for n in range(int(low.group(2)), int(high.group(2)) + 1))
    return ids


def _scanned_files() -> list[Path]:
    files = [PROJECT_ROOT / "README.md", PROJECT_ROOT / "BENCHMARKS.md"]
    for folder in SCANNED_DIRS:
        files += [p for p in sorted((PROJECT_ROOT / folder).rglob("*"))
                  if p.suffix in SUFFIXES and p.is_file() and not SKIPPED_PARTS & set(p.parts)]
    return [p for p in files if p.exists() and p not in (METHOD_DOC, Path(__file__))]


def test_the_reference_parser_reads_lists_and_ranges():
    text = "x (METHOD A4-A6, B2/B10) y METHOD.md A12.1; METHOD 0.1 and METHOD A10–A12. Not: METHODS A1, METHOD as"
    assert cited_rule_ids(text) == {"A4", "A5", "A6", "B2", "B10", "A12.1", "0.1", "A10", "A11", "A12"}
    assert defined_rule_ids("## A4. Prices\n### A12.1 Scope\n## B10. Zone\n### 0.1 Optional\ntext A5.") == [
        "A4", "A12.1", "B10", "0.1"]


def test_method_rule_ids_are_unique():
    ids = defined_rule_ids(METHOD_DOC.read_text())
    assert len(ids) > 25, ids
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_cited_method_rule_exists():
    defined = set(defined_rule_ids(METHOD_DOC.read_text()))
    missing: dict[str, list[str]] = {}
    cited = 0
    for path in _scanned_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        ids = cited_rule_ids(text)
        cited += len(ids)
        for rule in sorted(ids - defined):
            missing.setdefault(rule, []).append(str(path.relative_to(PROJECT_ROOT)))
    assert cited > 100, f"only {cited} citations found: is the pattern still right?"
    assert not missing, f"cited but not a rule of docs/METHOD.md: {missing}"

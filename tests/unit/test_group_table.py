"""The table scripts/test.sh prints at the end of CI: a group run alongside others shows its time but does not add
to the total wall time."""

from pathlib import Path

from scripts.ci.group_table import table

XML = ('<testsuites><testsuite tests="{t}" failures="{f}" errors="0" skipped="0"></testsuite></testsuites>')


def test_alongside_groups_are_shown_but_not_added(tmp_path: Path) -> None:
    (tmp_path / "times").write_text("main 600\nfaults 300\ndaemon 700 alongside\n")
    (tmp_path / "main.xml").write_text(XML.format(t=10, f=1))
    (tmp_path / "faults.xml").write_text(XML.format(t=4, f=0))
    (tmp_path / "daemon.xml").write_text(XML.format(t=1, f=0))
    lines = table(tmp_path).splitlines()
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["daemon"].endswith("(alongside)") and "11:40" in rows["daemon"]
    assert rows["all"].split()[1:] == ["15:00", "15", "14", "1", "0", "0"]


def test_a_group_without_its_xml_shows_dashes(tmp_path: Path) -> None:
    (tmp_path / "times").write_text("spark 61\n")
    assert table(tmp_path).splitlines()[2].split() == ["spark", "1:01", "-", "-", "-", "-", "-"]

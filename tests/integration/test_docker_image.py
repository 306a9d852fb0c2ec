"""The image itself: built from the top-level Dockerfile by whichever builder is here (docker, podman or buildah),
then `kubeledger --version`, the locked packages and a demo day run in it.

Skipped, with the reason, where no builder can run or the pinned base image cannot be had (no daemon, no registry:
CI's machine has neither); tests/unit/test_requirements_lock.py and test_deploy_manifests.py check the Dockerfile
statically everywhere. The demo runs as the Kubernetes manifests run the containers: read-only root file system,
a writable /tmp and the /data volume, and no network (the demo day needs no source outside the image).
In the `serial` group: a build uses both cores for minutes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.serial]

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
BUILD_TIMEOUT = 45 * 60  # downloads the locked wheels (a few hundred MB) and parses the dbt project
PULL_TIMEOUT = 10 * 60


def _base_image() -> str:
    (base,) = re.findall(r"^FROM\s+(\S+)", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)
    return base


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _tail(proc: subprocess.CompletedProcess[str], n: int = 4000) -> str:
    return (proc.stdout + proc.stderr)[-n:]


def _why(proc: subprocess.CompletedProcess[str]) -> str:
    """The last line of a failed command's error output, for a skip reason."""
    lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


@dataclass
class Builder:
    name: str
    exe: str

    def has_image(self, image: str) -> bool:
        args = ["inspect", "--type", "image", image] if self.name == "buildah" else ["image", "inspect", image]
        return _run([self.exe, *args], timeout=60).returncode == 0

    def build(self, tag: str) -> subprocess.CompletedProcess[str]:
        verb = ["bud"] if self.name == "buildah" else ["build"]
        return _run([self.exe, *verb, "-t", tag, str(ROOT)], timeout=BUILD_TIMEOUT)

    def run(self, tag: str, command: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`command` (first word the program) in a throwaway container of the image, hardened like the manifests."""
        if self.name == "buildah":  # no container runtime of its own: a working container, then removed
            made = _run([self.exe, "from", tag], timeout=120)
            assert made.returncode == 0, _tail(made)
            container = made.stdout.strip().splitlines()[-1]
            try:
                return _run([self.exe, "run", "--network", "none", container, "--", *command], timeout=timeout)
            finally:
                _run([self.exe, "rm", container], timeout=120)
        return _run([self.exe, "run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
                     "--entrypoint", command[0], tag, *command[1:]], timeout=timeout)

    def remove(self, tag: str) -> None:
        _run([self.exe, "rmi", "-f", tag], timeout=300)  # the same verb for the three


def _builder() -> tuple[Builder | None, list[str]]:
    """The first builder that runs and has (or can pull) the pinned base image; else why none does."""
    base, reasons = _base_image(), []
    for name in ("docker", "podman", "buildah"):
        exe = shutil.which(name)
        if not exe:
            reasons.append(f"{name}: not on PATH")
            continue
        try:
            info = _run([exe, "info"], timeout=60)
            if info.returncode != 0:
                reasons.append(f"{name}: `{name} info` failed ({_why(info)})")
                continue
            builder = Builder(name, exe)
            if not builder.has_image(base):
                pulled = _run([exe, "pull", base], timeout=PULL_TIMEOUT)
                if pulled.returncode != 0:
                    reasons.append(f"{name}: cannot pull the base image {base} ({_why(pulled)})")
                    continue
        except subprocess.TimeoutExpired as exc:
            reasons.append(f"{name}: {exc}")
            continue
        return builder, reasons
    return None, reasons


@pytest.fixture(scope="module")
def image() -> Iterator[tuple[Builder, str]]:
    builder, reasons = _builder()
    if builder is None:
        pytest.skip("no image builder can build the Dockerfile here: " + "; ".join(reasons))
    tag = f"localhost/kubeledger-test:{uuid.uuid4().hex[:12]}"
    try:
        built = builder.build(tag)
        assert built.returncode == 0, f"{builder.name} build failed:\n{_tail(built, 8000)}"
        yield builder, tag
    finally:
        builder.remove(tag)


def test_the_image_reports_the_packages_version(image):
    builder, tag = image
    proc = builder.run(tag, ["kubeledger", "--version"])
    assert proc.returncode == 0, _tail(proc)
    assert proc.stdout.strip() == f"kubeledger {VERSION}"


def test_the_image_holds_exactly_the_locked_versions(image):
    builder, tag = image
    proc = builder.run(tag, ["python", "-m", "pip", "list", "--format=freeze"])
    assert proc.returncode == 0, _tail(proc)
    installed = {canonicalize_name(name): version
                 for name, _, version in (line.partition("==") for line in proc.stdout.splitlines()) if version}
    locked = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            requirement = Requirement(line.removesuffix("\\").strip())
            (spec,) = requirement.specifier
            locked[canonicalize_name(requirement.name)] = spec.version
    assert {name: installed.get(name) for name in locked} == locked
    assert installed.get("kubeledger") == VERSION


def test_the_image_runs_a_demo_day(image):
    builder, tag = image
    day = datetime.now(UTC).date() - timedelta(days=2)
    proc = builder.run(tag, ["kubeledger", "demo", "--date", day.isoformat()], timeout=1200)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert f"Top 10 namespaces on {day}" in output, output[-6000:]

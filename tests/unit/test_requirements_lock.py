"""requirements.lock against pyproject.toml and the Dockerfile, statically (no resolver, no index, no builder).

The image installs its dependencies from requirements.lock with --require-hashes (every file pinned by hash), then
the package itself with --no-deps. So the lock must hold exactly pyproject's runtime dependencies (and its
objectstore extra) at its top level,
each at a version its range allows (else the image runs other versions than pyproject promises, or misses a new
dependency: regenerate with `bash scripts/lock.sh`), plus the build backend the editable install builds with.
tests/integration/test_docker_image.py builds the image where a builder is available.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.fixtures.dockerfile import dockerfile_instructions as _dockerfile_instructions

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
LOCK_SCRIPT = ROOT / "scripts" / "lock.sh"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
IMAGE_EXTRA = "objectstore"  # the extra the image installs too (bills in object storage; scripts/lock.sh --extra)
TOP_LEVEL = "kubeledger (pyproject.toml)"  # uv's `# via` for a requirement read from pyproject.toml
# the image's platform, for the markers of pyproject's requirements
IMAGE_ENV = {"python_version": "3.11", "python_full_version": "3.11.0", "sys_platform": "linux",
             "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
             "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass
class Pin:
    requirement: Requirement
    hashes: list[str]
    via: set[str] = field(default_factory=set)

    @property
    def version(self) -> Version:
        (spec,) = self.requirement.specifier
        return Version(spec.version)


def _lock() -> dict[str, Pin]:
    """Canonical name -> its pin, from the pip requirements format uv writes (`name==v \\`, `--hash=...` lines,
    then `# via x` or `# via` and `#   x` lines)."""
    if not LOCK.is_file():
        pytest.fail("requirements.lock is missing: the Dockerfile installs from it; write it with "
                    "`bash scripts/lock.sh`")
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for raw in LOCK.read_text().splitlines():
        line = raw.strip()
        if not line:
            continue
        if not raw[0].isspace():
            in_via = False
            if line.startswith("#"):
                current = None
                continue
            spec = line.removesuffix("\\").strip()
            assert not spec.startswith("-"), f"requirements.lock: an option line {line!r}: pins and hashes only"
            current = Pin(Requirement(spec), [])
            name = canonicalize_name(current.requirement.name)
            assert name not in pins, f"requirements.lock pins {name} twice"
            pins[name] = current
            continue
        assert current is not None, f"requirements.lock: {raw!r} belongs to no requirement"
        if line.startswith("--hash="):
            assert HASH.fullmatch(line.removesuffix("\\").strip()), f"{current.requirement}: bad hash line {line!r}"
            current.hashes.append(line)
        elif line.startswith("# via"):
            rest = line.removeprefix("# via").strip()
            in_via = not rest
            if rest:
                current.via.add(rest)
        elif line.startswith("#") and in_via:
            current.via.add(line.removeprefix("#").strip())
        else:
            pytest.fail(f"requirements.lock: unexpected line under {current.requirement}: {raw!r}")
    return pins


def _applies(requirement: Requirement) -> bool:
    return requirement.marker is None or requirement.marker.evaluate(IMAGE_ENV)


def _pip_installs() -> list[list[str]]:
    """The arguments of every `pip install` in the Dockerfile's RUN steps."""
    installs = []
    for instruction, args in _dockerfile_instructions():
        if instruction != "RUN":
            continue
        for command in re.split(r"&&|;|\|\|", args):
            words = shlex.split(command)
            if words[:2] == ["pip", "install"] or words[:4] == ["python", "-m", "pip", "install"]:
                installs.append(words[words.index("install") + 1:])
    return installs


def test_every_pin_is_exact_and_hashed():
    pins = _lock()
    assert len(pins) > 20, "requirements.lock holds the whole dependency tree, not only the top level"
    for name, pin in pins.items():
        (spec,) = pin.requirement.specifier or [None]
        assert spec is not None and spec.operator == "==" and "*" not in spec.version, f"{name}: not pinned exactly"
        assert pin.requirement.url is None and pin.requirement.marker is None, f"{name}: {pin.requirement}"
        assert pin.hashes, f"{name}: no --hash (pip install --require-hashes refuses the whole lock)"


def test_the_top_level_is_exactly_pyprojects_runtime_dependencies_within_their_ranges():
    pins = _lock()
    runtime = PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"][IMAGE_EXTRA]
    wanted = {canonicalize_name(r.name): r for r in map(Requirement, runtime) if _applies(r)}
    top = {name for name, pin in pins.items() if TOP_LEVEL in pin.via}
    assert top == set(wanted), (f"pyproject.toml and requirements.lock differ: not locked {sorted(set(wanted) - top)}, "
                                f"locked but not in pyproject {sorted(top - set(wanted))}; run `bash scripts/lock.sh`")
    for name, requirement in wanted.items():
        pin = pins[name]
        assert requirement.specifier.contains(pin.version, prereleases=True), (
            f"{name}=={pin.version} in requirements.lock is outside pyproject's {requirement}; "
            "run `bash scripts/lock.sh`")
        assert requirement.extras <= pin.requirement.extras, f"{name}: pyproject asks for {requirement.extras}"


def test_the_build_backend_is_locked_and_nothing_else_stands_alone():
    """The image builds the editable install with --no-build-isolation from the locked setuptools; every other
    pin is there because a locked package needs it (its `# via` names one), so no stray package rides along."""
    pins = _lock()
    build = {canonicalize_name(r.name): r for r in map(Requirement, PYPROJECT["build-system"]["requires"])}
    for name, requirement in build.items():
        assert name in pins, f"build-system requires {requirement}: not in requirements.lock"
        assert requirement.specifier.contains(pins[name].version, prereleases=True), (name, pins[name].version)
    for name, pin in pins.items():
        if name in build or TOP_LEVEL in pin.via:
            continue
        parents = {canonicalize_name(Requirement(v).name) for v in pin.via if not v.startswith("-")}
        assert parents & set(pins), f"{name}: in requirements.lock, but no locked package needs it ({pin.via})"


def test_the_lock_targets_the_base_images_python():
    (base,) = [args for ins, args in _dockerfile_instructions() if ins == "FROM"]
    image, _, digest = base.partition("@")
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), f"FROM {base}: not pinned by digest"
    python = re.fullmatch(r"python:(\d+\.\d+)-slim", image).group(1)
    assert SpecifierSet(PYPROJECT["project"]["requires-python"]).contains(f"{python}.0")
    script = LOCK_SCRIPT.read_text()
    assert f"--python-version {python} " in script and "--generate-hashes" in script
    assert "--only-binary :all:" in script and "--no-strip-extras" in script
    header = LOCK.read_text() if LOCK.is_file() else ""
    assert "bash scripts/lock.sh" in header, "requirements.lock was not written by scripts/lock.sh"
    assert python == IMAGE_ENV["python_version"]  # the markers above are evaluated for the image's Python


def test_the_dockerfile_installs_from_the_lock_with_hashes_and_nothing_else():
    copied = [shlex.split(args) for ins, args in _dockerfile_instructions() if ins == "COPY"]
    assert any("requirements.lock" in words[:-1] for words in copied), "the Dockerfile does not copy the lock"
    installs = _pip_installs()
    from_lock = [a for a in installs if "-r" in a and a[a.index("-r") + 1].endswith("requirements.lock")]
    assert len(from_lock) == 1, installs
    (deps,) = from_lock
    assert "--require-hashes" in deps and "--only-binary=:all:" in deps
    assert deps.index("-r") == len(deps) - 2, f"pip install {' '.join(deps)}: the lock only, no other package"
    # the package itself: nothing resolved, built in isolation or downloaded besides the lock
    others = [a for a in installs if a is not deps]
    assert len(others) == 1, f"one more pip install (the package), found {others}"
    (own,) = others
    assert {"--no-deps", "--no-build-isolation", "--no-index"} <= set(own) and own[-2:] == ["-e", "/app"], own
    ignored = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert "requirements.lock" not in ignored and "*.lock" not in ignored

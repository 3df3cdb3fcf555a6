"""The demo's pinned environment (demo-requirements.txt, installed by ``make demo`` with --no-deps) holds
every core dependency of pyproject.toml at a version it allows, and what those need in turn."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PINS = {canonicalize_name(r.name): r for r in (Requirement(line) for line in
        (REPO / "demo-requirements.txt").read_text().splitlines() if line and not line.startswith("#"))}
CORE = [Requirement(text) for text in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]]


def pinned_version(name: str) -> str:
    (spec,) = PINS[canonicalize_name(name)].specifier
    assert spec.operator == "=="
    return spec.version


def test_every_core_dependency_is_pinned_at_a_version_pyproject_allows():
    for requirement in CORE:
        assert canonicalize_name(requirement.name) in PINS, requirement
        assert requirement.specifier.contains(pinned_version(requirement.name)), requirement
        assert PINS[canonicalize_name(requirement.name)].marker == requirement.marker, requirement


def test_what_the_pins_need_is_pinned_too():
    """The closure, read from the metadata installed here (the same packages, maybe other versions)."""
    extras = {canonicalize_name(r.name): r.extras for r in CORE}
    for name in PINS:
        try:
            needs = [Requirement(text) for text in requires(name) or ()]
        except PackageNotFoundError:  # a platform-only pin not installed on this machine
            continue
        for need in needs:
            wanted = ("", *extras.get(name, ()))
            if need.marker is None or any(need.marker.evaluate({"extra": extra}) for extra in wanted):
                assert canonicalize_name(need.name) in PINS, f"{name} needs {need}"

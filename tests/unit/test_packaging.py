"""What the wheel carries for a newcomer: py.typed, the LICENSE and the project's URLs (pyproject.toml)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_package_is_marked_typed_and_ships_the_marker():
    assert (REPO / "src" / "redmem" / "py.typed").exists()
    assert "py.typed" in PROJECT["tool"]["setuptools"]["package-data"]["redmem"]
    assert "Typing :: Typed" in PROJECT["project"]["classifiers"]


def test_the_license_file_matches_the_declared_license():
    assert PROJECT["project"]["license"] == "MIT" and PROJECT["project"]["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_project_urls_name_the_source_docs_and_issues():
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(PROJECT["project"]["urls"])

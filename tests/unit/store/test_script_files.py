"""Lua scripts found beside their owners by file name, and the ``-- writes`` flag of their contract
header (``redmem/store/_scripts.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redmem.store._scripts import header_writes, lua_files, lua_tables, writes


def _script(folder: Path, name: str, text: str = "-- KEYS[1] a key\nreturn 1\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.lua").write_text(text)


def test_scripts_and_snippets_are_found_in_every_lua_folder_by_name(tmp_path: Path) -> None:
    _script(tmp_path / "fields" / "lua", "alpha")
    _script(tmp_path / "recipes" / "frames" / "lua", "beta")
    _script(tmp_path / "model" / "lua" / "include", "shared")
    _script(tmp_path / "model" / "notlua", "ignored")
    scripts, snippets = lua_tables(tmp_path)
    assert sorted(scripts) == ["alpha", "beta"] and sorted(snippets) == ["shared"]


def test_two_scripts_of_one_name_are_refused(tmp_path: Path) -> None:
    _script(tmp_path / "fields" / "lua", "twice")
    _script(tmp_path / "recipes" / "hce" / "lua", "twice")
    with pytest.raises(ValueError, match="twice"):
        lua_tables(tmp_path)


@pytest.mark.parametrize(("source", "expected"), [
    (b"-- writes (applied once per call)\n-- KEYS[1] a hash\nreturn redis.call('HSET', KEYS[1], 'a', 1)\n", True),
    (b"-- KEYS[1] a hash\n-- writes\nreturn 1\n", True),
    (b"-- KEYS[1] a hash\n-- returns the writes count\nreturn 1\n", False),
    (b"-- KEYS[1] a hash\nreturn 1\n-- writes\n", False),  # only the header counts
])
def test_the_writes_flag_is_a_line_of_the_contract_header(source: bytes, expected: bool) -> None:
    assert header_writes(source) is expected


def test_every_script_of_the_package_has_a_contract_header_and_a_unique_name() -> None:
    scripts, _ = lua_files()
    assert len(scripts) >= 40
    assert all(path.read_bytes().startswith(b"--") for path in scripts.values())
    assert writes("bm25_write") and not writes("bm25_search")

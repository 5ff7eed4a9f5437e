"""The split of the suite between the wheels (tests/matrix.py, read by noxfile.py): every test file is in
exactly one list, every listed file exists, and docs/testing.md gives the reason for each file both
wheels run. A new test file fails here until someone decides where it runs."""

from __future__ import annotations

from pathlib import Path

from matrix import BOTH_WHEELS, ONE_WHEEL, SITE

TESTS = Path(__file__).parent
DOC = TESTS.parent / "docs" / "testing.md"


def _test_files() -> set[str]:
    return {str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")}


def test_every_test_file_is_in_exactly_one_list():
    lists = [set(BOTH_WHEELS), set(ONE_WHEEL), set(SITE)]
    found = _test_files()
    missing = found - set().union(*lists)
    assert not missing, f"add these to BOTH_WHEELS or ONE_WHEEL in tests/matrix.py, with the reason: {missing}"
    assert not (lists[0] & lists[1]) and not (lists[0] & lists[2]) and not (lists[1] & lists[2])
    assert set().union(*lists) <= found, f"listed but not found: {set().union(*lists) - found}"


def test_the_docs_name_every_file_both_wheels_run():
    text = DOC.read_text()
    assert all(f"`{name}`" in text for name in BOTH_WHEELS), [n for n in BOTH_WHEELS if f"`{n}`" not in text]


def test_every_test_file_says_what_it_shows_in_the_tests_readme():
    text = (TESTS / "README.md").read_text()
    assert not [n for n in _test_files() if f"`{n}`" not in text]

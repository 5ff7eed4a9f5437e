"""The folder `tune` writes for a site (fabricprobe/store/owned_folder.py), in process: nothing is made
before the first write, a link planted between the check and the write is never followed, only
declared names are written, and the ledger holds the hash of exactly what was written."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from fabricprobe.errors import UsageError
from fabricprobe.store.owned_folder import LEDGER, OwnedFolder

NAMES = {"a.conf", "load/env.sh", "tuning.json"}


def _folder(root) -> OwnedFolder:
    return OwnedFolder(root, NAMES, "fabricprobe tune").claim().open()


def test_nothing_is_made_before_the_first_write(tmp_path):
    out = _folder(tmp_path / "deep" / "out")
    assert not (tmp_path / "deep").exists()  # a refusal after the check (a rule the library lacks) leaves nothing
    out.write("a.conf", "x\n")
    assert sorted(p.name for p in (tmp_path / "deep" / "out").iterdir()) == [LEDGER, "a.conf", "load"]


def test_a_link_planted_after_the_check_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    out = _folder(tmp_path / "out")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "load").symlink_to(target)  # after the check, before the first write
    with pytest.raises(UsageError, match="was it changed since it was checked"):
        out.write("load/env.sh", "export X=1\n")
    assert list(target.iterdir()) == []


def test_a_link_planted_at_a_file_is_replaced_not_written_through(tmp_path):
    out = _folder(tmp_path / "out")
    out.write("a.conf", "first\n")
    secret = tmp_path / "secret"
    secret.write_text("keep\n")
    os.unlink(tmp_path / "out" / "a.conf")
    os.symlink(secret, tmp_path / "out" / "a.conf")
    out.write("a.conf", "second\n")
    assert secret.read_text() == "keep\n" and (tmp_path / "out" / "a.conf").read_text() == "second\n"
    assert not (tmp_path / "out" / "a.conf").is_symlink()


def test_only_declared_names_are_written(tmp_path):
    out = _folder(tmp_path / "out")
    with pytest.raises(RuntimeError, match="not declared"):
        out.write("other.conf", "x")


def test_the_ledger_holds_the_hash_of_what_was_written_and_follows_renames(tmp_path):
    out = _folder(tmp_path / "out")
    out.write("a.conf", "rules\n")
    out.write("load/env.sh", "export X=1\n")
    out.rename("a.conf", "tuning.json")
    out.remove("load/env.sh")
    ledger = json.loads((tmp_path / "out" / LEDGER).read_text())
    assert ledger["files"] == {"tuning.json": hashlib.sha256(b"rules\n").hexdigest()}
    again = OwnedFolder(tmp_path / "out", NAMES, "fabricprobe tune").claim()
    assert again.replaced == ["tuning.json"] and again.stale == []


def test_a_damaged_ledger_is_refused_not_trusted(tmp_path):
    _folder(tmp_path / "out").write("a.conf", "rules\n")
    (tmp_path / "out" / LEDGER).write_text("{not json")
    with pytest.raises(UsageError, match="unreadable"):
        OwnedFolder(tmp_path / "out", NAMES, "fabricprobe tune").claim()


def test_a_ledger_cannot_name_a_file_outside_the_folder(tmp_path):
    (tmp_path / "victim").write_text("keep\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / LEDGER).write_text(json.dumps({"files": {"../victim": None, "/etc/passwd": None}}))
    folder = OwnedFolder(out, NAMES, "fabricprobe tune").claim().open()
    folder.write("a.conf", "x\n")
    assert folder.finish() == [] and (tmp_path / "victim").read_text() == "keep\n"

"""Modules read once for the whole job (fabricprobe/mpienv/shared_imports.py): rank 0 imports them from
the file system and broadcasts their code; another rank imports them from that, with the same file
names, package paths and resources as from the file system, and looks up what it was not given as
usual. Here both roles run in one process, one after the other, over a broadcast kept in memory; the
MPI side is tests/test_startup.py's."""

from __future__ import annotations

import importlib
import importlib.resources
import sys
from pathlib import Path

import pytest

from fabricprobe.mpienv import shared_imports


class _Done:
    def Test(self) -> bool:
        return True


class _Comm:
    """One rank's view of a 2-rank job whose broadcasts are kept in `sent` (rank 0 fills it)."""

    size = 2

    def __init__(self, rank: int, sent: list):
        self.rank, self.sent = rank, sent

    def Ibarrier(self) -> _Done:
        return _Done()

    def bcast(self, obj, root=0):
        if self.rank == root:
            self.sent.append(obj)
            return obj
        return self.sent[0]

    def Bcast(self, buf, root=0):
        if self.rank == root:
            self.sent.append(bytes(buf))
        else:
            buf[: len(self.sent[1])] = self.sent[1]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `sharedpkg` on sys.path: __init__ imports a module that reads a resource; `later` is
    imported by nobody at first."""
    root = tmp_path / "sharedpkg"
    root.mkdir()
    (root / "__init__.py").write_text("from sharedpkg import leaf\nVALUE = leaf.VALUE + 1\n")
    (root / "leaf.py").write_text(
        "import importlib.resources\nVALUE = 41\n"
        "TEXT = importlib.resources.files('sharedpkg').joinpath('data.txt').read_text()\n"
    )
    (root / "data.txt").write_text("from the package's folder")
    (root / "later.py").write_text("LATER = 'from the file system'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    _forget()


def _forget() -> None:
    for name in [m for m in sys.modules if m == "sharedpkg" or m.startswith("sharedpkg.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _rank0(sent: list) -> None:
    assert shared_imports.share(_Comm(0, sent), ("sharedpkg",)) == 0
    assert sys.modules["sharedpkg"].VALUE == 42
    _forget()


def _unreadable(root: Path) -> None:
    """The package's code gone from the file system (source and bytecode): only rank 0's copy is left."""
    for path in [*root.glob("*.py"), *root.glob("__pycache__/*")]:
        path.unlink()


def test_another_rank_imports_rank_0s_modules_without_their_files(package):
    sent: list = []
    _rank0(sent)
    later = (package / "later.py").read_text()
    _unreadable(package)
    (package / "later.py").write_text(later)  # not rank 0's: found on the file system as usual
    hooks = list(sys.meta_path)

    served = shared_imports.share(_Comm(1, sent), ("sharedpkg",))

    assert served == 2  # the package and its leaf
    pkg = sys.modules["sharedpkg"]
    assert pkg.VALUE == 42 and pkg.leaf.TEXT == "from the package's folder"  # its resource, from its folder
    assert pkg.__file__ == str(package / "__init__.py") and list(pkg.__path__) == [str(package)]
    assert pkg.leaf.__file__ == str(package / "leaf.py") and pkg.__spec__.submodule_search_locations
    assert importlib.import_module("sharedpkg.later").LATER == "from the file system"
    assert sys.meta_path == hooks  # the finder is gone once the list is imported


def test_a_rank_whose_interpreter_differs_reads_the_file_system(package, monkeypatch):
    sent: list = []
    _rank0(sent)
    monkeypatch.setattr(shared_imports, "interpreter", lambda: ("another python",))
    assert shared_imports.share(_Comm(1, sent), ("sharedpkg",)) == 0
    assert sys.modules["sharedpkg"].VALUE == 42  # from its files, which are still there


def test_the_check_that_modules_were_served_can_fail(package):
    """Without rank 0's answer the package cannot be imported here: the test above proves a serving."""
    sent: list = []
    _rank0(sent)
    _unreadable(package)
    sent[0] = (shared_imports.interpreter(), {}, 0)  # an answer that names no module
    sent[1] = b""
    assert shared_imports.share(_Comm(1, sent), ("sharedpkg",)) == 0
    assert not hasattr(sys.modules["sharedpkg"], "VALUE")  # only its folder is left: a namespace package


def test_an_import_that_fails_on_rank_0_still_answers_the_others(package):
    (package / "leaf.py").write_text("raise RuntimeError('a broken install')\n")
    sent: list = []
    with pytest.raises(RuntimeError, match="a broken install"):
        shared_imports.share(_Comm(0, sent), ("sharedpkg",))
    assert len(sent) == 2  # the names and the code were broadcast: no rank waits forever
    _forget()
    with pytest.raises(RuntimeError, match="a broken install"):  # the others fail alike
        shared_imports.share(_Comm(1, sent), ("sharedpkg",))


def test_one_rank_imports_from_the_file_system(package):
    class One(_Comm):
        size = 1

    assert shared_imports.share(One(0, []), ("sharedpkg",)) == 0
    assert sys.modules["sharedpkg"].VALUE == 42

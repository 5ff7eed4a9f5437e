"""Modules read once for the whole job (fabricprobe/mpienv/shared_imports.py): rank 0 imports them from
the file system and broadcasts their code as it loads them; another rank imports them from that, with
the same file names, package paths and resources as from the file system, and looks up what it was not
given as usual, taking every broadcast whatever fails. Here both roles run in one process, one after
the other, over broadcasts kept in memory; the MPI side is tests/test_startup.py's."""

from __future__ import annotations

import importlib
import importlib.resources
import pickle
import sys
from pathlib import Path

import pytest

from fabricprobe.mpienv import shared_imports


class _Done:
    def Test(self) -> bool:
        return True

    def Wait(self) -> None:
        pass


class _Comm:
    """One rank's view of a 2-rank job whose broadcasts rank 0 appended to `sent`; another rank takes
    them in order (as MPI delivers a root's broadcasts)."""

    size = 2

    def __init__(self, rank: int, sent: list):
        self.rank, self.sent, self.taken = rank, sent, 0

    def _next(self):
        self.taken += 1
        return self.sent[self.taken - 1]

    def bcast(self, obj, root=0):
        if self.rank == root:
            self.sent.append(obj)
            return obj
        return self._next()

    def Bcast(self, buf, root=0):
        if self.rank == root:
            self.sent.append(bytes(buf))
        else:
            buf[:] = self._next()

    def Ibcast(self, buf, root=0) -> _Done:
        self.Bcast(buf, root)
        return _Done()


def _entries(sent: list) -> list:
    """The modules rank 0 sent (each broadcast as its size, then itself), END last."""
    return [pickle.loads(m) for m in sent[2::2]]


def _ending(*entries) -> list:
    out: list = []
    for entry in entries:
        message = pickle.dumps(entry)
        out += [len(message).to_bytes(8, "little"), message]
    return out


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `sharedpkg` on sys.path: __init__ imports a module that reads a resource; `later` is
    imported by nobody at first."""
    root = tmp_path / "sharedpkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "try:\n    import sharedpkg_optional\nexcept ImportError:\n    OPTIONAL = False\n"
        "from sharedpkg import leaf\nVALUE = leaf.VALUE + 1\n"
    )
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

    comm = _Comm(1, sent)
    served = shared_imports.share(comm, ("sharedpkg",))

    assert served == 2  # the package and its leaf
    assert comm.taken == len(sent) and _entries(sent)[-1].kind == shared_imports.END  # every one taken
    kinds = {e.name: e.kind for e in _entries(sent)}
    assert kinds["sharedpkg_optional"] == shared_imports.LOOKUP  # rank 0 found none: looked up here too
    assert sys.modules["sharedpkg"].OPTIONAL is False
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
    comm = _Comm(1, sent)
    assert shared_imports.share(comm, ("sharedpkg",)) == 0
    assert sys.modules["sharedpkg"].VALUE == 42  # from its files, which are still there
    assert comm.taken == len(sent)


def test_the_check_that_modules_were_served_can_fail(package):
    """Without rank 0's answer the package cannot be imported here: the test above proves a serving."""
    sent: list = []
    _rank0(sent)
    _unreadable(package)
    sent[1:] = _ending(shared_imports.Entry("", shared_imports.END))  # broadcasts that name no module
    assert shared_imports.share(_Comm(1, sent), ("sharedpkg",)) == 0
    assert not hasattr(sys.modules["sharedpkg"], "VALUE")  # only its folder is left: a namespace package


def test_an_import_that_fails_on_rank_0_still_answers_the_others(package):
    (package / "leaf.py").write_text("raise RuntimeError('a broken install')\n")
    sent: list = []
    with pytest.raises(RuntimeError, match="a broken install"):
        shared_imports.share(_Comm(0, sent), ("sharedpkg",))
    assert _entries(sent)[-1].kind == shared_imports.END  # the broadcasts end: no rank waits forever
    _forget()
    comm = _Comm(1, sent)
    with pytest.raises(RuntimeError, match="a broken install"):  # the others fail alike
        shared_imports.share(comm, ("sharedpkg",))
    assert comm.taken == len(sent)  # and take every broadcast all the same: the same ones on every rank


def test_one_rank_imports_from_the_file_system(package):
    class One(_Comm):
        size = 1

    assert shared_imports.share(One(0, []), ("sharedpkg",)) == 0
    assert sys.modules["sharedpkg"].VALUE == 42


def test_a_module_rank_0_had_already_is_looked_up_without_waiting():
    """Rank 0 sends none of the modules it had imported before (their names come first): another rank
    looks them up itself at once, rather than wait for a module that never comes (here a wait would
    take a broadcast that is not there)."""
    served = shared_imports._Served(_Comm(1, [(shared_imports.interpreter(), ["sharedpkg.later"])]))
    assert served.find_spec("sharedpkg.later") is None
    assert served.comm.taken == 1


def test_switched_off_on_rank_0_every_rank_reads_its_own(package, monkeypatch):
    """FABRICPROBE_SHARED_IMPORTS=off, read on rank 0 alone (a setting that differed between ranks
    would part their broadcasts): rank 0 sends only that, and the others import from their files."""
    monkeypatch.setenv(shared_imports.SWITCH, "off")
    sent: list = []
    _rank0(sent)
    assert sent == [(None, [])]
    monkeypatch.delenv(shared_imports.SWITCH)
    comm = _Comm(1, sent)
    assert shared_imports.share(comm, ("sharedpkg",)) == 0 and comm.taken == 1
    assert sys.modules["sharedpkg"].VALUE == 42

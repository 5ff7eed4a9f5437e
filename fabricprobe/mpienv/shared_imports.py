"""Modules read once for the whole job: rank 0 imports them from the file system and broadcasts their
compiled code; every other rank imports them from that, without a file-system lookup.

At scale every rank imports the same modules at the same moment, and each module costs a rank a
handful of metadata calls (a stat of its folder, of its source, the open of its bytecode; failed
lookups along the path): on a parallel file system these are what makes Python start slowly on
thousands of nodes (LLNL's MPI_Import, which had rank 0 look modules up and broadcast them, cut 32k
processes' start-up from 5.5 hours to 6 minutes). Here rank 0 imports a list of modules (and all they
import) with a loader that keeps each one's code object, marshals them, and broadcasts them once; the
other ranks put a finder first on sys.meta_path that serves those modules (same file names, packages'
paths and resource readers as from the file system) while they import the same list, then remove it.

What is not in rank 0's answer is looked up as usual: a module imported later, a namespace package, a
module of a loader other than the standard source loader (an extension module is served by its path,
which spares the lookups, not the open). A rank whose interpreter differs from rank 0's (version,
bytecode magic, sys.path, optimisation) ignores the answer. Measured: docs/scale.md, "Start-up".
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery as machinery
import importlib.util
import marshal
import mmap
import sys
from dataclasses import dataclass
from typing import Any

from fabricprobe.memory import heap
from fabricprobe.mpienv.waiting import quiet_barrier

CODE, EXTENSION = "code", "extension"


@dataclass(frozen=True)
class Entry:
    """One module as rank 0 found it: its file, how to load it, its package path if a package."""

    kind: str  # CODE: its code object, marshalled, is `size` bytes of the broadcast; EXTENSION: from `origin`
    origin: str
    package_path: list[str] | None
    size: int = 0


def interpreter() -> tuple:
    """What must match for rank 0's code to be this rank's: the version, the bytecode's magic number,
    the optimisation level and where modules are looked up."""
    return (sys.version, importlib.util.MAGIC_NUMBER, sys.flags.optimize, tuple(sys.path))


def share(comm: Any, modules: tuple[str, ...]) -> int:
    """Import `modules` on every rank of `comm`, read from the file system by rank 0 alone; call on every
    rank. Returns how many modules this rank was served (0 on rank 0, on one rank, or when refused).

    Two broadcasts: the modules' names and files (pickled, small), then their code in one buffer that
    each rank frees whole once imported (no copy of it is left on the heap)."""
    if comm.size == 1:
        _import(modules)
        return 0
    if comm.rank == 0:
        recorded: dict[str, tuple[Entry, bytes]] = {}
        try:
            with _Recording(recorded):
                _import(modules)
        finally:  # an import that fails leaves the others an answer, not a hang; they fail alike
            index = {name: entry for name, (entry, _) in recorded.items()}
            code = _mapping(sum(entry.size for entry in index.values()))
            offset = 0
            for entry, data in recorded.values():
                code[offset : offset + entry.size] = data
                offset += entry.size
            recorded.clear()
            quiet_barrier(comm)
            comm.bcast((interpreter(), index, offset), root=0)
            comm.Bcast(code, root=0)
            code.close()
            heap.release_freed()  # the marshalled modules' heap pages (1.8 MiB kept otherwise)
        return 0
    quiet_barrier(comm)  # sleep while rank 0 reads
    theirs, index, size = comm.bcast(None, root=0)
    code = _mapping(size)
    comm.Bcast(code, root=0)
    served = _Served(index if theirs == interpreter() else {}, memoryview(code))
    with served:
        _import(modules)
    served.release()
    with contextlib.suppress(BufferError):  # a module whose import failed may hold its part: freed with it
        code.close()
    return served.count


def _mapping(size: int) -> mmap.mmap:
    """Memory for the modules' code, mapped and unmapped by this module: from the heap, glibc would
    raise its mmap threshold to this size on the buffer's free, and every later allocation below it
    (a point's 1 MiB buffers) would stay on the heap after its free (+1.0 to 1.5 MiB PSS a rank at the
    peak of docs/scale.md's memory sweep, measured)."""
    return mmap.mmap(-1, max(size, 1))


def _import(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


class _Hook:
    """A finder first on sys.meta_path for the duration of a `with`."""

    def __enter__(self) -> "_Hook":
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _Recording(_Hook):
    """Rank 0: each module the other finders find is recorded as it is loaded."""

    def __init__(self, into: dict[str, tuple[Entry, bytes]]):
        self.into = into

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        spec = self._others(name, path, target)
        if spec is None or not spec.has_location:
            return spec
        locations = list(spec.submodule_search_locations) if spec.submodule_search_locations is not None else None
        if type(spec.loader) is machinery.SourceFileLoader:
            spec.loader = _KeepingLoader(name, spec.origin, self.into, locations)
        elif type(spec.loader) is machinery.ExtensionFileLoader:
            self.into[name] = (Entry(EXTENSION, spec.origin, locations), b"")
        return spec

    def _others(self, name: str, path: Any, target: Any) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                return spec
        return None


class _KeepingLoader(machinery.SourceFileLoader):
    """The standard source loader that also keeps the code it loads (marshalled) for the others."""

    def __init__(self, name: str, path: str, into: dict[str, tuple[Entry, bytes]], locations: list[str] | None):
        super().__init__(name, path)
        self.into, self.locations = into, locations

    def get_code(self, fullname: str) -> Any:
        code = super().get_code(fullname)
        data = marshal.dumps(code)
        self.into[fullname] = (Entry(CODE, self.path, self.locations, len(data)), data)
        return code


class _Served(_Hook):
    """Another rank: rank 0's modules, found without a look at the file system."""

    def __init__(self, index: dict[str, Entry], code: memoryview):
        self.index, self.code, self.count = index, code, 0
        self.at: dict[str, int] = {}
        offset = 0
        for name, entry in index.items():
            self.at[name] = offset
            offset += entry.size

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        entry = self.index.get(name)
        if entry is None:
            return None
        self.count += 1
        if entry.kind == CODE:
            start = self.at[name]
            loader: Any = _ServedLoader(name, entry.origin, self.code[start : start + entry.size])
        else:
            loader = machinery.ExtensionFileLoader(name, entry.origin)
        return importlib.util.spec_from_file_location(
            name, entry.origin, loader=loader, submodule_search_locations=entry.package_path
        )

    def release(self) -> None:
        """Let go of rank 0's code: the buffer is freed whole once no loader holds a slice of it."""
        self.index, self.at = {}, {}
        self.code.release()


class _ServedLoader(machinery.SourceFileLoader):
    """The standard source loader (file names, resource readers, source for tracebacks from the file)
    whose code comes from rank 0."""

    def __init__(self, name: str, path: str, data: memoryview):
        super().__init__(name, path)
        self.data: memoryview | None = data

    def get_code(self, fullname: str) -> Any:
        if self.data is None:  # loaded again (importlib.reload): from the file, as any module
            return super().get_code(fullname)
        data, self.data = self.data, None
        code = marshal.loads(data)
        data.release()
        return code

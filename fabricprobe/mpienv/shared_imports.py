"""Modules read once for the whole job: rank 0 imports them from the file system and broadcasts their
compiled code as it goes; every other rank imports them from that, without a file-system lookup.

At scale every rank imports the same modules at the same moment, and each module costs a rank a
handful of metadata calls (a stat of its folder, of its source, the open of its bytecode; failed
lookups along the path): on a parallel file system these are what makes Python start slowly on
thousands of nodes (LLNL's MPI_Import, which had rank 0 look modules up and broadcast them, cut 32k
processes' start-up from 5.5 hours to 6 minutes). Here rank 0 imports a list of modules (and all they
import) with a loader that broadcasts each module's code object, marshalled, as it loads it; the
other ranks put a finder on sys.meta_path (after the built-in and frozen modules' importers) that
takes the modules from those broadcasts, in order, waiting for the next one when it is not there yet
(same file names, packages' paths and resource readers as from the file system), while they import
the same list, then remove it. Module by module, the others run one while rank 0 reads the next;
sent all at once after rank 0's imports, they waited for all of them before their first (0.05 to
0.07 s more of a 2-rank launch here, against a few ms).

What rank 0 does not send is looked up as usual: a module rank 0 had imported before (its names are
the first broadcast), one imported later, a namespace package, a module of a loader other than the
standard source loader (an extension module is sent by its path, which spares the lookups, not the
open), a module imported on another thread. A rank whose interpreter differs from rank 0's (version,
bytecode magic, sys.path, optimisation) reads its own files, and takes the broadcasts all the same:
every rank makes the same broadcasts, the last one (END) included, whatever fails.
FABRICPROBE_SHARED_IMPORTS=off in rank 0's environment has every rank read its own modules (the way
back if a site's Python finds modules in a way this does not serve).
Measured: docs/scale.md, "Start-up" and "A launch".
"""

from __future__ import annotations

import importlib
import importlib.machinery as machinery
import importlib.util
import marshal
import os
import pickle
import sys
import threading
from dataclasses import dataclass
from typing import Any

from fabricprobe.memory import heap
from fabricprobe.mpienv.waiting import wait_sleeping

CODE, EXTENSION, LOOKUP, END = "code", "extension", "lookup", "end"
SWITCH = "FABRICPROBE_SHARED_IMPORTS"  # "off" on rank 0: every rank reads its own modules
# A wait for the next module is tested without a pause this long (it is usually that close), then
# every POLL_S asleep: oversubscribed, ranks waiting in MPI made an 8-rank launch on 2 cores 11 to 15%
# longer; a shorter spin made 2-rank launches slower (docs/scale.md, "A launch").
SPIN_S = 0.0005
POLL_S = 0.0001


@dataclass(frozen=True)
class Entry:
    """One module as rank 0 found it: its file, how to load it, its package path if a package."""

    name: str
    # CODE: `code` is its code object, marshalled; EXTENSION: loaded from `origin`; LOOKUP: rank 0 found
    # none, or one of another kind: look it up as usual; END: no more
    kind: str
    origin: str = ""
    package_path: list[str] | None = None
    code: bytes = b""


def interpreter() -> tuple:
    """What must match for rank 0's code to be this rank's: the version, the bytecode's magic number,
    the optimisation level and where modules are looked up."""
    return (sys.version, importlib.util.MAGIC_NUMBER, sys.flags.optimize, tuple(sys.path))


def share(comm: Any, modules: tuple[str, ...]) -> int:
    """Import `modules` on every rank of `comm`, read from the file system by rank 0 alone; call on every
    rank, from the thread that called MPI_Init. Returns how many modules this rank was served (0 on
    rank 0, on one rank, or when refused)."""
    if comm.size == 1:
        _import(modules)
        return 0
    if comm.rank == 0:
        if os.environ.get(SWITCH) == "off":  # rank 0's setting holds for every rank
            comm.bcast((None, []), root=0)
            _import(modules)
            return 0
        sender = _Sending(comm)
        try:
            with sender:
                _import(modules)
        finally:  # an import that fails still ends the broadcasts: no rank waits forever; they fail alike
            sender.send(Entry("", END))
            heap.release_freed()  # the marshalled modules' heap pages
        return 0
    served = _Served(comm)
    try:
        if served.interpreter == interpreter():
            with served:
                _import(modules)
        else:
            _import(modules)
    finally:
        served.drain()
    return served.count


def _import(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


class _Hook:
    """A finder on sys.meta_path for the duration of a `with`, after the built-in and frozen modules'
    (rank 0 sends none of those)."""

    def __enter__(self) -> "_Hook":
        first = (machinery.BuiltinImporter, machinery.FrozenImporter)
        at = next((i for i, finder in enumerate(sys.meta_path) if finder not in first), len(sys.meta_path))
        sys.meta_path.insert(at, self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _Sending(_Hook):
    """Rank 0: each module the other finders find is sent as it is loaded (by the thread that shares)."""

    def __init__(self, comm: Any):
        self.comm, self.thread = comm, threading.get_ident()
        self.pending: list[tuple[Any, bytearray]] = []  # broadcasts not complete yet, with their buffers
        comm.bcast((interpreter(), sorted(sys.modules)), root=0)

    def send(self, entry: Entry) -> None:
        """One module: its size, then itself (MPI_Ibcast both). Rank 0 does not wait for them to
        complete: it reads the next module meanwhile (each call into MPI moves them on), and waits for
        all of them after the last (END)."""
        message = bytearray(pickle.dumps(entry))
        size = bytearray(len(message).to_bytes(8, "little"))
        self.pending += [(self.comm.Ibcast(size, root=0), size), (self.comm.Ibcast(message, root=0), message)]
        self.pending = [(request, buffer) for request, buffer in self.pending if not request.Test()]
        if entry.kind == END:
            for request, _ in self.pending:
                wait_sleeping(request, SPIN_S, POLL_S)
            self.pending = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        spec = self._others(name, path, target)
        if threading.get_ident() != self.thread:
            return spec
        kind = type(spec.loader) if spec is not None and spec.has_location else None
        locations = _package_path(spec) if kind is not None else None
        if kind is machinery.SourceFileLoader:
            spec.loader = _SendingLoader(name, spec.origin, self, locations)  # sent with its code
        elif kind is machinery.ExtensionFileLoader:
            self.send(Entry(name, EXTENSION, spec.origin, locations))
        else:  # none found (an optional import), or not one this module sends: the others look it up
            self.send(Entry(name, LOOKUP))
        return spec

    def _others(self, name: str, path: Any, target: Any) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                return spec
        return None


def _package_path(spec: Any) -> list[str] | None:
    return None if spec.submodule_search_locations is None else list(spec.submodule_search_locations)


class _SendingLoader(machinery.SourceFileLoader):
    """The standard source loader that also sends the code it loads (marshalled), before running it."""

    def __init__(self, name: str, path: str, sending: _Sending, locations: list[str] | None):
        super().__init__(name, path)
        self.sending, self.locations = sending, locations

    def get_code(self, fullname: str) -> Any:
        code = super().get_code(fullname)
        if self.sending is not None:
            self.sending.send(Entry(fullname, CODE, self.path, self.locations, marshal.dumps(code)))
            self.sending = None  # once; the module keeps its loader
        return code


class _Served(_Hook):
    """Another rank: rank 0's modules, taken from its broadcasts without a look at the file system."""

    def __init__(self, comm: Any):
        self.comm, self.thread, self.count = comm, threading.get_ident(), 0
        self.interpreter, before = comm.bcast(None, root=0)
        self.elsewhere = set(before)  # rank 0 had them: it sends none of these
        self.received: dict[str, Entry] = {}
        self.receiving = False
        self.ended = self.interpreter is None  # SWITCH off on rank 0: it sends nothing

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name in self.elsewhere or self.receiving or threading.get_ident() != self.thread:
            return None
        while name not in self.received and not self.ended:
            self._receive()
        entry = self.received.pop(name, None)
        if entry is None or entry.kind == LOOKUP:
            return None
        self.count += 1
        if entry.kind == CODE:
            loader: Any = _ServedLoader(name, entry.origin, entry.code)
        else:
            loader = machinery.ExtensionFileLoader(name, entry.origin)
        return importlib.util.spec_from_file_location(
            name, entry.origin, loader=loader, submodule_search_locations=entry.package_path
        )

    def _receive(self) -> None:
        self.receiving = True  # an import inside the broadcast itself is not one of rank 0's
        try:
            size = bytearray(8)
            wait_sleeping(self.comm.Ibcast(size, root=0), SPIN_S, POLL_S)
            message = bytearray(int.from_bytes(size, "little"))
            wait_sleeping(self.comm.Ibcast(message, root=0), SPIN_S, POLL_S)
            entry = pickle.loads(message)
        finally:
            self.receiving = False
        if entry.kind == END:
            self.ended = True
        else:
            self.received[entry.name] = entry

    def drain(self) -> None:
        """Take the broadcasts left, to the end: every rank makes the same ones."""
        while not self.ended:
            self._receive()
        self.received.clear()


class _ServedLoader(machinery.SourceFileLoader):
    """The standard source loader (file names, resource readers, source for tracebacks from the file)
    whose code comes from rank 0."""

    def __init__(self, name: str, path: str, code: bytes):
        super().__init__(name, path)
        self.code: bytes | None = code

    def get_code(self, fullname: str) -> Any:
        if self.code is None:  # loaded again (importlib.reload): from the file, as any module
            return super().get_code(fullname)
        code, self.code = self.code, None
        return marshal.loads(code)

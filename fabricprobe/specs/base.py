"""What every collective spec provides, and the per-point state the harness hands around.

A spec (one file per collective, like nccl-tests' testColl) is the one place a collective lives:
buffer lengths for a message size, the busbw factor, the input pattern and the exact result (from the
oracle), the library's call through mpi4py and through the C API, NCCL's call, the names the MPI
libraries give it for tuning, whether its elements are independent (pipelinable) and its OMB title.
The library and NCCL backends, the tuning probe, runtime selection and the tests all call these, so
adding a collective is one spec file and one registry line. A spec never times anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np

from fabricprobe.memory import device_pointer, on_device
from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.mpienv.datatypes import DTYPES, mpi_datatype, mpi_op
from fabricprobe.oracle import patterns

Call = Callable[[], object]
OMB_WINDOW = 64  # messages per window in osu_bw/osu_bibw: the --window-size default


@dataclass(frozen=True)
class VendorNames:
    """What the MPI libraries call a collective where their tuning settings name it (docs/tuning.md)."""

    openmpi: str  # coll_tuned_<openmpi>_algorithm
    openmpi_id: int  # the collective's number in Open MPI's classic dynamic-rules file
    openmpi_json: str  # its key in Open MPI 6's rule_file_version 3 JSON
    mpich: str  # MPIR_CVAR_<mpich>_INTRA_ALGORITHM; Intel MPI's I_MPI_ADJUST_<mpich> (same heritage)
    mpich_size_key: str  # the message size MPICH's selection JSON tests: avg_msg_size or total_msg_size
    mpich_posix: bool = False  # on one node MPICH's POSIX shared-memory path takes it over after a few calls
    nccl: str = ""  # NCCL's tuner-plugin name ("" when NCCL has no such collective)

    @property
    def mpich_json(self) -> str:
        """collective=<name> in MPICH's selection JSON."""
        return self.mpich.lower()

    @property
    def mpich_function(self) -> str:
        """The stem of MPICH's algorithm functions: MPIR_<function>_intra_<algorithm>."""
        return self.mpich_json.capitalize()

    @property
    def intel(self) -> str:
        """I_MPI_ADJUST_<intel>."""
        return self.mpich

    @property
    def intel_json(self) -> str:
        """coll=<name> in Intel MPI's I_MPI_TUNING JSON."""
        return self.mpich_json.capitalize()


@dataclass(frozen=True)
class Layout:
    count: int  # the count argument of the MPI call (per rank, or per peer for alltoall)
    send_len: int  # elements in the send buffer (0 when the call has none)
    recv_len: int  # elements in the receive buffer
    nbytes: int  # S in the busbw formula: the size the point is reported under


@dataclass
class Case:
    """One measured point's buffers and parameters, as seen by one rank."""

    collective: str
    comm: Any
    rank: int
    nranks: int
    dtype_name: str
    dtype: np.dtype
    op: str
    root: int
    in_place: bool
    layout: Layout
    send: np.ndarray | None = None  # None for in-place calls and calls without a send buffer (bcast)
    recv: np.ndarray = field(default_factory=lambda: np.empty(0))
    peer: int = -1  # point-to-point partner, -1 when this rank sits the point out
    role: int = -1  # point-to-point role (spec-defined), -1 when idle
    window: int = OMB_WINDOW  # messages per window in the bandwidth tests
    hugepages: bool = False  # 2 MiB-aligned, madvised transparent huge pages for large buffers
    density: float = 0.0  # sparse tests: the fraction of elements each rank contributes
    semantics: str = "exact"  # sparse allreduce: which reference result applies
    keep: tuple = ()  # arrays a C call's pointer arguments point into (vector counts), alive with the case
    sync: str = ""  # one-sided tests: the synchronization (the point's mode; specs.rma.SYNCS)

    @property
    def count(self) -> int:
        return self.layout.count


def tolerance(dtype: np.dtype) -> float:
    """Relative tolerance for a result. Patterns are exact, so this only absorbs what an
    implementation may legitimately do differently (it is not OMB's "any error < 1.0")."""
    if dtype.kind == "f":
        return 4 * float(np.finfo(dtype).eps)
    return 0.0


def count_wrong(actual: np.ndarray, expected: np.ndarray) -> int:
    """Elements of `actual` that differ from `expected` beyond the dtype's tolerance; NaN counts."""
    if actual.size == 0:
        return 0
    exp = expected.astype(actual.dtype, copy=False) if actual.dtype.kind != "f" else expected
    rtol = tolerance(actual.dtype)
    if rtol == 0.0:
        return int(np.count_nonzero(actual != exp))
    # The patterns are exact in every float type, so a right result equals them exactly: compared in
    # the result's own type first (35 ms -> 1 ms at 1 Mi elements), and only the elements that differ
    # are judged with the tolerance (NaN never equals, so it stays wrong).
    differ = actual != expected.astype(actual.dtype)
    if not differ.any():
        return 0
    ok = np.isclose(actual[differ], exp[differ], rtol=rtol, atol=0.0, equal_nan=False)
    return int(np.count_nonzero(differ) - np.count_nonzero(ok))


class CollectiveSpec:
    """Base for collective specs. Subclasses set the class attributes and implement the hooks."""

    name: ClassVar[str]
    reduces: ClassVar[bool] = False  # takes a reduction op
    sized: ClassVar[bool] = True  # False for barrier: one point, no message size
    rooted: ClassVar[bool] = False  # takes a root rank (reduce, bcast)
    pt2pt: ClassVar[bool] = False
    local: ClassVar[bool] = False  # no communication (the kernel tests)
    sparse: ClassVar[bool] = False  # measured per density (--density)
    implementations: ClassVar[tuple[str, ...]] = ()  # local tests: the algorithms that implement them
    in_place_supported: ClassVar[bool] = True
    has_send: ClassVar[bool] = True  # False when the call has only one buffer (bcast) or none
    busbw_formula: ClassVar[str] = "1"  # human-readable F in busbw = algbw * F
    vendor: ClassVar[VendorNames | None] = None  # the libraries' names for tuning; None: not tuned
    pipelinable: ClassVar[bool] = False  # result element i depends on input element i only (chunked staging)
    compared_with: ClassVar[str] = ""  # the collective this one's times are read against (sparse: allreduce)
    osu_title: ClassVar[str] = ""  # OMB's title line for it
    osu_size_is_block: ClassVar[bool] = False  # OMB's Size column is one rank's block, not the whole buffer
    nccl_tests_binary: ClassVar[str] = ""  # the nccl-tests program that measures it ("" : none)
    interleave_with: ClassVar[str] = ""  # a reference: measured at each size right after this collective
    # In a sweep without --collectives. The rooted and vector collectives that OMB and IMB users run
    # (gather, scatter, gatherv, scatterv, allgatherv, alltoallv) are not: they would lengthen the
    # default sweep (the README's quick start), and a DNN's collectives are the others.
    # --collectives all (or their names) measures them.
    default_sweep: ClassVar[bool] = True
    nonblocking: ClassVar[bool] = False  # MPI_I<coll> then MPI_Wait; its overlap is measured after the point
    persistent: ClassVar[bool] = False  # MPI_<Coll>_init once, MPI_Start and MPI_Wait per call
    rma: ClassVar[bool] = False  # one-sided (specs/rma.py): its point's mode is the synchronization
    steady_checkable: ClassVar[bool] = True  # the output after the timed calls is one call's result

    @property
    def family(self) -> str:
        """collective, pt2pt, kernel (local, no communication) or sparse: the sweep's option groups."""
        if self.sparse:
            return "sparse"
        if self.pt2pt:
            return "pt2pt"
        return "kernel" if self.local else "collective"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        """Buffer lengths for S = nbytes. Default: one vector of S bytes to send and one to receive
        (the rooted, gathered and scattered collectives say otherwise)."""
        count = nbytes // itemsize
        return Layout(count=count, send_len=count, recv_len=count, nbytes=count * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return 1.0

    def busbw_factor_on(self, nranks: int, device: bool) -> float:
        """busbw's factor on host or device buffers (--buffer cupy|numba): the same on both unless the
        memory moves the bytes differently there (copy_local)."""
        return self.busbw_factor(nranks)

    def busbw_formula_for(self, device: bool) -> str:
        """The human-readable F for a table's caption, on the host or on device buffers."""
        return self.busbw_formula

    def timed_region(self, mode: str, window: int) -> str:
        """What one timed iteration is, for table titles: the sweep's mode for collectives (barrier:
        an untimed barrier before each call; loop: back-to-back calls)."""
        return f"{mode} mode"

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        """Page-aligned buffers for the case's layout, from the process's pool."""
        lay = case.layout
        case.send = (
            None if case.in_place or not self.has_send else pool.get("send", lay.send_len, case.dtype, case.hugepages)
        )
        case.recv = pool.get("recv", lay.recv_len, case.dtype, case.hugepages)

    def prepare(self, case: Case) -> None:
        """Write this rank's input and mark the output as unwritten."""
        raise NotImplementedError

    def results(self, case: Case) -> list[tuple[np.ndarray, np.ndarray]]:
        """(actual, expected) pairs this rank can check after one call."""
        raise NotImplementedError

    # The MPI library's own implementation: collectives give their calls below, point-to-point tests
    # are OMB's loops (fabricprobe.collectives.library); local kernels and sparse tests have none.
    in_library: ClassVar[bool] = True

    def mpi4py_call(self, case: Case, MPI: Any, op: Any = None) -> Call:
        """The mpi4py call for one call of the collective on case's buffers, buffer specs built once
        (op: an MPI.Op to use instead of case.op's built-in one, as the tuning probe's traced sum)."""
        raise NotImplementedError

    def native_call(self, case: Case, nat: Any, MPI: Any) -> tuple[Any, tuple]:
        """The C function (of fabricprobe.timing.native.NativeMPI) and its arguments for one call. A spec
        that does not define it is timed through mpi4py only."""
        raise NotImplementedError

    def native_timer(self, mode: str) -> bool:
        """Whether the native timer can time this spec's points in this mode (all the library's can,
        but the one-sided tests other than put and get with flush)."""
        return True

    @property
    def has_native_call(self) -> bool:
        return type(self).native_call is not CollectiveSpec.native_call

    def nccl_call(self, case: Case, nc: Any, dtype: Any, op: Any, stream: int) -> Call | None:
        """One NCCL call on case's device buffers, queued on `stream`; None when NCCL has none."""
        return None

    def nccl_unusable(self, case: Case) -> str:
        """Why NCCL's call would not mean what MPI's does for this case ("" when it would)."""
        return ""

    def ends(self, rank: int, root: int) -> tuple[bool, bool]:
        """(this rank has input, this rank receives a result): what a staged call copies down and up."""
        return True, True

    def case_over(self, comm: Any, send: Any, recv: Any, op: str = "sum", root: int = 0) -> Case:
        """A Case over caller-owned buffers (send None: in place), for calling the collective outside a
        sweep (runtime selection, the tests' reference calls). S is the larger buffer, as every layout
        defines it."""
        dtype = np.dtype(recv.dtype)
        name = next((n for n, d in DTYPES.items() if d == dtype), None)
        if name is None:
            raise ValueError(f"{self.name}: no MPI datatype for {dtype} buffers (use one of {', '.join(DTYPES)})")
        nbytes = max(recv.nbytes, 0 if send is None else send.nbytes)
        return Case(
            collective=self.name,
            comm=comm,
            rank=comm.rank,
            nranks=comm.size,
            dtype_name=name,
            dtype=dtype,
            op=op,
            root=root,
            in_place=send is None,
            layout=self.layout(nbytes, dtype.itemsize, comm.size),
            send=send,
            recv=recv,
        )

    def untouched(self, case: Case) -> list[np.ndarray]:
        """The buffers of this rank that the MPI standard says the call leaves as they are: a
        collective's send buffer (an IN argument), on every rank, the root's and the non-roots'.
        Validation compares them before and after (engine.point); nothing else read them, so an
        in-place rooted reduction that accumulated in a non-root's input passed (issue 36).
        Point-to-point tests and local kernels have none here (their buffers are both ends)."""
        if self.pt2pt or self.local or not isinstance(case.send, np.ndarray):
            return []
        return [case.send]

    def release(self, case: Case) -> None:
        """Free what a point's calls made that outlives them (persistent requests); the sweep calls it
        after every point, measured or not."""

    def check(self, case: Case) -> int:
        return sum(count_wrong(actual, expected) for actual, expected in self.results(case))

    def checked_elements(self, case: Case) -> int:
        return sum(actual.size for actual, _ in self.results(case))


def mpi_buffers(case: Case, MPI: Any) -> tuple[Any, Any]:
    """(send, recv) as mpi4py takes them, built once: IN_PLACE for a missing send buffer; host arrays as
    MPI buffers with their datatype; device arrays as they are (mpi4py reads their
    __cuda_array_interface__ and hands the device pointer to a CUDA-aware library)."""
    dt = mpi_datatype(MPI, case.dtype_name)

    def as_mpi(arr: Any) -> Any:
        return arr if on_device(arr) else (MPI.buffer(arr), dt)

    return (MPI.IN_PLACE if case.send is None else as_mpi(case.send)), as_mpi(case.recv)


def mpi_vector(case: Case, MPI: Any, arr: Any, counts: np.ndarray, displs: np.ndarray) -> list:
    """A vector collective's buffer as mpi4py takes it: [buffer, counts, displacements, datatype]."""
    data = arr if on_device(arr) else MPI.buffer(arr)
    return [data, counts, displs, mpi_datatype(MPI, case.dtype_name)]


def mpi_block(case: Case, MPI: Any, arr: Any, length: int) -> list:
    """The first `length` elements of a buffer as mpi4py takes them (a vector collective's own block)."""
    head = arr[:length]
    return [head if on_device(head) else MPI.buffer(head), mpi_datatype(MPI, case.dtype_name)]


def allocate_send_at_root(case: Case, pool: BufferPool) -> None:
    """Buffers of a collective whose send buffer means something at the root only (scatter, scatterv):
    none elsewhere."""
    lay = case.layout
    case.send = pool.get("send", lay.send_len if case.rank == case.root else 0, case.dtype, case.hugepages)
    case.recv = pool.get("recv", lay.recv_len, case.dtype, case.hugepages)


def c_pointer(arr: Any) -> int:
    """An array's address for a C call (0 for none)."""
    return 0 if arr is None else int(arr.ctypes.data)


def c_buffers(case: Case, nat: Any, MPI: Any) -> tuple[int, int, Any, Any]:
    """(send pointer or MPI_IN_PLACE, recv pointer, datatype handle, communicator handle) for the C API."""
    send = nat.in_place if case.send is None else int(case.send.ctypes.data)
    recv = 0 if case.recv is None else int(case.recv.ctypes.data)
    return send, recv, nat.handle(mpi_datatype(MPI, case.dtype_name)), nat.handle(case.comm)


def op_of(case: Case, MPI: Any, op: Any = None) -> Any:
    return op if op is not None else mpi_op(MPI, case.op)


def prepare_reduction(case: Case) -> None:
    """A reduction's input (in the receive buffer when in place) and an unwritten output."""
    if case.send is None:
        fill_reduction(case.recv, case)
    else:
        fill_reduction(case.send, case)
        patterns.sentinel_fill(case.recv, case.rank)


def nccl_pointers(case: Case) -> tuple[int, int]:
    """(send, recv) device addresses for NCCL; send is recv for an in-place call."""
    recv = device_pointer(case.recv)
    return (recv if case.send is None else device_pointer(case.send)), recv


def fill_reduction(buf: np.ndarray, case: Case, first_index: int = 0) -> None:
    buf[:] = patterns.reduction_input_at(case.rank, case.nranks, first_index, buf.size, case.op)


def reduction_expected(case: Case, length: int, first_index: int = 0) -> np.ndarray:
    return patterns.reduction_result_at(case.nranks, first_index, length, case.op)

"""One-sided communication (MPI RMA) between a rank pair, as OMB's one-sided tests define them.

- put_latency, get_latency: one MPI_Put (MPI_Get) of S bytes and its synchronization, per message
  (osu_put_latency, osu_get_latency);
- put_bw, get_bw: a window of `--window-size` puts (gets) to consecutive blocks, then the synchronization;
  the time per message (osu_put_bw, osu_get_bw);
- acc_latency: MPI_Accumulate of S bytes with MPI_SUM on unsigned chars (osu_acc_latency);
- fop_latency, cas_latency: MPI_Fetch_and_op (MPI_SUM) and MPI_Compare_and_swap on one 64-bit integer
  (osu_fop_latency, osu_cas_latency): one point, no size.

The first rank of the pair is the origin, the second the target; the target's window is made with
MPI_Win_allocate (OMB's default) over a communicator of the pair alone, once per point, and freed after
it. The synchronization is the point's "mode" (--rma-sync, OMB's -s): flush (OMB's default: one shared
lock for the batch, MPI_Win_flush after each message), flush_local, lock (lock and unlock around each
message), lock_all, fence (every message between fences, the target fencing too) or pscw (post-start-
complete-wait around each message). Only the origin times; the target's samples are NaN.

Validated against exactly known results in the target's window (put, accumulate, fetch-and-op,
compare-and-swap) and in the origin's buffer (get, and the fetched value of fetch-and-op and
compare-and-swap), after the first call. Accumulate, fetch-and-op and compare-and-swap change the window
every call, so the state after the timed calls is not checked (steady_checkable False).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, Layout
from fabricprobe.specs.pt2pt import ROLE_INITIATOR, ROLE_RESPONDER, PointToPoint

SYNCS = ("flush", "flush_local", "lock", "lock_all", "fence", "pscw")
ORIGIN, TARGET = 0, 1  # ranks in the pair's communicator
_SYNC_WORDS = {  # "each": each message, or each window of them
    "flush": "flush after each, one lock per batch",
    "flush_local": "flush_local after each, one lock per batch",
    "lock": "lock and unlock around each",
    "lock_all": "lock_all and unlock_all around each",
    "fence": "fence after each (both ranks)",
    "pscw": "post/start/complete/wait around each",
}
_FOP_START, _CAS_NEW = 1000, -5  # the target's first value, and what compare-and-swap writes


class OneSided(PointToPoint):
    rma: ClassVar[bool] = True
    kind: ClassVar[str] = "put"  # put, get, acc, fop, cas
    windowed: ClassVar[bool] = False  # the bandwidth tests: --window-size messages per synchronization
    steady_checkable = True
    default_sweep = False

    def roles(self, first: bool) -> int:
        return ROLE_INITIATOR if first else ROLE_RESPONDER

    def native_timer(self, mode: str) -> bool:
        """A compiled loop exists for OMB's default synchronization (collectives/library_rma.py)."""
        return mode == "flush"

    def messages(self, case: Case) -> int:
        return case.window if self.windowed else 1

    def timed_region(self, mode: str, window: int) -> str:
        words = _SYNC_WORDS.get(mode, mode)
        if self.windowed:
            return f"windows of {window} {self.kind}s, {words.replace('each', 'each window')}, per message"
        return f"one {self.kind}, {words}, no barrier"

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        """The origin's buffers from the pool; the pair's communicator and the target's window (every
        rank of the point's communicator splits; a rank outside the pair gets none)."""
        from mpi4py import MPI

        in_pair = case.role >= 0
        color = min(case.rank, case.peer) if in_pair else MPI.UNDEFINED
        pair = case.comm.Split(color, 0 if case.role == ROLE_INITIATOR else 1)
        n = case.count * self.messages(case)
        window = n if case.role == ROLE_RESPONDER else 0
        case.send = pool.get("send", n if case.role == ROLE_INITIATOR else 0, case.dtype, case.hugepages)
        case.recv = pool.get("recv", n if case.role == ROLE_INITIATOR else 0, case.dtype, case.hugepages)
        if not in_pair:
            case.keep = ()
            return
        win = MPI.Win.Allocate(window * case.dtype.itemsize, case.dtype.itemsize, comm=pair)
        memory = np.frombuffer(win.tomemory(), dtype=case.dtype) if window else np.empty(0, case.dtype)
        case.keep = (pair, win, memory)

    def release(self, case: Case) -> None:
        if len(case.keep) == 3:
            pair, win, _ = case.keep
            win.Free()
            pair.Free()
        case.keep = ()

    def window_memory(self, case: Case) -> np.ndarray:
        return case.keep[2] if len(case.keep) == 3 else np.empty(0, case.dtype)

    def _origin_data(self, case: Case, count: int, block: int = 0) -> np.ndarray:
        source = case.rank if case.role == ROLE_INITIATOR else case.peer
        return patterns.data_at(source, 0, count, salt=2 * block).astype(case.dtype)

    def _target_data(self, case: Case, count: int, block: int = 0) -> np.ndarray:
        source = case.rank if case.role == ROLE_RESPONDER else case.peer
        return patterns.data_at(source, 0, count, salt=2 * block + 1).astype(case.dtype)

    def _blocks(self, case: Case, data) -> np.ndarray:
        """One block per message of a window, each its own data (salted by block): with one block
        repeated (np.resize), a get that always read block 0, or any permutation of blocks, was right by
        construction (issue 53)."""
        return np.concatenate([data(case, case.count, b) for b in range(self.messages(case))])

    def prepare(self, case: Case) -> None:
        if case.role == ROLE_INITIATOR:
            case.send[:] = self._blocks(case, self._origin_data)
            patterns.sentinel_fill(case.recv, case.rank)
        elif case.role == ROLE_RESPONDER:
            memory = self.window_memory(case)
            if self.kind in ("put",):
                patterns.sentinel_fill(memory, case.rank)
            else:
                memory[:] = self._blocks(case, self._target_data)

    def results(self, case: Case):
        n = case.count * self.messages(case)
        if case.role == ROLE_RESPONDER and self.kind == "put":
            return [(self.window_memory(case), self._blocks(case, self._origin_data))]
        if case.role == ROLE_RESPONDER and self.kind == "acc":
            return [(self.window_memory(case), self._target_data(case, n) + self._origin_data(case, n))]
        if case.role == ROLE_INITIATOR and self.kind == "get":
            return [(case.recv, self._blocks(case, self._target_data))]
        return []


class Put(OneSided):
    name = "put_latency"
    osu_title = "Put Latency Test"


class Get(OneSided):
    name = "get_latency"
    osu_title = "Get latency Test"
    kind = "get"


class PutBandwidth(OneSided):
    name = "put_bw"
    osu_title = "Put Bandwidth Test"
    windowed = True


class GetBandwidth(OneSided):
    name = "get_bw"
    osu_title = "Get Bandwidth Test"
    kind = "get"
    windowed = True


class Accumulate(OneSided):
    name = "acc_latency"
    osu_title = "Accumulate latency Test"
    kind = "acc"
    steady_checkable = False

    def _origin_data(self, case: Case, count: int, block: int = 0) -> np.ndarray:
        return (super()._origin_data(case, count, block) % 64).astype(case.dtype)  # sums stay below 256

    def _target_data(self, case: Case, count: int, block: int = 0) -> np.ndarray:
        return (super()._target_data(case, count, block) % 64).astype(case.dtype)


class AtomicOne(OneSided):
    """fetch-and-op and compare-and-swap: one 64-bit integer, whatever the size asked."""

    sized = False
    steady_checkable = False

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        return Layout(count=1, send_len=1, recv_len=1, nbytes=8)

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        case.dtype = np.dtype(np.int64)
        super().allocate(case, pool)

    def prepare(self, case: Case) -> None:
        if case.role == ROLE_INITIATOR:
            case.send[:] = self.operand(case)
            case.recv[:] = -7777
        elif case.role == ROLE_RESPONDER:
            self.window_memory(case)[:] = _FOP_START + case.rank

    def operand(self, case: Case) -> int:
        return 7 + (case.rank if case.role == ROLE_INITIATOR else case.peer)

    def results(self, case: Case):
        start = _FOP_START + (case.rank if case.role == ROLE_RESPONDER else case.peer)
        if case.role == ROLE_INITIATOR:
            return [(case.recv, np.array([start]))]  # the value fetched
        if case.role == ROLE_RESPONDER:
            return [(self.window_memory(case), np.array([self.after(start, case)]))]
        return []

    def after(self, start: int, case: Case) -> int:
        raise NotImplementedError


class FetchAndOp(AtomicOne):
    name = "fop_latency"
    osu_title = "Fetch_and_op latency Test"
    kind = "fop"

    def after(self, start: int, case: Case) -> int:
        return start + self.operand(case)


class CompareAndSwap(AtomicOne):
    name = "cas_latency"
    osu_title = "Compare_and_swap latency Test"
    kind = "cas"

    def operand(self, case: Case) -> int:
        return _CAS_NEW

    def after(self, start: int, case: Case) -> int:
        return _CAS_NEW


SPECS: tuple[OneSided, ...] = (
    Put(),
    Get(),
    PutBandwidth(),
    GetBandwidth(),
    Accumulate(),
    FetchAndOp(),
    CompareAndSwap(),
)


def mpi_datatype(case: Case, MPI: Any) -> Any:
    """The datatype the calls move: unsigned chars (accumulate's MPI_SUM needs a C integer type), or
    one 64-bit integer for fetch-and-op and compare-and-swap."""
    return MPI.INT64_T if case.dtype == np.int64 else MPI.UNSIGNED_CHAR

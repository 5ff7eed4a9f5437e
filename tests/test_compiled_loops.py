"""The compiled timing loops (timing/compiled.py, LLVM IR built with llvmlite) against planted C
functions: every MPI call a loop makes, with exactly its arguments and in its order, what each mode puts
between the two clock reads, window mode's late windows, and the first error code returned with the
iterations after it never made. The handles are planted both ways the ABIs have them (MPICH's int,
Open MPI's pointer), the arguments with values a truncation or a sign would change."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from fabricprobe.timing import compiled
from fabricprobe.timing.loops import BARRIER, LOOP, TAG_ACK, TAG_DATA, WINDOW

INT, PTR, AINT, DOUBLE = ctypes.c_int, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_double
BARRIER_S, CALL_S, TICK_S = 1000.0, 1.0, 0.25
BIG = 0x7F00_1234_5678  # an address above 4 GiB: a pointer truncated to 32 bits loses it


class Planted:
    """C functions on one planted clock, each logging (name, *arguments) and costing its seconds;
    wtime() moves the clock by TICK_S only where `ticking` (window mode waits on it)."""

    def __init__(self, handle=INT, ticking: bool = False, fail: dict[str, int] | None = None) -> None:
        self.now, self.log, self.ticking, self.fail = 0.0, [], ticking, dict(fail or {})
        self.keep = []
        self.wtime = self._fn("wtime", DOUBLE, ())
        self.barrier = self.function("barrier", BARRIER_S, handle)

    def _fn(self, name, restype, argtypes, seconds: float = 0.0):
        def body(*args):
            if name == "wtime":
                if self.ticking:
                    self.now += TICK_S
                return self.now
            self.log.append((name, *args))
            self.now += seconds
            countdown = self.fail.get(name)
            if countdown is not None:
                self.fail[name] = countdown - 1
                if countdown == 1:
                    return 7
            return 0

        f = ctypes.CFUNCTYPE(restype, *argtypes)(body)
        self.keep.append(f)
        return f

    def function(self, name: str, seconds: float, *argtypes):
        return self._fn(name, INT, argtypes, seconds)

    def calls(self, name: str) -> list[tuple]:
        return [entry[1:] for entry in self.log if entry[0] == name]


def _times(n: int = 5, fill: float = 0.0) -> np.ndarray:
    return np.full(n, fill)


@pytest.mark.parametrize("handle", [INT, PTR], ids=["int-handles", "pointer-handles"])
@pytest.mark.parametrize("mode", [BARRIER, LOOP], ids=["barrier", "loop"])
def test_only_the_call_lies_between_the_clock_reads_with_its_arguments_exact(handle, mode):
    p = Planted(handle)
    call = p.function("call", CALL_S, INT, PTR, AINT, handle)
    comm = 0x44000000 if handle is INT else BIG + 8
    args = (-3, BIG, -(2**40), comm)
    out = _times()
    assert compiled.native_timed_calls(p.wtime, p.barrier, comm, call, args, mode, out) == 0
    assert list(out) == [CALL_S] * 5
    assert p.calls("call") == [args] * 5
    assert p.calls("barrier") == [(comm,)] * (5 if mode == BARRIER else 1)


def test_window_mode_waits_for_each_moment_and_marks_a_late_one_untimed():
    p = Planted(ticking=True)
    call = p.function("call", CALL_S, INT)
    out = np.array([5.0, 3.0, 10.0])  # on entry: the moments; the second is already past when reached
    assert compiled.native_timed_calls(p.wtime, p.barrier, 0, call, (1,), WINDOW, out) == 0
    # moment 5.0: reached at 0.25, spun to 5.0, the call ends at 6.0, read at 6.25
    assert out[0] == 1.25 and math.isnan(out[1]) and out[2] == 1.25
    assert len(p.calls("call")) == 3 and p.calls("barrier") == []  # every call made, late or not


def test_the_first_error_code_is_returned_and_no_call_follows_it():
    p = Planted(fail={"call": 3})
    call = p.function("call", CALL_S, INT)
    out = _times(6, np.inf)
    assert compiled.native_timed_calls(p.wtime, p.barrier, 0, call, (9,), BARRIER, out) == 7
    assert len(p.calls("call")) == 3 and list(out[:3]) == [CALL_S] * 3 and np.isinf(out[3:]).all()
    p = Planted(fail={"barrier": 1})
    assert compiled.native_timed_calls(p.wtime, p.barrier, 0, call, (9,), LOOP, _times()) == 7
    assert p.calls("call") == []


def test_a_started_call_is_waited_on_and_a_failed_start_is_not():
    p = Planted()
    start = p.function("start", CALL_S, INT, PTR)
    wait = p.function("wait", 0.5, PTR, PTR)
    out = _times(3)
    req, status = BIG, BIG + 64
    rc = compiled.native_timed_start_wait(p.wtime, p.barrier, 0, start, (4, req), wait, req, status, BARRIER, out)
    assert rc == 0
    assert list(out) == [1.5] * 3
    assert [e[0] for e in p.log] == ["barrier", "start", "wait"] * 3 and p.calls("wait") == [(req, status)] * 3
    p = Planted(fail={"start": 2})
    start = p.function("start", CALL_S, INT, PTR)
    wait = p.function("wait", 0.5, PTR, PTR)
    assert compiled.native_timed_start_wait(p.wtime, p.barrier, 0, start, (4, req), wait, req, status, LOOP, out) == 7
    assert len(p.calls("start")) == 2 and len(p.calls("wait")) == 1


def test_puts_go_to_consecutive_blocks_and_each_batch_is_flushed():
    p = Planted(PTR)
    rma = (INT, PTR, INT, INT, INT, AINT, INT, INT, PTR)
    op = p.function("put", CALL_S, *rma[1:])
    flush = p.function("flush", 2.0, INT, PTR)
    out = _times(2)
    base, stride, count, dt, target, win = BIG, 4096, 1024, 0x4C00040A, 1, BIG + 1
    assert compiled.native_rma(p.wtime, p.barrier, BIG, op, flush, base, stride, count, dt, target, win, 4, out) == 0
    one = [(base + j * stride, count, dt, target, j * count, count, dt, win) for j in range(4)]
    assert p.calls("put") == one * 2 and p.calls("flush") == [(target, win)] * 2
    assert list(out) == [(4 * CALL_S + 2.0) / 4] * 2 and p.calls("barrier") == [(BIG,)]


def test_accumulate_fetch_and_op_and_compare_and_swap_pass_their_arguments_in_order():
    p = Planted()
    flush = p.function("flush", 0.0, INT, INT)
    acc = p.function("acc", CALL_S, PTR, INT, INT, INT, AINT, INT, INT, INT, INT)
    fop = p.function("fop", CALL_S, PTR, PTR, INT, INT, AINT, INT, INT)
    cas = p.function("cas", CALL_S, PTR, PTR, PTR, INT, INT, AINT, INT)
    out = _times(2)
    assert compiled.native_accumulate(p.wtime, p.barrier, 5, acc, flush, BIG, 3, 11, 13, 1, 17, out) == 0
    assert p.calls("acc") == [(BIG, 3, 11, 1, 0, 3, 11, 13, 17)] * 2 and list(out) == [CALL_S] * 2
    assert compiled.native_fetch_and_op(p.wtime, p.barrier, 5, fop, flush, BIG, BIG + 8, 11, 13, 1, 17, out) == 0
    assert p.calls("fop") == [(BIG, BIG + 8, 11, 1, 0, 13, 17)] * 2
    args = (BIG, BIG + 8, BIG + 16, 11, 1, 17)
    assert compiled.native_compare_and_swap(p.wtime, p.barrier, 5, cas, flush, *args, out) == 0
    assert p.calls("cas") == [(BIG, BIG + 8, BIG + 16, 11, 1, 0, 17)] * 2
    assert p.calls("flush") == [(1, 17)] * 6


def test_overlap_computes_for_the_seconds_asked_between_start_and_wait():
    p = Planted(ticking=True)
    start = p.function("start", CALL_S, INT, PTR)
    wait = p.function("wait", 2.0, PTR, PTR)
    out, computing = _times(3), _times(3)
    assert compiled.native_overlap(p.wtime, p.barrier, 0, start, (1, BIG), wait, BIG, 0, 1.0, out, computing) == 0
    assert [e[0] for e in p.log] == ["barrier", "start", "wait"] * 3
    # the clock moves 0.25 a read: computing ends at the first read 1 s or more after it began
    assert list(computing) == [1.25] * 3 and list(out) == [CALL_S + 0.25 + 1.25 + 2.0 + 0.25] * 3


@pytest.mark.parametrize("mode", [BARRIER, LOOP], ids=["barrier", "loop"])
def test_the_empty_loop_times_nothing(mode):
    p = Planted()
    out = _times(4, np.inf)
    assert compiled.native_empty(p.wtime, p.barrier, 0, mode, out) == 0
    assert list(out) == [0.0] * 4 and len(p.calls("barrier")) == (4 if mode == BARRIER else 1)


@pytest.mark.parametrize("initiator", [True, False])
def test_a_pingpong_initiator_times_half_round_trips_and_the_responder_nothing(initiator):
    p = Planted()
    send = p.function("send", CALL_S, PTR, INT, INT, INT, INT, INT)
    recv = p.function("recv", 2.0, PTR, INT, INT, INT, INT, INT, PTR)
    out = _times(3)
    args = (BIG, BIG + 8, 8, 0x4C00010D, 1, 0x44000000, BIG + 16)
    assert compiled.native_pingpong(p.wtime, send, recv, *args, initiator, out) == 0
    order = ["send", "recv"] if initiator else ["recv", "send"]
    assert [e[0] for e in p.log] == order * 3
    assert p.calls("send") == [(BIG, 8, 0x4C00010D, 1, TAG_DATA, 0x44000000)] * 3
    assert p.calls("recv") == [(BIG + 8, 8, 0x4C00010D, 1, TAG_DATA, 0x44000000, BIG + 16)] * 3
    assert list(out) == [1.5] * 3 if initiator else np.isnan(out).all()


@pytest.mark.parametrize("role", [0, 1, 2], ids=["sender", "receiver", "both"])
def test_a_bandwidth_window_posts_its_requests_in_turn_waits_for_all_and_acknowledges(role):
    p = Planted()
    msg = (PTR, INT, INT, INT, INT, INT, PTR)
    isend, irecv = p.function("isend", 0.0, *msg), p.function("irecv", 0.0, *msg)
    waitall = p.function("waitall", 4.0, INT, PTR, PTR)
    send = p.function("send", 0.0, PTR, INT, INT, INT, INT, INT)
    recv = p.function("recv", 0.0, PTR, INT, INT, INT, INT, INT, PTR)
    reqs, req_size, statuses, status, ack, byte = BIG, 8, BIG + 4096, BIG + 8192, BIG + 9000, 0x4C00010D
    out = _times(2)
    fns = (p.wtime, isend, irecv, waitall, send, recv)
    rest = (BIG + 100, BIG + 200, 64, byte, 1, 5, reqs, req_size, statuses, status, ack, byte, 3)
    assert compiled.native_window(*fns, *rest, role, out) == 0
    receives = [(BIG + 200, 64, byte, 1, TAG_DATA, 5, reqs + k * req_size) for k in range(3)] if role else []
    first = 3 if role == 2 else 0
    sends = [(BIG + 100, 64, byte, 1, TAG_DATA, 5, reqs + (first + k) * req_size) for k in range(3)]
    sends = sends if role != 1 else []
    assert p.calls("irecv") == receives * 2 and p.calls("isend") == sends * 2
    assert p.calls("waitall") == [(6 if role == 2 else 3, reqs, statuses)] * 2
    assert p.calls("recv") == ([(ack, 4, byte, 1, TAG_ACK, 5, status)] * 2 if role == 0 else [])
    assert p.calls("send") == ([(ack, 4, byte, 1, TAG_ACK, 5)] * 2 if role == 1 else [])
    assert list(out) == [4.0 / 3] * 2


def test_each_shape_is_compiled_once_and_a_loop_refuses_what_it_cannot_write():
    p = Planted()
    call = p.function("call", CALL_S, INT)
    compiled.native_timed_calls(p.wtime, p.barrier, 0, call, (1,), LOOP, _times())
    before = len(compiled._compiled)
    other = Planted()
    compiled.native_timed_calls(other.wtime, other.barrier, 0, other.function("c", CALL_S, INT), (2,), LOOP, _times())
    assert len(compiled._compiled) == before  # the same signatures and mode: the same machine code
    with pytest.raises(TypeError):
        compiled.native_timed_calls(p.wtime, p.barrier, 0, call, (1,), LOOP, np.zeros(3, np.float32))
    with pytest.raises(TypeError):
        compiled.native_timed_calls(p.wtime, p.barrier, 0, call, (1, 2), LOOP, _times())  # one argument too many

"""The native timing loops (timing/loops.py says what each mode times), written as LLVM IR with
llvmlite's IR builder and compiled in the rank by LLVM's MCJIT for the C signatures of the MPI
functions they call: the timed region holds the MPI call and two clock reads, as a C benchmark's.

Why not Numba, which compiled them before: a rank that imported Numba and loaded its cached loops
spent about 0.45 s and 150 modules more at start-up than one that builds these (docs/scale.md,
"Start-up"); llvmlite is the compiler Numba itself drives, so the code generated is LLVM's in both.

Each loop is a C function `int loop(int64 *slots, double *out, double *out2, int64 n, double x)`: the
slots hold its arguments (MPI functions as addresses, handles, pointers and counts as integers), each
converted at the call to the type its C function takes (ctypes' argtypes). A loop is compiled once per
shape (the mode, the role, the MPI functions' signatures) and called through ctypes, which releases
the GIL; it returns 0 or the first non-zero MPI error code."""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from functools import partial
from typing import Any, Callable, Iterator

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from fabricprobe.timing.loops import BARRIER, TAG_ACK, TAG_DATA, WINDOW

I32, I64, F64 = ir.IntType(32), ir.IntType(64), ir.DoubleType()
PTR = ir.IntType(8).as_pointer()
_LOOP_TYPE = ir.FunctionType(I32, [I64.as_pointer(), F64.as_pointer(), F64.as_pointer(), I64, F64])
_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
)
_INTEGER_CODES = "bBhHiIlLqQnN?"

Signature = tuple[Any, tuple]  # (restype, argtypes) of a ctypes function


def _ir_type(ctype: Any) -> ir.Type:
    if ctype is ctypes.c_double:
        return F64
    if ctype in (ctypes.c_void_p, ctypes.c_char_p) or (isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer)):
        return PTR
    if getattr(ctype, "_type_", None) in tuple(_INTEGER_CODES):
        return ir.IntType(8 * ctypes.sizeof(ctype))
    raise TypeError(f"a compiled timing loop cannot pass {ctype!r}")


def signature(fn: Any) -> Signature:
    """(restype, argtypes) of a ctypes function: a library's (argtypes set) or a CFUNCTYPE callback."""
    return fn.restype, tuple(fn.argtypes or ())


def address(fn: Any) -> int:
    return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)


class _Emitter:
    """One loop being built: its slots read as int64, typed calls through them, checked return codes,
    counted loops and variables (allocas, promoted to registers by LLVM's optimizer)."""

    def __init__(self, signatures: dict[int, Signature]) -> None:
        self.module = ir.Module(name="fabricprobe_loop")
        self.fn = ir.Function(self.module, _LOOP_TYPE, name="loop")
        self.slots, self.out, self.out2, self.n, self.x = self.fn.args
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.signatures = signatures

    def slot(self, k: int) -> ir.Value:
        return self.b.load(self.b.gep(self.slots, [ir.Constant(I64, k)]))

    def call(self, k: int, *args: ir.Value | int) -> ir.Value:
        """Call the function in slot k with int64 values (or Python ints), each converted to its type."""
        restype, argtypes = self.signatures[k]
        types = [_ir_type(t) for t in argtypes]
        ret = I32 if restype is None else _ir_type(restype)
        target = self.b.inttoptr(self.slot(k), ir.FunctionType(ret, types).as_pointer())
        if len(args) != len(types):
            raise TypeError(f"slot {k}: {len(args)} arguments for a function of {len(types)}")
        return self.b.call(target, [self._convert(a, t) for a, t in zip(args, types)])

    def _convert(self, value: ir.Value | int, to: ir.Type) -> ir.Value:
        if isinstance(value, int):
            value = ir.Constant(I64, value)
        if to == PTR:
            return self.b.inttoptr(value, PTR)
        if to == F64:
            return self.b.bitcast(value, F64)
        return value if to.width == 64 else self.b.trunc(value, to)

    def check(self, rc: ir.Value) -> None:
        """Return rc from the loop unless it is 0."""
        with self.b.if_then(self.b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
            self.b.ret(rc)

    def var(self, init: ir.Value) -> ir.Value:
        with self.b.goto_block(self.entry):
            self.b.position_at_start(self.entry)
            ptr = self.b.alloca(init.type)
        self.b.store(init, ptr)
        return ptr

    @contextmanager
    def repeat(self, count: ir.Value) -> Iterator[ir.Value]:
        """for i in range(count): the body emitted inside the with-block, i an int64."""
        counter = self.var(ir.Constant(I64, 0))
        test, body, done = (self.fn.append_basic_block(name) for name in ("test", "body", "done"))
        self.b.branch(test)
        self.b.position_at_end(test)
        i = self.b.load(counter)
        self.b.cbranch(self.b.icmp_signed("<", i, count), body, done)
        self.b.position_at_end(body)
        yield i
        self.b.store(self.b.add(i, ir.Constant(I64, 1)), counter)
        self.b.branch(test)
        self.b.position_at_end(done)

    @contextmanager
    def loop_while(self, condition: Callable[[], ir.Value]) -> Iterator[None]:
        """while condition(): the body emitted inside the with-block (condition emits its test)."""
        test, body, done = (self.fn.append_basic_block(name) for name in ("while", "do", "done"))
        self.b.branch(test)
        self.b.position_at_end(test)
        self.b.cbranch(condition(), body, done)
        self.b.position_at_end(body)
        yield
        self.b.branch(test)
        self.b.position_at_end(done)

    def spin_until(self, wtime: int, moment: ir.Value) -> None:
        """while wtime() < moment: pass"""
        with self.loop_while(lambda: self.b.fcmp_ordered("<", self.call(wtime), moment)):
            pass

    def at(self, array: ir.Value, i: ir.Value) -> ir.Value:
        return self.b.gep(array, [i])

    def finish(self) -> None:
        self.b.ret(ir.Constant(I32, 0))


def _timed(e: _Emitter, mode: int, wtime: int, barrier: int, comm: ir.Value, action: Callable[[], ir.Value]) -> None:
    """The three modes around action() (its return code checked after the iteration's time is stored)."""
    b = e.b
    if mode == BARRIER:
        with e.repeat(e.n) as i:
            e.check(e.call(barrier, comm))
            t0 = e.call(wtime)
            rc = action()
            b.store(b.fsub(e.call(wtime), t0), e.at(e.out, i))
            e.check(rc)
    elif mode == WINDOW:
        with e.repeat(e.n) as i:
            start = b.load(e.at(e.out, i))
            late = b.fcmp_ordered(">", e.call(wtime), start)
            e.spin_until(wtime, start)
            rc = action()
            took = b.fsub(e.call(wtime), start)
            b.store(b.select(late, ir.Constant(F64, float("nan")), took), e.at(e.out, i))
            e.check(rc)
    else:
        e.check(e.call(barrier, comm))
        prev = e.var(e.call(wtime))
        with e.repeat(e.n) as i:
            rc = action()
            now = e.call(wtime)
            b.store(b.fsub(now, b.load(prev)), e.at(e.out, i))
            b.store(now, prev)
            e.check(rc)
    e.finish()


def _then(e: _Emitter, first: Callable[[], ir.Value], second: Callable[[], ir.Value]) -> ir.Value:
    """rc = first(); if rc == 0: rc = second()"""
    rc = e.var(first())
    with e.b.if_then(e.b.icmp_signed("==", e.b.load(rc), ir.Constant(I32, 0))):
        e.b.store(second(), rc)
    return e.b.load(rc)


# ---- the loops' bodies: slot numbers as the Python functions below pack them ----


def _build_calls(e: _Emitter, mode: int, nargs: int) -> None:
    """slots: wtime, barrier, comm, call, *args"""
    comm, args = e.slot(2), [e.slot(4 + j) for j in range(nargs)]
    _timed(e, mode, 0, 1, comm, lambda: e.call(3, *args))


def _build_start_wait(e: _Emitter, mode: int, nargs: int) -> None:
    """slots: wtime, barrier, comm, start, wait, req, status, *args"""
    comm, req, status, args = e.slot(2), e.slot(5), e.slot(6), [e.slot(7 + j) for j in range(nargs)]
    _timed(e, mode, 0, 1, comm, lambda: _then(e, lambda: e.call(3, *args), lambda: e.call(4, req, status)))


def _build_rma(e: _Emitter) -> None:
    """slots: wtime, barrier, comm, op, flush, base, stride, count, dt, target, win, messages"""
    b = e.b
    base, stride, count, dt, target, win, messages = (e.slot(k) for k in range(5, 12))
    e.check(e.call(1, e.slot(2)))
    with e.repeat(e.n) as i:
        t0 = e.call(0)
        with e.repeat(messages) as j:
            at = b.add(base, b.mul(j, stride))
            e.check(e.call(3, at, count, dt, target, b.mul(j, count), count, dt, win))
        rc = e.call(4, target, win)
        per = b.fdiv(b.fsub(e.call(0), t0), b.sitofp(messages, F64))
        b.store(per, e.at(e.out, i))
        e.check(rc)
    e.finish()


def _build_one_sided(e: _Emitter, nargs: int) -> None:
    """slots: wtime, barrier, comm, op, flush, target, win, *op's arguments: one call and a flush"""
    b = e.b
    target, win, args = e.slot(5), e.slot(6), [e.slot(7 + j) for j in range(nargs)]
    e.check(e.call(1, e.slot(2)))
    with e.repeat(e.n) as i:
        t0 = e.call(0)
        rc = _then(e, lambda: e.call(3, *args), lambda: e.call(4, target, win))
        b.store(b.fsub(e.call(0), t0), e.at(e.out, i))
        e.check(rc)
    e.finish()


def _build_overlap(e: _Emitter, nargs: int) -> None:
    """slots: wtime, barrier, comm, start, wait, req, status, *args; x: the seconds to compute; out2:
    the computation's times. The computation: multiply-adds on registers, the clock read every 64
    (OMB's dummy compute is a calibrated loop of the same kind), its result stored in the slot after
    the arguments so that it is computed."""
    b = e.b
    comm, req, status, args = e.slot(2), e.slot(5), e.slot(6), [e.slot(7 + j) for j in range(nargs)]
    sink = e.var(ir.Constant(F64, 1.0))
    with e.repeat(e.n) as i:
        e.check(e.call(1, comm))
        t0 = e.call(0)
        e.check(e.call(3, *args))
        tc = e.call(0)
        with e.loop_while(lambda: b.fcmp_ordered("<", b.fsub(e.call(0), tc), e.x)):
            with e.repeat(ir.Constant(I64, 64)):
                x = b.load(sink)
                b.store(b.fadd(b.fmul(x, ir.Constant(F64, 1.0000001)), ir.Constant(F64, 1e-9)), sink)
        b.store(b.fsub(e.call(0), tc), e.at(e.out2, i))
        rc = e.call(4, req, status)
        b.store(b.fsub(e.call(0), t0), e.at(e.out, i))
        e.check(rc)
    b.store(b.bitcast(b.load(sink), I64), b.gep(e.slots, [ir.Constant(I64, 7 + nargs)]))
    e.finish()


def _build_empty(e: _Emitter, mode: int) -> None:
    """slots: wtime, barrier, comm: the harness floor, a timed region with nothing in it"""
    _timed(e, mode, 0, 1, e.slot(2), lambda: ir.Constant(I32, 0))


def _build_pingpong(e: _Emitter, initiator: bool) -> None:
    """slots: wtime, send, recv, sbuf, rbuf, count, dtype, peer, comm, status (OMB osu_latency)"""
    b = e.b
    sbuf, rbuf, count, dtype, peer, comm, status = (e.slot(k) for k in range(3, 10))
    with e.repeat(e.n) as i:
        if initiator:
            t0 = e.call(0)
            e.check(e.call(1, sbuf, count, dtype, peer, TAG_DATA, comm))
            rc = e.call(2, rbuf, count, dtype, peer, TAG_DATA, comm, status)
            half = b.fdiv(b.fsub(e.call(0), t0), ir.Constant(F64, 2.0))
            b.store(half, e.at(e.out, i))
        else:
            e.check(e.call(2, rbuf, count, dtype, peer, TAG_DATA, comm, status))
            rc = e.call(1, sbuf, count, dtype, peer, TAG_DATA, comm)
            b.store(ir.Constant(F64, float("nan")), e.at(e.out, i))  # the responder's samples must not count
        e.check(rc)
    e.finish()


def _build_window(e: _Emitter, role: int) -> None:
    """slots: wtime, isend, irecv, waitall, send, recv, sbuf, rbuf, count, dtype, peer, comm, reqs,
    req_size, statuses, status, ack, ack_type, window (OMB osu_bw: role 0 sends, 1 receives; 2 both,
    osu_bibw). Each iteration is one window of messages; out[i] is its time divided by the window."""
    b = e.b
    sbuf, rbuf, count, dtype, peer, comm, reqs, req_size, statuses, status, ack, ack_type, window = (
        e.slot(k) for k in range(6, 19)
    )
    with e.repeat(e.n) as i:
        t0 = e.call(0)
        posted = 0
        for role_skipped, slot, buf in ((0, 2, rbuf), (1, 1, sbuf)):
            if role == role_skipped:
                continue
            with e.repeat(window) as j:
                req = b.add(reqs, b.mul(b.add(j, b.mul(ir.Constant(I64, posted), window)), req_size))
                e.check(e.call(slot, buf, count, dtype, peer, TAG_DATA, comm, req))
            posted += 1
        e.check(e.call(3, b.mul(ir.Constant(I64, posted), window), reqs, statuses))
        if role == 0:
            e.check(e.call(5, ack, 4, ack_type, peer, TAG_ACK, comm, status))
        elif role == 1:
            e.check(e.call(4, ack, 4, ack_type, peer, TAG_ACK, comm))
        per = b.fdiv(b.fsub(e.call(0), t0), b.sitofp(window, F64))
        b.store(per, e.at(e.out, i))
    e.finish()


# ---- compiling, once per shape ----


class _Jit:
    """One MCJIT engine for the process; each loop its own module added to it."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.machine)
        self.tuning = llvm.create_pipeline_tuning_options(speed_level=2)

    def compile(self, module: ir.Module) -> int:
        module.triple = self.machine.triple
        module.data_layout = str(self.machine.target_data)
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
        builder = llvm.create_pass_builder(self.machine, self.tuning)
        builder.getModulePassManager().run(parsed, builder)
        self.engine.add_module(parsed)
        self.engine.finalize_object()
        return self.engine.get_function_address("loop")


_jit: _Jit | None = None
_compiled: dict[tuple, Any] = {}


def _loop(shape: tuple, signatures: dict[int, Signature], build: Callable[[_Emitter], None]) -> Any:
    """The compiled loop of this shape (built by build(emitter) the first time), callable via ctypes."""
    global _jit
    key = (shape, tuple(sorted(signatures.items())))
    if key not in _compiled:
        if _jit is None:
            _jit = _Jit()
        e = _Emitter(signatures)
        build(e)
        _compiled[key] = _PROTOTYPE(_jit.compile(e.module))
    return _compiled[key]


def _run(
    shape: tuple,
    build: Callable[[_Emitter], None],
    slots: list[Any],
    out: np.ndarray,
    out2: np.ndarray | None = None,
    x: float = 0.0,
) -> int:
    """Run the loop of this shape on `slots`: ctypes functions (passed as their addresses, their
    signatures part of the shape) and integers."""
    second = out if out2 is None else out2
    for array in (out, second):
        if array.dtype != np.float64 or not array.flags.c_contiguous or not array.flags.writeable:
            raise TypeError("a timing loop writes contiguous, writable float64 arrays")
    functions = {k: s for k, s in enumerate(slots) if isinstance(s, ctypes._CFuncPtr)}
    loop = _loop(shape, {k: signature(f) for k, f in functions.items()}, build)
    values = [address(functions[k]) if k in functions else int(s) for k, s in enumerate(slots)]
    packed = np.array([v & 0xFFFFFFFFFFFFFFFF for v in values], dtype=np.uint64)
    return int(loop(packed.ctypes.data, out.ctypes.data, second.ctypes.data, out.size, x))


# ---- the loops, called as their Numba forerunners were ----


def native_timed_calls(wtime, barrier, comm, call, args, mode, out) -> int:
    """Time `call(*args)` out.size times; `call` is any typed MPI C function."""
    build = partial(_build_calls, mode=mode, nargs=len(args))
    return _run(("calls", mode, len(args)), build, [wtime, barrier, comm, call, *args], out)


def native_timed_start_wait(wtime, barrier, comm, start, args, wait, req, status, mode, out) -> int:
    """Time `start(*args)` then `wait(req, status)` out.size times: a non-blocking call (args end with
    req) or a persistent one (start is MPI_Start, args (req,)), completed at once."""
    build = partial(_build_start_wait, mode=mode, nargs=len(args))
    return _run(("start_wait", mode, len(args)), build, [wtime, barrier, comm, start, wait, req, status, *args], out)


def native_rma(wtime, barrier, comm, op, flush, base, stride, count, dt, target, win, messages, out) -> int:
    """OMB's put/get loop with flush: after a barrier of the pair, per iteration `messages` calls of op
    (MPI_Put or MPI_Get: block j at base + j·stride, target displacement j·count) and MPI_Win_flush;
    out[i] is the time per message."""
    slots = [wtime, barrier, comm, op, flush, base, stride, count, dt, target, win, messages]
    return _run(("rma",), _build_rma, slots, out)


def _one_sided(wtime, barrier, comm, op, flush, target, win, args, out) -> int:
    build = partial(_build_one_sided, nargs=len(args))
    return _run(("one_sided", len(args)), build, [wtime, barrier, comm, op, flush, target, win, *args], out)


def native_accumulate(wtime, barrier, comm, op, flush, origin, count, dt, mpi_op, target, win, out) -> int:
    """OMB's accumulate loop with flush: per iteration one MPI_Accumulate of `count` elements at
    target displacement 0 and MPI_Win_flush; out[i] is its time."""
    args = (origin, count, dt, target, 0, count, dt, mpi_op, win)
    return _one_sided(wtime, barrier, comm, op, flush, target, win, args, out)


def native_fetch_and_op(wtime, barrier, comm, op, flush, origin, result, dt, mpi_op, target, win, out) -> int:
    """OMB's fetch-and-op loop with flush: one MPI_Fetch_and_op at displacement 0 and MPI_Win_flush."""
    args = (origin, result, dt, target, 0, mpi_op, win)
    return _one_sided(wtime, barrier, comm, op, flush, target, win, args, out)


def native_compare_and_swap(wtime, barrier, comm, op, flush, origin, compare, result, dt, target, win, out) -> int:
    """OMB's compare-and-swap loop with flush: one MPI_Compare_and_swap at displacement 0 and
    MPI_Win_flush."""
    args = (origin, compare, result, dt, target, 0, win)
    return _one_sided(wtime, barrier, comm, op, flush, target, win, args, out)


def native_overlap(wtime, barrier, comm, start, args, wait, req, status, seconds, out, out_compute) -> int:
    """OMB's overlap loop: after a barrier, start the call, compute for `seconds`, wait; out[i] is the
    whole (OMB's Overall), out_compute[i] the computation alone."""
    if out_compute.size < out.size:
        raise ValueError("out_compute is shorter than out")
    build = partial(_build_overlap, nargs=len(args))
    slots = [wtime, barrier, comm, start, wait, req, status, *args, 0]  # the last: the computation's sink
    return _run(("overlap", len(args)), build, slots, out, out_compute, float(seconds))


def native_empty(wtime, barrier, comm, mode, out) -> int:
    """The harness floor: a timed region with nothing in it."""
    return _run(("empty", mode), partial(_build_empty, mode=mode), [wtime, barrier, comm], out)


def native_pingpong(wtime, send, recv, sbuf, rbuf, count, dtype, peer, comm, status, initiator, out) -> int:
    """OMB osu_latency: blocking send/recv round trips; the initiator records half of each."""
    who = bool(initiator)
    slots = [wtime, send, recv, sbuf, rbuf, count, dtype, peer, comm, status]
    return _run(("pingpong", who), partial(_build_pingpong, initiator=who), slots, out)


def native_window(
    wtime,
    isend,
    irecv,
    waitall,
    send,
    recv,
    sbuf,
    rbuf,
    count,
    dtype,
    peer,
    comm,
    reqs,
    req_size,
    statuses,
    status,
    ack,
    ack_type,
    window,
    role,
    out,
) -> int:
    """OMB osu_bw (role 0 sender, 1 receiver) and osu_bibw (role 2, both directions): each iteration one
    window of `window` non-blocking messages; out[i] is the window's time divided by the window."""
    slots = [wtime, isend, irecv, waitall, send, recv, sbuf, rbuf, count, dtype, peer, comm]
    slots += [reqs, req_size, statuses, status, ack, ack_type, window]
    return _run(("window", int(role)), partial(_build_window, role=int(role)), slots, out)

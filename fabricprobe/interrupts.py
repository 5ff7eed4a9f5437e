"""What an interrupt does to a fabricprobe process: Ctrl-C (SIGINT), and what a scheduler sends first
when a job is cancelled or runs out of time (SIGTERM: `scancel`, Slurm's time limit, before SIGKILL
after KillWait) or when its terminal goes (SIGHUP). Each is treated alike, whether it reaches the whole
process group or the command's own PID alone: the command ends what it started, marks what it was
measuring as interrupted, says one line, and exits 128 + the signal's number (130, 143, 129: what a
shell reports for a process the signal ended). docs/cli.md, "Exit statuses". A SIGINT the command
inherited as ignored (a shell without job control starts `cmd &` so) is handled too: an interrupt sent
to its PID is meant for it.

Two kinds of process:
- a driver (tune-sweep, tune --verify, sweep --launches: not a rank) waits on the launchers it started
  in Python: the first interrupt raises `Interrupted` in its main thread, so every `finally` runs (the
  launcher is asked to end its ranks, job files are removed), and later ones are held until it exits,
  so that cleaning up is never cut short;
- a rank may sit in a compiled loop or a blocking MPI call for seconds, where no Python handler runs,
  and its launcher follows its SIGTERM with SIGKILL soon after (Open MPI: 0.2 s): a thread waits on the
  signal wake-up descriptor (written by the C-level handler the moment the signal arrives), runs the
  callbacks registered with `on_interrupt` (the sweep marks its run interrupted) and ends the process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Callable, Iterator

INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_first: int | None = None  # the interrupt a driver is handling (later ones are held)
_callbacks: list[Callable[[int], None]] = []  # a rank's, run (last first) before it exits
_watching = False


def status(signum: int) -> int:
    """The exit status of a process ended by interrupt `signum`: 128 + its number."""
    return 128 + int(signum)


def name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(KeyboardInterrupt):
    """Raised in a driver's main thread by the first interrupt; a KeyboardInterrupt, so every handler
    of Ctrl-C (ending a launcher's orphans: mpienv.orphans) handles SIGTERM and SIGHUP too."""

    def __init__(self, signum: int = signal.SIGINT, reason: str = "") -> None:
        super().__init__(name(signum))
        self.signum = int(signum)
        self.reason = reason  # said instead of "by SIG…" where the interrupt was seen, not received


def said(exc: BaseException) -> str:
    """The one line an interrupted command ends with (without "fabricprobe: error: ")."""
    reason = getattr(exc, "reason", "")
    return f"interrupted: {reason}" if reason else f"interrupted by {name(signum_of(exc))}"


def signum_of(exc: BaseException) -> int:
    """The signal an interrupt exception stands for (a bare KeyboardInterrupt: SIGINT)."""
    return getattr(exc, "signum", int(signal.SIGINT))


def raise_in_main_thread() -> None:
    """A driver's handlers: the first interrupt raises Interrupted, later ones are held."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):  # noqa: ARG001
        global _first
        if _first is not None:
            return  # cleaning up after the first: held
        _first = signum
        raise Interrupted(signum)

    for sig in INTERRUPTS:
        signal.signal(sig, handler)


def exit_from_a_thread(say: Callable[[str], None] | None = None) -> None:
    """A rank's handlers, for the whole process: at the first interrupt, the registered callbacks run
    and the process exits status(signum) at once (`say`: the one line, on rank 0)."""
    global _watching
    if _watching or threading.current_thread() is not threading.main_thread():
        return
    _start_watcher(say)
    _watching = True


def _start_watcher(say: Callable[[str], None] | None) -> Callable[[], None]:
    """The wake-up descriptor, its thread and quiet Python handlers; returns the function that undoes
    them (for a block: on_interrupt outside a rank process)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    stopping = threading.Event()

    def watch() -> None:
        byte = os.read(read_end, 1)
        if stopping.is_set():
            return
        signum = byte[0] if byte else int(signal.SIGTERM)
        for callback in reversed(list(_callbacks)):
            with contextlib.suppress(Exception):
                callback(signum)
        if say is not None:
            with contextlib.suppress(Exception):
                say(f"interrupted by {name(signum)}")
        os._exit(status(signum))

    previous = {sig: signal.signal(sig, lambda signum, frame: None) for sig in INTERRUPTS}
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="fabricprobe-interrupts", daemon=True)
    watcher.start()

    def undo() -> None:
        stopping.set()
        os.write(write_end, b"\0")
        watcher.join()
        signal.set_wakeup_fd(previous_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        os.close(read_end)
        os.close(write_end)

    return undo


@contextlib.contextmanager
def on_interrupt(callback: Callable[[int], None], say: Callable[[str], None] | None = None) -> Iterator[None]:
    """During the block, an interrupt runs callback(signum) and ends the process at once (the rank's
    way, above). In a process that is not watched as a whole (a test calling a sweep in its own
    process), the watcher lives for the block only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    undo = None if _watching else _start_watcher(say)
    _callbacks.append(callback)
    try:
        yield
    finally:
        _callbacks.remove(callback)
        if undo is not None:
            undo()

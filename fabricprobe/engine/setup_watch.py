"""The set-up's watchdog of last resort: a process, not a thread. mpi4py calls MPI_Init inside the import
of its MPI module with the interpreter held, so a set-up that hangs there (a rank launched with another
library's environment, a launcher gone) stops every thread of the process, the watchdog thread
included: 8 of 8 planted set-up hangs hung forever. A child forked before MPI starts waits on a pipe
instead; the rank tells it each phase of the set-up as it begins, and closes the pipe when the set-up
ends (or dies: the child sees the pipe close either way). A phase that outlasts the limit (plus a grace
in which the thread watchdog, which marks the run, speaks first) is named on stderr, and the rank is
sent SIGABRT, on which faulthandler writes every thread's Python stack, then SIGKILL."""

from __future__ import annotations

import faulthandler
import os
import select
import signal
import sys
import time

# The thread watchdog (same limit) speaks and ends the job first where the interpreter is free: it
# takes up to 8 s after the limit (other ranks wait 5 s for rank 0, rank 0 gathers reports for 3 s).
# With 2 s, this watcher aborted rank 1 in the middle of that under MPICH, and the job ended by the
# signal instead of the watchdog's exit status 3.
GRACE_S = 10.0
KILL_AFTER_S = 3.0  # after SIGABRT, a rank that still lives is killed


class SetupWatch:
    def __init__(self, limit: float, rank: int, phase: str) -> None:
        self.pid = 0
        self._pipe = -1
        if limit <= 0 or not hasattr(os, "fork"):
            return
        try:
            faulthandler.enable(file=sys.stderr, all_threads=True)  # SIGABRT: every thread's stack
        except (AttributeError, ValueError, OSError):  # a stderr without a file descriptor: no stack
            pass
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the watcher: no MPI, no threads, nothing but the pipe and the clock
            os.close(write_end)
            code = 0
            try:
                _watch(read_end, limit + GRACE_S, limit, rank, os.getppid(), phase)
            except BaseException:  # noqa: BLE001 - the watcher never raises into a copy of the rank
                code = 1
            os._exit(code)
        os.close(read_end)
        self.pid, self._pipe = pid, write_end

    def phase(self, text: str) -> None:
        """The set-up begins `text` (its own time limit starts now)."""
        if self._pipe >= 0:
            try:
                os.write(self._pipe, text.replace("\n", " ").encode() + b"\n")
            except OSError:
                pass

    def stop(self) -> None:
        if self._pipe >= 0:
            os.close(self._pipe)
            self._pipe = -1
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass


def _watch(pipe: int, wait: float, limit: float, rank: int, parent: int, phase: str) -> None:
    deadline = time.monotonic() + wait
    pending = b""
    while True:
        left = deadline - time.monotonic()
        if left > 0:
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                data = os.read(pipe, 4096)
                if not data:
                    return  # the set-up ended, or the rank is gone
                pending += data
                *lines, pending = pending.split(b"\n")
                if lines:
                    phase = lines[-1].decode(errors="replace")
                    deadline = time.monotonic() + wait
            continue
        message = (
            f"fabricprobe: error: rank {rank}: {phase} did not finish within the {limit:g} s watchdog limit "
            f"(--point-timeout), in code that holds the interpreter; its stack follows, and the rank ends\n"
        )
        os.write(2, message.encode())
        try:
            os.kill(parent, signal.SIGABRT)
            time.sleep(KILL_AFTER_S)
            os.kill(parent, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return

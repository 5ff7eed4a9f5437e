"""The process's first step, before the rest of fabricprobe is imported: OMB's buffer setting.

`fabricprobe sweep --early-buffers MIB` maps and writes each rank's message-buffer memory here, while the
process has written only the interpreter's few MiB, as OMB's ranks make their buffers right after
MPI_Init; importing the command line (numpy, numba, h5py, rich) and setting up then write 66 MiB more
before the first message buffer (RssAnon 6 MiB here, 72 MiB there, on the test VM)
(fabricprobe/memory/arena.py says why this matters). The option is also declared in sweep's parser,
which checks its value and rejects it elsewhere.
"""

from __future__ import annotations

import sys


def main() -> int:
    interrupted_as_a_process()
    try:
        from fabricprobe.memory import arena

        arena.reserve(arena.requested_mib(sys.argv[1:]))
        from fabricprobe.cli.main import main as run
    except KeyboardInterrupt as exc:  # while numpy, numba, h5py and rich load: a line, not their traceback
        from fabricprobe import interrupts

        sys.stderr.write(f"fabricprobe: error: {interrupts.said(exc)}\n")
        return interrupts.status(interrupts.signum_of(exc))
    return run()


def interrupted_as_a_process() -> None:
    """SIGINT, SIGTERM and SIGHUP handled alike from the first step (fabricprobe.interrupts): a rank
    exits at once from a thread (rank 0 says so), a driver raises Interrupted and cleans up."""
    from fabricprobe import interrupts
    from fabricprobe.mpienv.launcher import env_rank, launched_by_mpiexec

    if launched_by_mpiexec():
        say = (lambda line: sys.stderr.write(f"fabricprobe: error: {line}\n")) if env_rank() == 0 else None
        interrupts.exit_from_a_thread(say)
    else:
        interrupts.raise_in_main_thread()

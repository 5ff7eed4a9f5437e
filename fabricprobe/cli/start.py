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
    try:
        from fabricprobe.memory import arena

        arena.reserve(arena.requested_mib(sys.argv[1:]))
        from fabricprobe.cli.main import main as run
    except KeyboardInterrupt:  # Ctrl-C while numpy, numba, h5py and rich load: a line, not their traceback
        from fabricprobe.errors import EXIT_INTERRUPTED

        sys.stderr.write("fabricprobe: error: interrupted\n")
        return EXIT_INTERRUPTED
    return run()

"""Run under mpiexec: a bug planted in the engine on the last rank, at its second validated point, then
`fabricprobe sweep` as the command line runs it. The job must end with status 70 (an internal error,
not 1, wrong results) and one `fabricprobe: internal error:` line (tests/test_library_mutants.py).

    mpiexec -n P python tests/drivers/internal_error.py RESULTS.h5 P
"""

from __future__ import annotations

import sys

from fabricprobe.cli import main as cli_main
from fabricprobe.engine import validation
from fabricprobe.mpienv.launcher import env_rank

_planted = validation.Tally.first_call
_calls = [0]
LAST = int(sys.argv[2]) - 1


def first_call(self, *args, **kwargs):
    _calls[0] += 1
    if env_rank() == LAST and _calls[0] == 2:
        raise AttributeError("planted: a bug in the engine")
    return _planted(self, *args, **kwargs)


validation.Tally.first_call = first_call

if __name__ == "__main__":
    sizes = ["--sizes", "8,1K", "--iters", "10", "--warmup", "1", "--max-time", "0.05"]
    sys.exit(cli_main.main(["sweep", "-o", sys.argv[1], "--collectives", "allreduce", *sizes, "--progress", "none"]))

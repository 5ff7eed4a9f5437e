"""Run under mpiexec: `fabricprobe ARGS` as `python -m fabricprobe` runs it, and at exit each rank writes
the modules it imported, one per line, to OUT/modules.RANK (the launcher's rank, as fabricprobe reads it),
and to OUT/loaders.RANK each one's loader class beside its name.

    mpiexec -n 2 python tests/drivers/modules_at_exit.py OUT sweep --collectives allreduce --sizes 8
"""

from __future__ import annotations

import atexit
import runpy
import sys
from pathlib import Path

from fabricprobe.mpienv.launcher import env_rank

OUT = Path(sys.argv[1])


def _write() -> None:
    (OUT / f"modules.{env_rank()}").write_text("\n".join(sorted(sys.modules)) + "\n")
    loaders = {name: type(getattr(module, "__loader__", None)).__name__ for name, module in list(sys.modules.items())}
    (OUT / f"loaders.{env_rank()}").write_text("".join(f"{n} {c}\n" for n, c in sorted(loaders.items())))


atexit.register(_write)
sys.argv = ["fabricprobe", *sys.argv[2:]]
runpy.run_module("fabricprobe", run_name="__main__")

"""fabricprobe: measure an HPC fabric and tune MPI collectives."""

import os as _os

from fabricprobe.mpienv.launcher import launched_by_mpiexec as _launched_by_mpiexec
from fabricprobe.version import __version__  # noqa: F401  (fabricprobe.__version__)

# Under mpiexec every rank is a process: one BLAS thread each, as MPI+BLAS codes run, unless the
# user says otherwise. Left to itself OpenBLAS starts a thread per core in every rank, and ranks
# sharing cores thrash (the trainers' compute time grew 7-20x at 2 ranks on 2 cores). It must be
# set before numpy loads its BLAS, hence here.
if _launched_by_mpiexec():
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        _os.environ.setdefault(_var, "1")

"""docs/scale.md, "Start-up": what a rank would cost if its timing loops were compiled by llvmlite
alone (LLVM IR through MCJIT, no Numba), on top of the bare rank (numpy, mpi4py, MPI_Init).

    mpiexec -n 2 python benchmarks/llvmlite_floor.py          # private memory and modules added
    mpiexec -n 2 sh -c 'strace -f -e trace=%file,getdents64 -o st.$OMPI_COMM_WORLD_RANK \
        python benchmarks/llvmlite_floor.py'                     # metadata calls: grep -vc 'execve' st.1

Rank 1 reports the private memory (USS) and the modules that `llvmlite.binding`, its native target
and one compiled loop (a store loop, called through ctypes) added."""

from __future__ import annotations

import ctypes
import sys

import numpy as np
from mpi4py import MPI
from rank_memory import rollup  # this folder: a script's own is first on sys.path

LOOP = r"""
define i32 @fill(i64 %n, double* %out) {
entry:
  br label %body
body:
  %i = phi i64 [0, %entry], [%next, %body]
  %slot = getelementptr double, double* %out, i64 %i
  store double 1.0, double* %slot
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %body, label %done
done:
  ret i32 0
}"""


def uss_mib() -> float:
    return rollup()[1]


def main() -> int:
    MPI.COMM_WORLD.Barrier()
    before, modules = uss_mib(), len(sys.modules)
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine()
    module = llvm.parse_assembly(LOOP)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    fill = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)(engine.get_function_address("fill"))
    out = np.zeros(10)
    fill(out.size, out.ctypes.data)
    ok = bool((out == 1.0).all())
    if MPI.COMM_WORLD.rank == 1:
        added = len(sys.modules) - modules
        print(f"llvmlite, one loop: +{uss_mib() - before:.1f} MiB USS, +{added} modules, ran: {ok}")
    MPI.COMM_WORLD.Barrier()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

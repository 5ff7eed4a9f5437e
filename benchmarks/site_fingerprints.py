"""Which of a library's allreduce variants the verification can tell from the default: each forced
variant's fingerprint beside the default's at 64 KiB and 1 MiB, for N ranks. Run inside an allocation
(each probe an srun step) or anywhere the library's mpiexec works. Behind docs/site.md's "every
MPICH 4.0 variant leaves the same trace on 4 ranks of 2 hosts".
Usage: salloc -N 2 --ntasks-per-node 2 python benchmarks/site_fingerprints.py N"""

from __future__ import annotations

import sys

from fabricprobe.mpienv.launcher import launcher
from fabricprobe.mpienv.library import library_of_this_python
from fabricprobe.tuning.plan import libraries
from fabricprobe.tuning.verify.fingerprint import method_for, probe


def main(n: int) -> None:
    info = library_of_this_python()
    library = libraries.for_vendor(info.vendor)
    base = launcher(None, "", n, info.vendor)[:-2]
    method = method_for(info.vendor, "allreduce")
    print(f"{info.vendor} {info.version}, {n} ranks, {method} fingerprints, launcher {' '.join(base)}")
    for size in (65536, 1 << 20):
        default = probe(base, n, "allreduce", size, method, {}, scratch=".")
        print(f"{size} B  default: {default[:100]}")
        for v in library.variants("allreduce"):
            got = probe(base, n, "allreduce", size, method, v.env, scratch=".")
            print(f"  {v.name:28} {'same' if got == default else 'differs'}  {got[:80]}")


if __name__ == "__main__":
    main(int(sys.argv[1]))

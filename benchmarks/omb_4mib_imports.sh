#!/bin/bash
# OMB=OMB_MPI_DIR bash benchmarks/omb_4mib_imports.sh 24   (docs/performance.md, docs/data/launch_modes.md set 11)
# omb_4mib_host.sh found OMB's 4 MiB loop reads faster in a Python process that imported numpy, numba
# and fabricprobe.timing.loops than in a minimal one. Which import, and is it the thread numpy's OpenBLAS
# starts (one, on this 2-core machine)? Per repetition, in an order that rotates, Open MPI, n = 2, 4 MiB,
# 500 round trips after 10 warm-up, each its own launch, OMB's loop and buffers (omb_loop_host.py):
#   omb     osu_latency itself (-m 4194304:4194304 -i 500 -x 10), the reference
#   py      a minimal Python host (mpi4py, ctypes)
#   thread  the same with one idle Python thread started first
#   numpy   after importing numpy;  numpy1 the same with OPENBLAS_NUM_THREADS=1 (no OpenBLAS thread)
#   numba   after importing numba (which imports numpy)
#   all     after numpy, numba, fabricprobe.timing.loops;  all1 the same with OPENBLAS_NUM_THREADS=1
# Prints every repetition (µs, rank 0's mean half round trip), then per variant the median µs and OMB's
# time over the variant's, median (q1-q3) over the repetitions: above 1, the variant read faster.
K=${1:-10}; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}
M=${MPIEXEC:-.venv-ompi/bin/mpiexec}; S=4194304; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$(dirname "$M")/mpicc" -O2 -shared -fPIC -o "$W/libomb_loops.so" benchmarks/omb_loops.c || exit 1
. benchmarks/fp_sweep.sh
host() { $M -n 2 "${@:2}" $PY benchmarks/omb_loop_host.py "$W/libomb_loops.so" --bytes $S --iters 500 --first "$1"; }
ALL=numpy,numba,fabricprobe.timing.loops
t() { case $1 in
  omb) $M -n 2 $O/pt2pt/osu_latency -m $S:$S -i 500 -x 10 | omb_avg $S;;
  py) host "";;
  thread) host thread;;
  numpy) host numpy;;
  numpy1) host numpy -x OPENBLAS_NUM_THREADS=1;;
  numba) host numba;;
  all) host $ALL;;
  all1) host $ALL -x OPENBLAS_NUM_THREADS=1;;
esac; }
names=(omb py thread numpy numpy1 numba all all1); N=${#names[@]}
for rep in $(seq 1 "$K"); do
  line="rep $rep"
  for k in $(seq 0 $((N - 1))); do n=${names[$(( (k + rep) % N ))]}; line="$line $n=$(t $n)"; done
  echo "$line"
done | tee "$W/reps"
python3 - "$W/reps" "${names[@]}" <<'PY'
import re, statistics, sys
reps = [dict((k, float(v)) for k, v in re.findall(r"(\w+)=([\d.]+)", line)) for line in open(sys.argv[1])]
for name in sys.argv[2:]:
    ok = [r for r in reps if name in r and "omb" in r]
    q1, med, q3 = statistics.quantiles([r["omb"] / r[name] for r in ok], n=4)
    print(f"{name:8s} median {statistics.median(r[name] for r in ok):6.1f} us   OMB over it {med:.2f} ({q1:.2f}-{q3:.2f})  n={len(ok)}")
PY

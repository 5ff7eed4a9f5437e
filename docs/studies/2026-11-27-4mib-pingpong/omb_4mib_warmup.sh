#!/bin/bash
# OMB=OMB_MPI_DIR bash docs/studies/2026-11-27-4mib-pingpong/omb_4mib_warmup.sh 5   (docs/performance.md)
# Is fabricprobe's 4 MiB ping-pong faster than OMB's because it times later in a busy launch?
# Per round: OMB with 10 warm-up round trips, OMB with 3000 (about 2.5 s of them), fabricprobe.
K=${1:-5}; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}; M=${MPIEXEC:-.venv-ompi/bin/mpiexec}
. docs/studies/2026-11-27-4mib-pingpong/fp_sweep.sh; H=${TMPDIR:-/tmp}/fp4m.h5
fp() { fp_sweep "$H" --collectives latency --sizes 4194304 --iters 1000 --warmup 10; local v; v=$(fp_avg "$H" 4194304); echo "${v#*=}"; }
echo "round omb_x10 omb_x3000 fabricprobe"
for i in $(seq 1 $K); do
  a=$($M -n 2 $O/pt2pt/osu_latency -m 4194304:4194304 -i 1000 -x 10 | omb_avg 4194304)
  b=$($M -n 2 $O/pt2pt/osu_latency -m 4194304:4194304 -i 1000 -x 3000 | omb_avg 4194304)
  c=$(fp)
  echo "$i $a $b $c"
done

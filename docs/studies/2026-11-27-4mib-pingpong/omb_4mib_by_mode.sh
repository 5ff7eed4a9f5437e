#!/bin/bash
# OMB=OMB_MPI_DIR PINGPONG=./core_pingpong bash docs/studies/2026-11-27-4mib-pingpong/omb_4mib_by_mode.sh 6   (docs/performance.md)
# For K rounds: the core-to-core probe, then OMB's and fabricprobe's (barrier mode, loop mode) 4 MiB
# latency and allreduce, one launch each, then the probe again: does the 4 MiB gap follow the mode
# (the machine's, or fabricprobe's --mode)?
K=${1:-6}; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}; M=${MPIEXEC:-.venv-ompi/bin/mpiexec}
. docs/studies/2026-11-27-4mib-pingpong/fp_sweep.sh; H=${TMPDIR:-/tmp}/fp4m.h5
fp() { fp_sweep "$H" --collectives $1 --sizes 4194304 --dtypes float32 --ops sum --iters 1000 --warmup 10 --mode $2; local v; v=$(fp_avg "$H" 4194304); echo "${v#*=}"; }
echo "round probe_ns omb_lat fp_lat_barrier fp_lat_loop omb_allreduce fp_allreduce_barrier fp_allreduce_loop probe_ns"
for i in $(seq 1 $K); do
  a=$(${PINGPONG:-./core_pingpong} 300000)
  ol=$($M -n 2 $O/pt2pt/osu_latency -m 4194304:4194304 -i 1000 -x 10 | omb_avg 4194304)
  lb=$(fp latency barrier); ll=$(fp latency loop)
  oa=$($M -n 2 $O/collective/osu_allreduce -f -T mpi_float -m 4194304:4194304 -i 1000 -x 10 | omb_avg 4194304)
  ab=$(fp allreduce barrier); al=$(fp allreduce loop)
  z=$(${PINGPONG:-./core_pingpong} 300000)
  echo "$i $a $ol $lb $ll $oa $ab $al $z"
done

#!/bin/bash
# gcc -O2 -o core_pingpong docs/studies/2026-11-27-4mib-pingpong/core_pingpong.c; OMB=... MPIEXEC=.venv-ompi/bin/mpiexec bash docs/studies/2026-11-27-4mib-pingpong/modes_vs_pingpong.sh 10
# For each of K rounds: the no-MPI core-to-core round trip (ns), OMB's 1 MiB allreduce (one launch, µs),
# the round trip again. Does OMB's launch mode follow the machine's?
K=${1:-12}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=${MPIEXEC:-mpiexec}
O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}/collective/osu_allreduce
P=${PINGPONG:-./core_pingpong}
echo "round pingpong_before_ns omb_1MiB_us omb_8B_us pingpong_after_ns"
for i in $(seq 1 $K); do
  a=$($P 300000)
  b=$($M -n 2 $O -f -T mpi_float -m 1048576:1048576 -i 2000 -x 200 | awk '$1==1048576{print $2}')
  c=$($M -n 2 $O -f -T mpi_float -m 8:8 -i 20000 -x 2000 | awk '$1==8{print $2}')
  d=$($P 300000)
  echo "$i $a $b $c $d"
done

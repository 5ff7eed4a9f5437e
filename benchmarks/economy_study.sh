#!/usr/bin/env bash
# docs/tuning.md "Economical tuning": exhaustive tune-sweeps (the ground truth), budgeted ones, and
# tune-eval's regret with replayed budgets, per setup. Run phase by phase from the repository root;
# each phase names the environment it needs. Results go to $OUT (default /work/econ).
#   bash benchmarks/economy_study.sh ompi | mpich | lab | eval
set -euo pipefail
OUT=${OUT:-/work/econ}
OMPI=${OMPI:-/work/venv-ompi/bin}
MPICH=${MPICH:-/work/venv-mpich/bin}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
COMMON=(--max-time 0.2)
COLLS=allreduce,bcast,allgather,reduce_scatter,alltoall,reduce  # the dense ones (sparse has no library algorithm)
case "${1:-}" in
ompi)  # Open MPI 5.0 wheel, 8 ranks oversubscribed on 2 cores, every communicator size 2..8
    "$OMPI/fabricprobe" tune-sweep -n 8 --comm-sizes 2,3,4,5,6,7,8 "${COMMON[@]}" --collectives $COLLS \
        -o "$OUT/ompi-n8-exhaustive.h5"
    # live budgeted run, allreduce only (each round is one launch per algorithm, ~7 s each at n=8 here)
    "$OMPI/fabricprobe" tune-sweep -n 8 --comm-sizes 2,3,4,5,6,7,8 "${COMMON[@]}" --collectives allreduce \
        --budget 0.25 -o "$OUT/ompi-n8-budget0.25-allreduce.h5"
    ;;
mpich)  # MPICH 5.0 wheel, 2 ranks
    "$MPICH/fabricprobe" tune-sweep -n 2 --comm-sizes 2 "${COMMON[@]}" --collectives $COLLS \
        -o "$OUT/mpich-n2-exhaustive.h5"
    "$MPICH/fabricprobe" tune-sweep -n 2 --comm-sizes 2 "${COMMON[@]}" --collectives $COLLS --budget 0.25 \
        -o "$OUT/mpich-n2-budget0.25.h5"
    ;;
lab)  # the fabric lab: 2 emulated hosts × 2 ranks, 1 Gbit/s links, Open MPI (root)
    "$OMPI/fabricprobe" lab up --name econ --hosts 2 --ranks-per-host 2 --rate 1gbit
    trap '"$OMPI/fabricprobe" lab down --name econ' EXIT
    "$OMPI/fabricprobe" lab run --name econ -- tune-sweep -n 4 --comm-sizes 2,4 "${COMMON[@]}" --collectives $COLLS \
        -o "$OUT/lab-2x2-exhaustive.h5"
    "$OMPI/fabricprobe" lab run --name econ -- tune-sweep -n 4 --comm-sizes 2,4 "${COMMON[@]}" --collectives $COLLS \
        --budget 0.25 -o "$OUT/lab-2x2-budget0.25.h5"
    ;;
eval)  # regret tables (docs/data/economy_*.json) and the plot
    R=0.05,0.1,0.25,0.5,1
    "$OMPI/fabricprobe" tune-eval "$OUT/ompi-n8-exhaustive.h5" --replay $R --json docs/data/economy_openmpi-n8.json
    "$OMPI/fabricprobe" tune-eval "$OUT/ompi-n8-exhaustive.h5" "$OUT/ompi-n8-budget0.25-allreduce.h5" \
        --collectives allreduce --replay $R --json docs/data/economy_openmpi-n8-allreduce.json
    "$MPICH/fabricprobe" tune-eval "$OUT/mpich-n2-exhaustive.h5" "$OUT/mpich-n2-budget0.25.h5" \
        --replay $R --json docs/data/economy_mpich-n2.json
    "$OMPI/fabricprobe" tune-eval "$OUT/lab-2x2-exhaustive.h5" "$OUT/lab-2x2-budget0.25.h5" \
        --replay $R --json docs/data/economy_lab-2x2-1gbit.json
    "$OMPI/python" benchmarks/economy_plot.py docs/data/economy_*.json --table
    "$OMPI/python" benchmarks/economy_plot.py docs/data/economy_*.json --plot docs/img/economy_regret.png
    ;;
*) echo "usage: $0 ompi|mpich|lab|eval" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# docs/tuning.md "Tuning in one launch": every figure of that section, phase by phase, from the
# repository root (the machine otherwise idle). $OUT keeps the files; the tables are printed by `table`.
#   bash benchmarks/onelaunch_study.sh wall | wall4 | budget | lab | table
set -euo pipefail
OUT=${OUT:-/work/study}
OMPI=${OMPI:-.venv-ompi/bin}
MPICH=${MPICH:-.venv-mpich/bin}
REPS=${REPS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ECON=(--max-time 0.2 --collectives allreduce,bcast,allgather,reduce_scatter,alltoall,reduce)
case "${1:-}" in
wall)  # exhaustive, default collectives and grid: --switch mpit against launch, interleaved
    "$MPICH/python" benchmarks/onelaunch_study.py "$OUT" --name mpich-n2 -n 2 --reps "$REPS"
    "$OMPI/python" benchmarks/onelaunch_study.py "$OUT" --name ompi-n4 -n 4 --reps "$REPS"
    "$OMPI/python" benchmarks/onelaunch_study.py "$OUT" --name ompi-n8 -n 8 --reps "$REPS"
    ;;
wall4)  # the same with 4 sizes
    S=(--sizes 8,1K,64K,1M)
    "$MPICH/python" benchmarks/onelaunch_study.py "$OUT" --name mpich-n2-4sizes -n 2 --reps "$REPS" -- "${S[@]}"
    "$OMPI/python" benchmarks/onelaunch_study.py "$OUT" --name ompi-n4-4sizes -n 4 --reps "$REPS" -- "${S[@]}"
    "$OMPI/python" benchmarks/onelaunch_study.py "$OUT" --name ompi-n8-4sizes -n 8 --reps "$REPS" -- "${S[@]}"
    ;;
budget)  # exhaustive one launch against live --budget 0.25, the economy study's grids
    "$MPICH/python" benchmarks/budget_study.py "$OUT" --name mpich-n2 -n 2 --reps 2 -- --comm-sizes 2 "${ECON[@]}"
    "$OMPI/python" benchmarks/budget_study.py "$OUT" --name ompi-n8 -n 8 --reps 2 -- --comm-sizes 2,3,4,5,6,7,8 "${ECON[@]}"
    ;;
lab)  # the fabric lab: 2 emulated hosts × 2 ranks at 1 Gbit/s (root)
    "$OMPI/fabricprobe" lab up --name olab --hosts 2 --ranks-per-host 2 --rate 1gbit
    trap '"$OMPI/fabricprobe" lab down --name olab' EXIT
    "$OMPI/python" benchmarks/budget_study.py "$OUT" --name lab-2x2 -n 4 --reps 2 --lab olab -- --comm-sizes 2,4 "${ECON[@]}"
    ;;
table)
    for f in "$OUT"/*-n?.jsonl "$OUT"/*-4sizes.jsonl; do
        "$OMPI/python" benchmarks/onelaunch_agreement.py "$f" --json "docs/data/onelaunch_$(basename "$f" .jsonl).json"
    done
    "$OMPI/python" benchmarks/budget_table.py "$OUT"/*-budget.jsonl
    ;;
*) echo "usage: $0 wall|wall4|budget|lab|table" >&2; exit 2 ;;
esac

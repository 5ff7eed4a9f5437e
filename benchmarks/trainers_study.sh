#!/usr/bin/env bash
# The trainer runs behind docs/trainers.md (Open MPI environment; 2 cores here, so n > 2 is
# oversubscribed).  Usage: benchmarks/trainers_study.sh OUTDIR      Results: OUTDIR/trainers.h5
# Table: python benchmarks/trainers_table.py OUTDIR/trainers.h5.  The tuned collective in training is
# benchmarks/tuned_training_study.py's (it tunes first: --allreduce tuned needs a selection file).
set -euo pipefail
out=${1:-trainers-study}; mkdir -p "$out"; f="$out/trainers.h5"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { local n=$1; shift; echo "== n=$n $*"; mpiexec --oversubscribe -n "$n" fabricprobe train "$@" -o "$f" --progress none; }
# 1. accuracy of every trainer on the digits (default model 64-128-64-10, 30 epochs)
run 1 dp_sgd --allreduce library
run 2 dp_sgd --allreduce ring
run 2 sparse_dp --density 0.01
run 2 sparse_dp --density 0.01 --no-error-feedback
run 3 easgd --mode sync
run 3 easgd --mode fcfs
run 3 easgd --mode round_robin
run 2 hybrid --stages 2 --allreduce library
run 4 hybrid --stages 2 --allreduce library
run 2 dp_sgd --dataset mnist5k --epochs 20 --allreduce library
# 2. easgd: communication fraction vs tau on a larger model (MNIST-5k, 784-512-512-10, 2.6 MB)
for tau in 1 4 16 64; do
  run 2 easgd --mode sync --tau "$tau" --dataset mnist5k --hidden 512,512 --epochs 5
  run 3 easgd --mode fcfs --tau "$tau" --dataset mnist5k --hidden 512,512 --epochs 5
done
# 3. dp_sgd: compute / communication split for two collective choices, same model
for alg in library ring rabenseifner; do
  run 2 dp_sgd --dataset mnist5k --hidden 512,512 --epochs 5 --allreduce "$alg"
done
run 2 dp_sgd --dataset mnist5k --hidden 512,512 --epochs 5 --allreduce ring --bucket-bytes 262144
# 4. weak scaling: 64 samples per rank and step, synthetic data growing with n
for n in 1 2; do
  run "$n" dp_sgd --dataset synthetic --samples $((4000 * n)) --batch $((64 * n)) --hidden 512,512 --epochs 5 \
    --allreduce library
done

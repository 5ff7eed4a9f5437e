#!/usr/bin/env bash
# % of bound of the library's allreduce and of each hand-written one (docs/methodology.md, "How far from
# the bound"), on one node and in the fabric lab:
#   bash benchmarks/bound_study.sh OUT_DIR [RANKS]
# one node: `sweep -n RANKS` (default 4) of allreduce, every algorithm, with latency and bw (intra) in
# the same run; lab: 2 hosts x 2 ranks at 1 Gbit/s, the same sweep through the lab's mpiexec (latency
# and bw intra and inter). Writes OUT_DIR/{node,lab}.h5 and OUT_DIR/summary.md (% of bound per size
# and algorithm, the bound's parameters, the rows furthest from their bound: benchmarks/bound_table.py,
# which computes it again from the two files). Takes the lab down.
set -euo pipefail
out=${1:?OUT_DIR}; n=${2:-4}; name=fpbound
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"; rm -f "$out"/node.h5* "$out"/lab.h5*
sweep=(sweep --collectives allreduce,latency,bw --algorithms all -b 8 -e 4M -f 4 --max-time 0.5 --quiet --progress none)
mpiexec=$(dirname "$(command -v python)")/mpiexec
"$mpiexec" --oversubscribe -n "$n" python -m fabricprobe "${sweep[@]}" -o "$out/node.h5"
python -m fabricprobe lab down --name "$name" >/dev/null 2>&1 || true
python -m fabricprobe lab up --name "$name" --subnet 10.214.81.0/24 --hosts 2 --ranks-per-host 2 --rate 1gbit
trap 'python -m fabricprobe lab down --name "$name" >/dev/null 2>&1 || true' EXIT
"/run/fabricprobe-lab/$name/mpiexec" -n 4 python -m fabricprobe "${sweep[@]}" -o "$out/lab.h5"
python benchmarks/bound_table.py "$out" >"$out/summary.md"
cat "$out/summary.md"

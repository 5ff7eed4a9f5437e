#!/bin/bash
# OMB=OMB_MPI_DIR bash benchmarks/omb_4mib_first.sh K NAME=FIRST ...   (docs/data/launch_modes.md sets 11, 12)
# OMB's 4 MiB loop and buffers from a Python process (omb_loop_host.py) that first does FIRST (its
# --first list: modules to import, spin:S, sleep:S, thread, env:NAME=VALUE; empty for a minimal host),
# beside OMB's binary (osu_latency -m 4194304:4194304 -i 500 -x 10, the variant "omb"). K repetitions,
# in each every variant its own launch in an order that rotates: Open MPI, n = 2, 4 MiB, 500 round trips
# after 10 warm-up. E.g. set 12:
#   bash benchmarks/omb_4mib_first.sh 24 py= spin05=spin:0.5 spin15=spin:1.5 spin3=spin:3 \
#        sleep15=sleep:1.5 all=numpy,numba,fabricprobe.timing.loops all_sleep=numpy,numba,fabricprobe.timing.loops,sleep:1.5
# Prints every repetition (µs, rank 0's mean half round trip); then per variant OMB's time over it,
# median (q1-q3), and each variant against the first one named, paired within repetitions
# (benchmarks/paired_ratios.py): above 1, the variant read faster.
K=${1:?K NAME=FIRST ...}; shift; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}
M=${MPIEXEC:-.venv-ompi/bin/mpiexec}; S=4194304; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$(dirname "$M")/mpicc" -O2 -shared -fPIC -o "$W/libomb_loops.so" benchmarks/omb_loops.c || exit 1
. benchmarks/fp_sweep.sh
declare -A first; names=(omb)
for arm in "$@"; do names+=("${arm%%=*}"); first[${arm%%=*}]=${arm#*=}; done; N=${#names[@]}
t() { if [ "$1" = omb ]; then $M -n 2 $O/pt2pt/osu_latency -m $S:$S -i 500 -x 10 | omb_avg $S
  else $M -n 2 $PY benchmarks/omb_loop_host.py "$W/libomb_loops.so" --bytes $S --iters 500 --first "${first[$1]}"; fi; }
for rep in $(seq 1 "$K"); do
  line="rep $rep"
  for k in $(seq 0 $((N - 1))); do n=${names[$(( (k + rep) % N ))]}; line="$line $n=$(t $n)"; done
  echo "$line"
done | tee "$W/reps"
python3 benchmarks/paired_ratios.py "$W/reps" omb
python3 benchmarks/paired_ratios.py "$W/reps" "${names[1]}"

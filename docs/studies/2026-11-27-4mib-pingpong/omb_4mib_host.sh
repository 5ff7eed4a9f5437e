#!/bin/bash
# OMB=OMB_MPI_DIR bash docs/studies/2026-11-27-4mib-pingpong/omb_4mib_host.sh 24   (docs/performance.md, docs/data/launch_modes.md sets 9, 9a, 9b, 10)
# Inside one launch OMB's 4 MiB loop and fabricprobe's agree (omb_loop_same_launch.py); across launches
# fabricprobe's read faster. Is it the process around the loop? Per repetition, in an order that rotates,
# Open MPI, n = 2, 4 MiB, 500 round trips after 10 warm-up, each its own launch:
#   omb     osu_latency (-m 4194304:4194304 -i 500 -x 10)
#   ombspin the same, MPI_Init returning after 1.5 s busy (LD_PRELOAD of init_delay.c, FP_INIT_SPIN)
#   ombsleep the same, MPI_Init returning after 1.5 s asleep (FP_INIT_DELAY)
#   c       OMB's loop and buffers in a plain C program (omb_loop_main.c + omb_loops.c)
#   py      the same loop and buffers from a minimal Python process (omb_loop_host.py: mpi4py, ctypes)
#   pyimp   the same after importing numpy, numba and fabricprobe.timing.loops (what a fabricprobe rank loads)
#   pyspin  the same after 1.5 s of busy Python; pysleep after 1.5 s asleep
#   fp      fabricprobe's latency sweep at 4 MiB (fp_sweep.sh), its osu_avg_s
# Prints every repetition (µs, rank 0's mean half round trip), then per variant the median µs and OMB's
# time over the variant's, median (q1-q3) over the repetitions, with the sign test of
# benchmarks/paired_ratios.py: above 1, the variant read faster.
K=${1:-10}; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}
M=${MPIEXEC:-.venv-ompi/bin/mpiexec}; S=4194304; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
CC="$(dirname "$M")/mpicc"
$CC -O2 -shared -fPIC -o "$W/libomb_loops.so" docs/studies/2026-11-27-4mib-pingpong/omb_loops.c || exit 1
$CC -O2 -o "$W/omb_loop_main" docs/studies/2026-11-27-4mib-pingpong/omb_loop_main.c docs/studies/2026-11-27-4mib-pingpong/omb_loops.c || exit 1
$CC -O2 -shared -fPIC -o "$W/libinit_delay.so" docs/studies/2026-11-27-4mib-pingpong/init_delay.c || exit 1
. docs/studies/2026-11-27-4mib-pingpong/fp_sweep.sh
host() { $M -n 2 $PY docs/studies/2026-11-27-4mib-pingpong/omb_loop_host.py "$W/libomb_loops.so" --bytes $S --iters 500 "$@"; }
t() { case $1 in
  omb) omb;;
  ombspin) omb -x LD_PRELOAD="$W/libinit_delay.so" -x FP_INIT_SPIN=1.5;;
  ombsleep) omb -x LD_PRELOAD="$W/libinit_delay.so" -x FP_INIT_DELAY=1.5;;
  c) $M -n 2 "$W/omb_loop_main" $S 500;;
  py) host;;
  pyimp) host --first numpy,numba,fabricprobe.timing.loops;;
  pyspin) host --first spin;;
  pysleep) host --first sleep;;
  fp) fp_sweep "$W/fp.h5" --collectives latency --sizes $S --iters 500 --warmup 10
      fp_avg "$W/fp.h5" $S | sed 's/latency=//';;
esac; }
names=(omb ombspin ombsleep c py pyimp pyspin pysleep fp); N=${#names[@]}
for rep in $(seq 1 "$K"); do
  line="rep $rep"
  for k in $(seq 0 $((N - 1))); do n=${names[$(( (k + rep) % N ))]}; line="$line $n=$(t $n)"; done
  echo "$line"
done | tee "$W/reps"
python3 benchmarks/paired_ratios.py "$W/reps" omb

#!/bin/bash
# OMB=OMB_MPI_DIR bash docs/studies/2026-11-27-4mib-pingpong/omb_4mib_first.sh K NAME=FIRST ...   (docs/data/launch_modes.md sets 12, 14-20)
# OMB's 4 MiB loop and buffers from a Python process (omb_loop_host.py) that first does FIRST (its --first
# list: modules to import, spin:S, sleep:S, thread, env:NAME=VALUE, level:LEVEL, touch:MB, dlopen:PATH;
# empty for a minimal host); or, where FIRST is fp:ARG,ARG..., fabricprobe's own 4 MiB latency sweep
# (fp_sweep.sh) given those extra arguments (fp: alone for the sweep as it is, fp:--no-validate without
# its validation); or, where it is omb:NAME=VALUE,..., OMB's binary with docs/studies/2026-11-27-4mib-pingpong/init_delay.c preloaded
# and those variables set (omb:FP_INIT_TOUCH_MB=256 writes and keeps 256 MiB after MPI_Init); each beside
# OMB's binary itself (osu_latency -m 4194304:4194304 -i 500 -x 10, the variant "omb"). K repetitions, in
# each every variant its own launch in an order that rotates: Open MPI, n = 2, 4 MiB, 500 round trips
# after 10 warm-up. E.g. set 12:
#   bash docs/studies/2026-11-27-4mib-pingpong/omb_4mib_first.sh 24 py= spin05=spin:0.5 spin15=spin:1.5 spin3=spin:3 \
#        sleep15=sleep:1.5 all=numpy,numba,fabricprobe.timing.loops all_sleep=numpy,numba,fabricprobe.timing.loops,sleep:1.5
# Prints every repetition (µs, rank 0's mean half round trip); then per variant OMB's time over it,
# median (q1-q3), and each variant against the first one named, paired within repetitions
# (benchmarks/paired_ratios.py): above 1, the variant read faster.
# FRAMES=FILE: every launch but fabricprobe's also preloads docs/studies/2026-11-27-4mib-pingpong/buffer_frames.c, whose ranks append
# how physically contiguous their message buffers were to FILE, and docs/studies/2026-11-27-4mib-pingpong/frames_vs_time.py sets
# each launch's time beside them (docs/data/launch_modes.md sets 19, 20; docs/data/buffer_frames.md).
K=${1:?K NAME=FIRST ...}; shift; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}
M=${MPIEXEC:-.venv-ompi/bin/mpiexec}; S=4194304; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$(dirname "$M")/mpicc" -O2 -shared -fPIC -o "$W/libomb_loops.so" docs/studies/2026-11-27-4mib-pingpong/omb_loops.c || exit 1
"$(dirname "$M")/mpicc" -O2 -shared -fPIC -o "$W/libinit_delay.so" docs/studies/2026-11-27-4mib-pingpong/init_delay.c -ldl || exit 1
"$(dirname "$M")/mpicc" -O2 -shared -fPIC -o "$W/libbuffer_frames.so" docs/studies/2026-11-27-4mib-pingpong/buffer_frames.c || exit 1
. docs/studies/2026-11-27-4mib-pingpong/fp_sweep.sh
declare -A first; names=(omb)
for arm in "$@"; do names+=("${arm%%=*}"); first[${arm%%=*}]=${arm#*=}; done; N=${#names[@]}
fx() { [ -n "$FRAMES" ] && echo "-x FP_FRAMES_LOG=$FRAMES -x FP_ARM=$rep:$1"; }  # the frames log, this launch's name
t() { if [ "$1" = omb ]; then omb ${FRAMES:+-x LD_PRELOAD=$W/libbuffer_frames.so} $(fx omb)
  elif [[ ${first[$1]} == omb:* ]]; then a=${first[$1]#omb:}
    omb -x LD_PRELOAD="$W/libinit_delay.so${FRAMES:+:$W/libbuffer_frames.so}" $(fx "$1") ${a:+-x ${a//,/ -x }}
  elif [[ ${first[$1]} == fp:* ]]; then a=${first[$1]#fp:}
    fp_sweep "$W/fp.h5" --collectives latency --sizes $S --iters 500 --warmup 10 ${a//,/ }
    fp_avg "$W/fp.h5" $S | sed 's/latency=//'
  else $M -n 2 ${FRAMES:+-x LD_PRELOAD=$W/libbuffer_frames.so} $(fx "$1") $PY docs/studies/2026-11-27-4mib-pingpong/omb_loop_host.py "$W/libomb_loops.so" --bytes $S --iters 500 --first "${first[$1]}"; fi; }
for rep in $(seq 1 "$K"); do
  line="rep $rep"
  for k in $(seq 0 $((N - 1))); do n=${names[$(( (k + rep) % N ))]}; line="$line $n=$(t $n)"; done
  echo "$line"
done | tee "$W/reps"
python3 benchmarks/paired_ratios.py "$W/reps" omb
python3 benchmarks/paired_ratios.py "$W/reps" "${names[1]}"
[ -z "$FRAMES" ] || python3 docs/studies/2026-11-27-4mib-pingpong/frames_vs_time.py "$W/reps" "$FRAMES"

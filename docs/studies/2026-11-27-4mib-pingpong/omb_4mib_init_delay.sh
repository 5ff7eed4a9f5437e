#!/bin/bash
# OMB=OMB_MPI_DIR bash docs/studies/2026-11-27-4mib-pingpong/omb_4mib_init_delay.sh 16   (docs/performance.md, docs/data/launch_modes.md set 8)
# Does OMB's 4 MiB read slower than fabricprobe's because OMB times it sooner after MPI_Init, or after less
# warm-up? Per repetition, in an order that rotates: osu_latency and osu_allreduce (-f -T mpi_float) over
# 1 KiB..4 MiB as omb_imb_side_by_side.py runs them (lat, ar); the same with MPI_Init returning 3 s late
# (latd, ard: LD_PRELOAD of init_delay.c); osu_latency with 2000 warm-up round trips (latx); fabricprobe's
# side-by-side sweep (fplat, fpar). µs at 4 MiB: OMB's Avg and fabricprobe's osu_avg_s.
K=${1:-10}; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}
M=${MPIEXEC:-.venv-ompi/bin/mpiexec}; S=4194304; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$(dirname "$M")/mpicc" -O2 -shared -fPIC -o "$W/libinit_delay.so" docs/studies/2026-11-27-4mib-pingpong/init_delay.c || exit 1
. docs/studies/2026-11-27-4mib-pingpong/fp_sweep.sh
D="-x LD_PRELOAD=$W/libinit_delay.so -x FP_INIT_DELAY=3"
t() { case $1 in
  lat) echo "lat=$($M -n 2 $O/pt2pt/osu_latency -m 1024:$S -i 500 -x 10 | omb_avg $S)";;
  latd) echo "latd=$($M -n 2 $D $O/pt2pt/osu_latency -m 1024:$S -i 500 -x 10 | omb_avg $S)";;
  latx) echo "latx=$($M -n 2 $O/pt2pt/osu_latency -m 1024:$S -i 500 -x 2000 | omb_avg $S)";;
  ar) echo "ar=$($M -n 2 $O/collective/osu_allreduce -f -T mpi_float -m 1024:$S -i 500 -x 10 | omb_avg $S)";;
  ard) echo "ard=$($M -n 2 $D $O/collective/osu_allreduce -f -T mpi_float -m 1024:$S -i 500 -x 10 | omb_avg $S)";;
  fp) fp_sweep "$W/fp.h5" --collectives allreduce,latency --sizes 1024,65536,1048576,$S --dtypes float32 \
        --ops sum --iters 500 --warmup 10
      fp_avg "$W/fp.h5" $S | sed -e 's/latency=/fplat=/' -e 's/allreduce=/fpar=/';;
esac; }
names=(lat latd latx ar ard fp)
for rep in $(seq 1 "$K"); do
  line="rep $rep"
  for k in 0 1 2 3 4 5; do line="$line $(t ${names[$(( (k + rep) % 6 ))]})"; done
  echo "$line"
done

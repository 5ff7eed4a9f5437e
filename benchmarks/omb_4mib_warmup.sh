#!/bin/bash
# OMB=OMB_MPI_DIR bash benchmarks/omb_4mib_warmup.sh 5   (docs/performance.md)
# Is fabricprobe's 4 MiB ping-pong faster than OMB's because it times later in a busy launch?
# Per round: OMB with 10 warm-up round trips, OMB with 3000 (about 2.5 s of them), fabricprobe.
K=${1:-5}; PY=${PYTHON:-.venv-ompi/bin/python}; cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; O=${OMB:?OMB=.../libexec/osu-micro-benchmarks/mpi}; M=${MPIEXEC:-.venv-ompi/bin/mpiexec}
fp() { rm -f "${TMPDIR:-/tmp}/fp4m.h5"; $M -n 2 $PY -m fabricprobe sweep -o "${TMPDIR:-/tmp}/fp4m.h5" --collectives latency --sizes 4194304 --timer native --iters 1000 --warmup 10 --ci-target 0 --pairs intra --progress none --quiet >/dev/null 2>&1; $PY -m fabricprobe report "${TMPDIR:-/tmp}/fp4m.h5" --format json | python3 -c "import json,sys; d=json.load(sys.stdin); print(' '.join(f\"{p['osu_avg_s']*1e6:.0f}\" for p in d['runs'][0]['points'] if p['bytes']==4194304 and p['status']=='ok'))"; }
echo "round omb_x10 omb_x3000 fabricprobe"
for i in $(seq 1 $K); do
  a=$($M -n 2 $O/pt2pt/osu_latency -m 4194304:4194304 -i 1000 -x 10 | awk '$1==4194304{print $2}')
  b=$($M -n 2 $O/pt2pt/osu_latency -m 4194304:4194304 -i 1000 -x 3000 | awk '$1==4194304{print $2}')
  c=$(fp)
  echo "$i $a $b $c"
done

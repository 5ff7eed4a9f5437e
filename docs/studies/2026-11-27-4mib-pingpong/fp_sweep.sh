# Sourced by the OMB-beside-fabricprobe shell studies (omb_4mib_by_mode.sh, omb_4mib_warmup.sh,
# omb_4mib_init_delay.sh, omb_4mib_host.sh), so the sweep they time and the statistics they read, fabricprobe's
# and OMB's, are written once.
# Needs M (mpiexec) and PY (python) set; omb also O (OMB's libexec/osu-micro-benchmarks/mpi) and S (bytes).

# fp_sweep H5 ARG...: one 2-rank fabricprobe sweep into H5 (replaced), native timer, fixed iteration
# count (--ci-target 0), intra-node pairs, quiet; ARG... adds collectives, sizes, iterations, mode.
fp_sweep() {
  local out=$1; shift
  rm -f "$out"
  $M -n 2 $PY -m fabricprobe sweep -o "$out" --timer native --ci-target 0 --pairs intra --progress none --quiet \
    "$@" >/dev/null 2>&1
}

# fp_avg H5 BYTES: "collective=µs" for each ok point of that size, fabricprobe's osu_avg_s (OMB's Avg).
fp_avg() {
  $PY -m fabricprobe report "$1" --format json | python3 -c "
import json, sys
points = json.load(sys.stdin)['runs'][0]['points']
print(' '.join(f\"{p['collective']}={p['osu_avg_s'] * 1e6:.1f}\" for p in points if p['bytes'] == $2 and p['status'] == 'ok'))"
}

# omb_avg BYTES: OMB's figure for that size (its second column: Avg latency, or MB/s) from OMB's output on stdin.
omb_avg() { awk -v s="$1" '$1==s{print $2}'; }

# omb [-x NAME=VALUE ...]: OMB's osu_latency at S bytes as the 4 MiB studies run it (500 round trips after 10
# warm-up), its Avg in µs; the arguments go to mpiexec (preloaded shims and their variables).
omb() { $M -n 2 "$@" $O/pt2pt/osu_latency -m $S:$S -i 500 -x 10 | omb_avg $S; }

#!/usr/bin/env bash
# Tune what runs on several nodes, in the fabric lab (docs/tuning.md, "On several nodes"):
#   bash benchmarks/han_tuning_study.sh HOSTS RANKS_PER_HOST OUT_DIR [COLLECTIVES [SIZES]]
# brings up a lab of HOSTS x RANKS_PER_HOST (the MPI of the `python` on PATH: the Open MPI or MPICH
# wheel, or a site venv's Debian Open MPI 4.1), runs
#   fabricprobe tune-sweep -n N (one launch; han's variants where han serves the job, MPICH's CH4
#                               compositions where the communicator has node leaders)
#   fabricprobe tune --verify  (every rule proven by fingerprint, then default against tuned,
#                               alternating, 6 repetitions: the speedup's 95% interval)
# and writes OUT_DIR/t.h5, OUT_DIR/tuning/ (the files, tuning.json), OUT_DIR/{sweep,tune}.log and
# OUT_DIR/summary.md (the rules, the verification and the before/after table). Takes the lab down.
set -euo pipefail
hosts=${1:?HOSTS}; per=${2:?RANKS_PER_HOST}; out=${3:?OUT_DIR}; colls=${4:-allreduce,bcast,reduce,allgather}
sizes=${5:+--sizes $5}
name=fphan; n=$((hosts * per))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"; rm -rf "$out/t.h5" "$out/t.h5.journal" "$out/tuning"
python -m fabricprobe lab down --name "$name" >/dev/null 2>&1 || true
python -m fabricprobe lab up --name "$name" --subnet 10.214.79.0/24 --hosts "$hosts" --ranks-per-host "$per"
trap 'python -m fabricprobe lab down --name "$name" >/dev/null 2>&1 || true' EXIT
wrapper=/run/fabricprobe-lab/$name/mpiexec
start=$(date +%s)
python -m fabricprobe tune-sweep -n "$n" --mpiexec "$wrapper" -o "$out/t.h5" --collectives "$colls" \
  --comm-sizes "$n" --algorithms none $sizes >"$out/sweep.log" 2>&1
mid=$(date +%s)
# TUNE_ARGS: more options for tune, e.g. TUNE_ARGS="--reps 12" (more before/after repetitions)
python -m fabricprobe tune "$out/t.h5" -o "$out/tuning" --verify ${TUNE_ARGS:-} --mpiexec "$wrapper" >"$out/tune.log" 2>&1 || true
end=$(date +%s)
python - "$out" "$hosts" "$per" "$((mid - start))" "$((end - mid))" <<'EOF'
import json, sys
out, hosts, per, sweep_s, tune_s = sys.argv[1:]
doc = json.load(open(f"{out}/tuning/tuning.json"))
lines = [f"# {hosts} hosts x {per} ranks: tune-sweep {sweep_s} s, tune --verify {tune_s} s", ""]
lines += ["| collective | comm size | message sizes | winner | level | verified at |", "|---|---|---|---|---|---|"]
checks = doc["verification"]["checks"]
for coll, per_size in doc["rules"]["rules"].items():
    for n, ranges in per_size.items():
        for r in ranges:
            hi = "inf" if r["hi"] is None else r["hi"]
            mine = [c for c in checks if c["collective"] == coll and str(c["comm_size"]) == n and r["lo"] <= c["size"] and (r["hi"] is None or c["size"] < r["hi"])]
            seen = ", ".join(f"{c['size']} B {c['status']}" for c in mine) or "-"
            level = next((c["level"] for c in mine if c.get("level")), "")
            lines.append(f"| {coll} | {n} | [{r['lo']}, {hi}) | {r['winner']} | {level} | {seen} |")
lines += ["", f"served elsewhere: {json.dumps(doc['rules'].get('served_elsewhere', {}))}"]
lines += [f"verification: {json.dumps(doc['verification']['summary'])}"]
lines += [f"given back to the default: {json.dumps(doc['verification']['dropped_rules'])}", ""]
lines += ["| collective | comm size | size | reps | default µs | tuned µs | speedup | 95% CI | verdict |", "|---|---|---|---|---|---|---|---|---|"]
for row in doc.get("before_after", []):
    ci = "-" if row["ci_low"] is None else f"{row['ci_low']:.2f}-{row['ci_high']:.2f}"
    lines.append(
        f"| {row['collective']} | {row['comm_size']} | {row['size']} | {row['reps']} | {row['baseline_s'] * 1e6:.1f} | "
        f"{row['tuned_s'] * 1e6:.1f} | {row['speedup']:.2f} | {ci} | {row['verdict']} |"
    )
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF

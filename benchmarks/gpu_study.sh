#!/usr/bin/env bash
# The GPU run behind docs/gpu.md, for a machine with a GPU (the device tool's H100/H200 image).
# Usage: benchmarks/gpu_study.sh OUTDIR [PHASE ...]     PHASE: env tests kernels n1 n2 n4 (default: all)
# A lent machine gives a session 15 device-minutes in all, start included, so every phase is cut off
# at its own cap (seconds: PHASE_CAPS below, or CAP_<phase>=N); the journaled store keeps every point
# measured before a cut, and the report reads what is there. Results accumulate in OUTDIR/gpu.h5.
# MPS=1 runs the phases under NVIDIA's Multi-Process Service: without it, ranks sharing one GPU
# time-slice it, and a staged 8 B allreduce at n = 2 took 304-309 µs on the lent H100 against 29-30 µs
# under MPS (docs/gpu.md).
# MPIEXEC=/path/to/mpiexec picks the launcher, PYTHON=/path/to/python the interpreter. For Intel MPI
# (impi-rt) as the "on" candidate, also export I_MPI_OFFLOAD=1 I_MPI_OFFLOAD_MODE=cuda: Intel's own
# switch, which fabricprobe records and checks.
set -uo pipefail
out=${1:-gpu-study}; shift || true
phases=${*:-env kernels tests n1 n2 n4}
mpiexec=${MPIEXEC:-mpiexec}; py=${PYTHON:-python}; mkdir -p "$out"; f="$out/gpu.h5"
declare -A cap=([env]=${CAP_env:-40} [kernels]=${CAP_kernels:-80} [tests]=${CAP_tests:-90}
                [n1]=${CAP_n1:-100} [n2]=${CAP_n2:-80} [n4]=${CAP_n4:-70})
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
over=""; "$mpiexec" --version 2>&1 | grep -q "Open MPI" && over="--oversubscribe"
sweep() {  # n, then sweep options; SIGTERM at the phase's cap, SIGKILL 15 s later
  local n=$1; shift
  timeout -k 15 "${cap[$phase]}" "$mpiexec" $over -n "$n" "$py" -m fabricprobe sweep -o "$f" --progress plain \
    --quiet "$@" 2>&1 | tail -5
}
if [ "${MPS:-0}" = 1 ]; then  # the daemon's pipe and log in OUTDIR-free temporary folders; stopped at exit
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/fabricprobe-mps}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/fabricprobe-mps-log}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "MPS=1 but nvidia-cuda-mps-control -d failed"; exit 2; }
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
  echo "== MPS daemon started"
fi
for phase in $phases; do
  echo "== $phase $(date -u +%FT%TZ) (cap ${cap[$phase]:-?} s)"
  case $phase in
    env)  # what is installed: GPU, driver, CUDA, MPI, mpi4py, CuPy, NCCL, and the MPI's CUDA-aware answer
      { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
        "$mpiexec" --version 2>&1 | head -3
        "$py" - <<'PY'
import importlib
for name in ("mpi4py", "numpy", "numba", "numba_cuda", "cupy", "h5py", "rich"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # noqa: BLE001
        print(name, "missing:", exc)
try:
    from cupy.cuda import nccl
    print("nccl available:", getattr(nccl, "available", False), nccl.get_version() if nccl.available else "")
except Exception as exc:  # noqa: BLE001
    print("nccl missing:", exc)
PY
        timeout "${cap[env]}" "$mpiexec" -n 1 "$py" -m fabricprobe info --json || true
      } > "$out/env.txt" 2>&1; cat "$out/env.txt" ;;
    tests)  # the tests that need a real GPU (the simulator ones run in CI on every commit)
      timeout -k 15 "${cap[tests]}" "$py" -m pytest -q -rs -p no:cacheprovider -k on_a_gpu \
        tests/test_gpu_kernels.py tests/test_gpudirect.py 2>&1 | tee "$out/tests.txt" | tail -15 ;;
    n1|n2|n4)  # CuPy buffers, GPUDirect on and off, NCCL, on the one GPU
      sweep "${phase#n}" --buffer cupy --gpudirect both --collectives allreduce,bcast,allgather,reduce_scatter \
        --algorithms library,ring,rabenseifner --sizes 8,1K,64K,1M,16M,64M --max-time 0.3 ;;
    kernels)  # the reduction kernel against a device-to-device copy (target: busbw ≥ 80% of the copy's)
      sweep 1 --buffer cupy --collectives kernels -b 1M -e 1G -f 4
      sweep 1 --buffer numba --collectives kernels -b 1M -e 256M -f 4
      "$py" -m fabricprobe report "$f" --collectives reduce_local,copy_local > "$out/kernels.txt" 2>&1 || true ;;
    *) echo "unknown phase $phase"; exit 2 ;;
  esac
done
"$py" -m fabricprobe report "$f" > "$out/report.txt" 2>&1 || true
